"""Task review pages: the queue, the task page (diffs, gates with logs), approve/reject with a note, errors inline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Workspace
from apps.tasks import storage
from apps.tasks.models import GateRun, GateStatus, Task, TaskState, TaskVersion
from tests.factories import make_workspace

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
GOLD = (
    "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,4 @@\n"
    " def add(a, b):\n     return a + b\n+def mul(a, b):\n+    return a * b\n"
)
TESTS = "--- /dev/null\n+++ b/tests/test_mul.py\n@@ -0,0 +1,2 @@\n+def test_mul():\n+    assert mul(2, 3) == 6\n"


@pytest.fixture(autouse=True)
def _media(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def awaiting(workspace: Workspace, title: str = "Add multiply", **kw: Any) -> Task:
    """A verified task awaiting approval, with its files on disk and two gate runs."""
    task = Task.objects.create(
        workspace=workspace,
        source_path="/nonexistent",
        source_repository="acme/calc",
        pr_number=kw.pop("pr_number", 7),
        base_sha="a" * 40,
        head_sha="b" * 40,
        title=title,
        tier="easy",
        state=kw.pop("state", TaskState.AWAITING_APPROVAL),
        reason=kw.pop("reason", "verified by all five gates"),
    )
    digest, _ = storage.store(
        {
            "instruction.md": b"Add a `mul(a, b)` function that multiplies two numbers.\n",
            "gold.patch": GOLD.encode(),
            "test.patch": TESTS.encode(),
            "tests/test.sh": f"#!/bin/bash\n# {title}\n".encode(),
        }
    )
    version = TaskVersion.objects.create(
        task=task, content_hash=digest, fail_to_pass=["tests/test_mul.py::test_mul"], verified_at=timezone.now()
    )
    Task.objects.filter(pk=task.pk).update(version=version)
    GateRun.objects.create(task=task, version=version, gate="build", status=GateStatus.PASSED, log="STEP 1/3: FROM")
    GateRun.objects.create(
        task=task, version=version, gate="oracle", status=GateStatus.PASSED, reward=1.0, log="SB-REWARD 1.0"
    )
    task.refresh_from_db()
    return task


def test_queue_is_the_default_and_lists_tasks_awaiting_approval(client: Client, workspace: Workspace) -> None:
    first = awaiting(workspace, "Add multiply")
    awaiting(workspace, "Old one", state=TaskState.REJECTED, reason="oracle gate: failed")
    r = client.get(reverse("tasks:list", args=[workspace.slug]))
    assert r.status_code == 200 and r.templates[0].name == "tasks/task_list.html"
    page = r.content.decode()
    assert "Add multiply" in page and "Old one" not in page
    assert reverse("tasks:approve", args=[workspace.slug, first.pk]) in page
    assert "js/review.js" in page  # keyboard shortcuts
    r = client.get(reverse("tasks:list", args=[workspace.slug]), {"state": "rejected"}, **HX)
    assert r.templates[0].name == "tasks/partials/task_section.html" and b"<html" not in r.content
    assert b"Old one" in r.content and b"Add multiply" not in r.content


def test_empty_queue_says_where_tasks_come_from(client: Client, workspace: Workspace) -> None:
    page = client.get(reverse("tasks:list", args=[workspace.slug])).content.decode()
    assert "Nothing awaits your approval" in page and reverse("repositories:list", args=[workspace.slug]) in page


def test_task_page_shows_instruction_highlighted_diffs_and_gate_logs(client: Client, workspace: Workspace) -> None:
    task = awaiting(workspace)
    r = client.get(reverse("tasks:detail", args=[workspace.slug, task.pk]))
    assert r.status_code == 200 and r.templates[0].name == "tasks/task_detail.html"
    page = r.content.decode()
    assert "Add a `mul(a, b)` function" in page
    # Pygments marks inserted lines; the diff text is escaped inside its spans.
    assert '<div class="diff"><pre>' in page and '<span class="gi">+def mul(a, b):</span>' in page
    assert '<span class="gi">+    assert mul(2, 3) == 6</span>' in page
    assert "tests/test_mul.py::test_mul" in page
    assert "SB-REWARD 1.0" in page and "Log of oracle #1" in page
    assert "No automatic reviewer has reviewed this task" in page


def test_approve_with_a_note_goes_to_the_next_task_in_the_queue(client: Client, workspace: Workspace) -> None:
    first = awaiting(workspace, "First")
    second = awaiting(workspace, "Second")
    page = client.get(reverse("tasks:detail", args=[workspace.slug, first.pk])).content.decode()
    assert f'href="{reverse("tasks:detail", args=[workspace.slug, second.pk])}" data-key="j"' in page
    r = client.post(reverse("tasks:approve", args=[workspace.slug, first.pk]), {"note": "clean task"})
    assert r.status_code == 302 and r["Location"] == reverse("tasks:detail", args=[workspace.slug, second.pk])
    first.refresh_from_db()
    assert first.state == TaskState.APPROVED and first.decision_note == "clean task" and first.decided_by is not None
    r = client.post(reverse("tasks:approve", args=[workspace.slug, second.pk]), {"note": ""}, **HX)
    assert r.status_code == 200 and r["HX-Redirect"] == reverse("tasks:list", args=[workspace.slug])


def test_reject_without_a_note_is_an_inline_error(client: Client, workspace: Workspace) -> None:
    task = awaiting(workspace)
    url = reverse("tasks:reject", args=[workspace.slug, task.pk])
    r = client.post(url, {"note": ""}, **HX)
    assert r.status_code == 200 and r.templates[0].name == "tasks/partials/decision.html"
    assert b"<html" not in r.content and "a rejection needs a note" in r.content.decode()
    r = client.post(url, {"note": "  "})
    assert r.status_code == 200 and b"<html" in r.content and "a rejection needs a note" in r.content.decode()
    r = client.post(url, {"note": "tests pin internals"})
    task.refresh_from_db()
    assert r.status_code == 302 and task.state == TaskState.REJECTED
    assert task.reason == "rejected by a person: tests pin internals"


def test_approving_twice_is_an_inline_conflict(client: Client, workspace: Workspace) -> None:
    task = awaiting(workspace, state=TaskState.APPROVED, reason="approved")
    r = client.post(reverse("tasks:approve", args=[workspace.slug, task.pk]), {"note": ""}, **HX)
    assert r.status_code == 200 and "only a task awaiting approval can be approved" in r.content.decode()


def test_queue_approve_returns_to_the_queue_and_refuses_outside_next(client: Client, workspace: Workspace) -> None:
    task = awaiting(workspace)
    queue = reverse("tasks:list", args=[workspace.slug])
    r = client.post(reverse("tasks:approve", args=[workspace.slug, task.pk]), {"next": "https://evil.example/"})
    assert r["Location"] == queue  # not the outside URL: the queue (nothing else awaits)
    other = awaiting(workspace, "Second")
    r = client.post(reverse("tasks:approve", args=[workspace.slug, other.pk]), {"next": f"{queue}?state="})
    assert r["Location"] == f"{queue}?state="


def test_task_of_another_workspace_is_404(client: Client, workspace: Workspace) -> None:
    task = awaiting(make_workspace())
    assert client.get(reverse("tasks:detail", args=[workspace.slug, task.pk])).status_code == 404
    assert client.post(reverse("tasks:approve", args=[workspace.slug, task.pk])).status_code == 404


def test_queue_runs_a_fixed_number_of_queries(
    client: Client, workspace: Workspace, django_assert_num_queries: Any
) -> None:
    for i in range(4):
        awaiting(workspace, f"Task {i}")
    url = reverse("tasks:list", args=[workspace.slug])
    client.get(url)
    with django_assert_num_queries(4):  # session, user, membership, the tasks (with version, repository, batch)
        assert client.get(url).status_code == 200


def test_task_page_shows_the_reviewers_rounds(client: Client, workspace: Workspace) -> None:
    from apps.authoring.models import AuthoringRound, AuthoringSettings, ReviewRound

    task = awaiting(workspace)
    settings = AuthoringSettings.objects.create(
        workspace=workspace, author_model="gpt-5", reviewer_model="claude-sonnet-4-5"
    )
    first = AuthoringRound.objects.create(
        task=task, settings=settings, number=1, state="submitted", agent="terminus-2", model="gpt-5", verify_calls=3
    )
    ReviewRound.objects.create(
        round=first,
        model="claude-sonnet-4-5",
        verdict="send_back",
        notes="The tests pin a private helper.",
        suggestions=["Test through mul() only"],
    )
    AuthoringRound.objects.create(task=task, settings=settings, number=2, agent="terminus-2", model="gpt-5")
    page = client.get(reverse("tasks:detail", args=[workspace.slug, task.pk])).content.decode()
    assert "No automatic reviewer" not in page
    assert "Send back" in page and "The tests pin a private helper." in page and "Test through mul() only" in page
    assert "Authoring…" in page  # round 2 has no review yet
