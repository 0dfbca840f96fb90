// Keyboard shortcuts for reviewing tasks. Queue: j/k select a row, o/Enter open it, a approve it, r open it to
// write a rejection note. Task page: j/k next/previous task in the queue, a approve, r focus the rejection note.
// Every shortcut presses a real link or form that also works with the mouse and without JavaScript.
(function () {
  "use strict";
  let selected = -1;

  function rows() { return Array.from(document.querySelectorAll("[data-queue] tr[data-row]")); }

  function select(i) {
    const all = rows();
    if (!all.length) return;
    selected = Math.max(0, Math.min(all.length - 1, i));
    all.forEach((row, n) => row.classList.toggle("selected", n === selected));
    all[selected].setAttribute("aria-selected", "true");
    all[selected].scrollIntoView({ block: "nearest" });
  }

  function submit(form) {
    if (form) form.requestSubmit ? form.requestSubmit() : form.submit();
  }

  document.addEventListener("keydown", (event) => {
    if (event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) return;
    const key = event.key;
    const queue = rows();
    if (queue.length) {
      const row = queue[selected];
      if (key === "j") select(selected + 1);
      else if (key === "k") select(selected - 1);
      else if ((key === "o" || key === "Enter") && row) window.location = row.dataset.href;
      else if (key === "a" && row) submit(row.querySelector("form[data-approve]"));
      else if (key === "r" && row) window.location = row.dataset.href + "#reject";
      else return;
      event.preventDefault();
      return;
    }
    const target = document.querySelector(`[data-key="${key}"]`);
    if (key === "r") {
      const note = document.querySelector("#reject textarea");
      if (!note) return;
      note.focus();
    } else if (target instanceof HTMLAnchorElement) {
      target.click();
    } else if (target instanceof HTMLFormElement) {
      submit(target);
    } else {
      return;
    }
    event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", () => {
    if (rows().length) select(0);
    if (window.location.hash === "#reject") document.querySelector("#reject textarea")?.focus();
  });
})();
