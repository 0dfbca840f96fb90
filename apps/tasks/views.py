"""Task review pages: the queue of tasks awaiting approval and a task page to approve or reject with a note."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from apps.accounts.models import Workspace
from apps.accounts.pages import WorkspaceRequest, current_user, go_to, workspace_page
from apps.tasks import forms, queries, services
from apps.tasks.models import Task, TaskState
from selfbench.errors import DomainError

_DIFF_FORMAT = HtmlFormatter(cssclass="diff")


def _diff_html(text: str) -> SafeString:
    # Pygments escapes the text it highlights; the result is markup we made.
    return mark_safe(highlight(text, DiffLexer(), _DIFF_FORMAT))  # noqa: S308


def _version_text(task: Task, name: str) -> str:
    path = task.version.path / name if task.version is not None else None
    return path.read_text(errors="replace") if path is not None and path.is_file() else ""


def _queue(workspace: Workspace) -> list[int]:
    """Ids of the tasks awaiting approval, oldest first: the review queue's order."""
    rows = queries.task_list(workspace=workspace, state=TaskState.AWAITING_APPROVAL).order_by("created_at", "pk")
    return list(rows.values_list("pk", flat=True))


def _neighbours(workspace: Workspace, task_id: int) -> tuple[int | None, int | None]:
    queue = _queue(workspace)
    if task_id not in queue:
        return None, (queue[0] if queue else None)
    i = queue.index(task_id)
    return (queue[i - 1] if i > 0 else None), (queue[i + 1] if i + 1 < len(queue) else None)


def _task(request: WorkspaceRequest, task_id: int) -> Task:
    task = queries.task_detail(workspace=request.workspace, task_id=task_id)
    if task is None:
        raise Http404("no such task")
    return task


@require_GET
@vary_on_headers("HX-Request")
@workspace_page
def task_list(request: WorkspaceRequest) -> HttpResponse:
    """Tasks by state; with no filter this is the review queue (awaiting approval, oldest first)."""
    form = forms.TaskFilterForm(request.GET or {"state": TaskState.AWAITING_APPROVAL})
    f = form.cleaned_data if form.is_valid() else {}
    rows = queries.task_list(workspace=request.workspace, state=f.get("state") or None, tier=f.get("tier") or None)
    context = {"tasks": rows.order_by("created_at", "pk")[:200], "form": form, "state": f.get("state", "")}
    context["states"] = TaskState.choices
    template = "tasks/partials/task_section.html" if request.htmx else "tasks/task_list.html"
    return render(request, template, context)


def _detail_page(request: WorkspaceRequest, task: Task, **forms_: forms.DecisionForm) -> HttpResponse:
    previous, following = _neighbours(request.workspace, task.pk)
    context: dict[str, Any] = {
        "task": task,
        "instruction": _version_text(task, "instruction.md"),
        "gold_diff": _diff_html(_version_text(task, "gold.patch")),
        "tests_diff": _diff_html(_version_text(task, "test.patch")),
        "gate_runs": task.gate_runs.all(),
        "previous": previous,
        "following": following,
        "approve_form": forms_.get("approve_form") or forms.DecisionForm(auto_id="approve-%s"),
        "reject_form": forms_.get("reject_form") or forms.DecisionForm(auto_id="reject-%s"),
    }
    return render(request, "tasks/task_detail.html", context)


@require_GET
@workspace_page
def task_detail(request: WorkspaceRequest, task_id: int) -> HttpResponse:
    return _detail_page(request, _task(request, task_id))


def _after_decision(request: WorkspaceRequest, task: Task, asked: str) -> str:
    """Where a decision leads: the page it was made from if given, else the next task in the queue, else the queue."""
    if asked and url_has_allowed_host_and_scheme(asked, allowed_hosts={request.get_host()}):
        return asked
    _, following = _neighbours(request.workspace, task.pk)
    if following is not None:
        return reverse("tasks:detail", args=[request.workspace.slug, following])
    return reverse("tasks:list", args=[request.workspace.slug])


def _decide(request: WorkspaceRequest, task_id: int, action: str, decide: Callable[..., Task]) -> HttpResponse:
    task = _task(request, task_id)
    form = forms.DecisionForm(request.POST, auto_id=f"{action}-%s")
    if form.is_valid():
        after = _after_decision(request, task, form.cleaned_data["next"])  # before the task leaves the queue
        try:
            decide(task=task, user=current_user(request), note=form.cleaned_data["note"])
        except DomainError as exc:
            form.add_error("note", exc.message)
        else:
            return go_to(request, after)
    if request.htmx:
        context = {
            "task": task,
            "approve_form": forms.DecisionForm(auto_id="approve-%s"),
            "reject_form": forms.DecisionForm(auto_id="reject-%s"),
            f"{action}_form": form,
        }
        return render(request, "tasks/partials/decision.html", context)
    return _detail_page(request, task, **{f"{action}_form": form})


@require_POST
@workspace_page
def task_approve(request: WorkspaceRequest, task_id: int) -> HttpResponse:
    return _decide(request, task_id, "approve", services.task_approve)


@require_POST
@workspace_page
def task_reject(request: WorkspaceRequest, task_id: int) -> HttpResponse:
    return _decide(request, task_id, "reject", services.task_reject)
