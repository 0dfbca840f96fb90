// Accuracy against cost per task, drawn with Chart.js (static/vendor) from the JSON the page embeds.
// Frontier points are joined by a line in order of cost. Re-drawn after htmx swaps in new results.
(function () {
  "use strict";
  let chart = null;

  function draw() {
    const canvas = document.getElementById("accuracy-cost");
    const source = document.getElementById("chart-data");
    if (chart) { chart.destroy(); chart = null; }
    if (!canvas || !source || typeof Chart === "undefined") return;
    const data = JSON.parse(source.textContent);
    const point = (p) => ({ x: p.cost, y: p.accuracy, name: p.name });
    const frontier = data.points.filter((p) => p.frontier).sort((a, b) => a.cost - b.cost).map(point);
    chart = new Chart(canvas, {
      type: "scatter",
      data: {
        datasets: [
          { label: "Pareto frontier", data: frontier, showLine: true, borderColor: "#157f3b",
            backgroundColor: "#157f3b", pointRadius: 6, pointHoverRadius: 8, order: 1 },
          { label: "Configurations", data: data.points.filter((p) => !p.frontier).map(point),
            backgroundColor: "#2454d6", pointRadius: 5, pointHoverRadius: 7, order: 2 },
        ],
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { title: { display: true, text: "Cost per task (USD)" }, beginAtZero: true },
          y: { title: { display: true, text: "Accuracy (%)" }, min: 0, max: 100 },
        },
        plugins: {
          tooltip: { callbacks: { label: (c) => `${c.raw.name}: ${c.raw.y}% at $${c.raw.x.toFixed(4)}` } },
        },
      },
    });
    canvas.dataset.points = String(data.points.length);
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:afterSettle", draw);
})();
