"""Scoring rules: counted tasks, the latest scored result, unscored and unverified trials, unpriced cost."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection  # noqa: F401 - used by the skipif string

from apps.results import queries
from apps.results.queries import Filters, repository_tasks
from apps.runs.models import TrialStatus
from apps.tasks.models import TaskState
from tests.results.factories import Lab, make_repository, make_task

BASE = "gpt-5|terminus-2|medium"


def results(repo, **filters):  # type: ignore[no-untyped-def]
    return queries.configuration_results(counted=repository_tasks(repo), filters=Filters(**filters))


def test_latest_scored_result_wins(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task, reward=0.0, cost="0.50")
    lab.trial(task, reward=1.0, cost="0.20")  # newer: counts
    r = results(repo).get(BASE)
    assert r is not None
    assert (r.tasks, r.passed, r.total_cost_usd) == (1, 1, Decimal("0.2"))


def test_latest_means_finished_last_not_created_last(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    newer = lab.trial(task, reward=1.0)
    older = lab.trial(task, reward=0.0)
    older.finished_at = newer.finished_at.replace(year=2025)
    older.save()
    r = results(repo).get(BASE)
    assert r is not None and r.passed == 1


def test_unscored_trials_are_ignored(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task, reward=1.0)
    lab.trial(task, reward=0.0, status=TrialStatus.FAILED)
    lab.trial(task, reward=None)  # completed without a reward
    lab.trial(task, reward=0.0, status=TrialStatus.CANCELLED)
    r = results(repo).get(BASE)
    assert r is not None and (r.tasks, r.passed) == (1, 1)


def test_unverified_model_is_not_counted(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task, reward=1.0, verified=False)
    assert results(repo).get(BASE) is None
    lab.trial(task, reward=0.0)
    lab.trial(task, reward=1.0, verified=False)  # newer but unverified: the scored failure still counts
    r = results(repo).get(BASE)
    assert r is not None and (r.tasks, r.passed) == (1, 0)


def test_unpriced_cost_makes_cost_incomplete_never_zero(lab, repo) -> None:  # type: ignore[no-untyped-def]
    t1, t2 = make_task(repository=repo), make_task(repository=repo)
    lab.trial(t1, reward=1.0, cost="0.30")
    lab.trial(t2, reward=1.0, cost=None)  # no cost at all: not scored, and it makes the cost incomplete
    r = results(repo).get(BASE)
    assert r is not None
    assert (r.tasks, r.passed, r.unpriced_tasks) == (1, 1, 1)
    assert r.cost_complete is False
    assert r.total_cost_usd is None and r.cost_per_task_usd is None
    assert r.known_cost_usd == Decimal("0.3")
    assert r.on_frontier is False


def test_a_cost_marked_incomplete_is_unpriced_even_with_a_partial_amount(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task, reward=1.0, cost="0.05", cost_complete=False)
    r = results(repo).get(BASE)
    assert r is not None and (r.tasks, r.unpriced_tasks, r.total_cost_usd) == (0, 1, None)


def test_newer_unpriced_trial_keeps_older_score_but_marks_cost_incomplete(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task, reward=0.0, cost="0.40")
    lab.trial(task, reward=1.0, cost=None)
    r = results(repo).get(BASE)
    assert r is not None
    assert (r.tasks, r.passed, r.unpriced_tasks, r.cost_complete) == (1, 0, 1, False)


def test_an_older_unpriced_trial_does_not_matter(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task, reward=0.0, cost=None)
    lab.trial(task, reward=1.0, cost="0.40")
    r = results(repo).get(BASE)
    assert r is not None and (r.unpriced_tasks, r.total_cost_usd) == (0, Decimal("0.4"))


def test_only_counted_tasks_count(lab, workspace, repo) -> None:  # type: ignore[no-untyped-def]
    approved = make_task(repository=repo)
    in_review = make_task(repository=repo, state=TaskState.AWAITING_APPROVAL)
    rejected = make_task(repository=repo, state=TaskState.REJECTED, reason="no")
    other_repo_task = make_task(repository=make_repository(workspace=workspace))
    for task in (approved, in_review, rejected, other_repo_task):
        lab.trial(task, reward=1.0)
    res = results(repo)
    assert res.counted_tasks == 1
    r = res.get(BASE)
    assert r is not None and r.tasks == 1


def test_other_workspaces_trials_never_count(lab, repo, django_user_model) -> None:  # type: ignore[no-untyped-def]
    from tests.factories import make_workspace

    task = make_task(repository=repo)
    other = Lab(workspace=make_workspace())
    other.trial(task, reward=1.0)  # a foreign trial pointing at our task
    assert results(repo).configurations == []


def test_configurations_are_model_agent_thinking_and_configuration_key(lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task, model="gpt-5")
    lab.trial(task, model="gpt-5", thinking="high")
    lab.trial(task, model="gpt-5", agent="claude-code")
    lab.trial(task, model="gpt-5", key="harness:abc", harness_id="7")
    lab.trial(task, model="claude-sonnet")
    ids = {c.id for c in results(repo).configurations}
    assert ids == {
        BASE,
        "gpt-5|terminus-2|high",
        "gpt-5|claude-code|medium",
        "gpt-5|terminus-2|medium|harness:abc",
        "claude-sonnet|terminus-2|medium",
    }
    assert {c.id for c in results(repo, harness="7").configurations} == {"gpt-5|terminus-2|medium|harness:abc"}
    assert {c.id for c in results(repo, harness="none", model="gpt-5", agent="terminus-2").configurations} == {
        BASE,
        "gpt-5|terminus-2|high",
    }
    assert [c.id for c in results(repo, configuration="gpt-5|terminus-2|high").configurations] == [
        "gpt-5|terminus-2|high"
    ]
    assert results(repo, configuration="nonsense").configurations == []


def test_accuracy_interval_tokens_time_and_frontier(lab, repo) -> None:  # type: ignore[no-untyped-def]
    tasks = [make_task(repository=repo) for _ in range(4)]
    for i, task in enumerate(tasks):
        lab.trial(task, model="cheap", reward=1.0 if i < 2 else 0.0, cost="0.01", seconds=30, tokens=100)
        lab.trial(task, model="strong", reward=1.0 if i < 3 else 0.0, cost="0.50")
        lab.trial(task, model="waste", reward=1.0 if i < 1 else 0.0, cost="0.90")
    res = results(repo)
    cheap = res.get("cheap|terminus-2|medium")
    assert cheap is not None
    assert cheap.accuracy == 0.5
    assert cheap.interval == pytest.approx((0.1500, 0.8500), abs=1e-4)
    assert cheap.cost_per_task_usd == Decimal("0.01")
    assert cheap.tokens.input == 400 and cheap.tokens.output == 40
    assert cheap.agent_seconds == 120 and cheap.seconds_per_task == 30
    assert set(res.frontier) == {"cheap|terminus-2|medium", "strong|terminus-2|medium"}
    assert [c.model for c in res.configurations] == ["strong", "cheap", "waste"]


def test_paired_comparison_on_shared_tasks(lab, repo) -> None:  # type: ignore[no-untyped-def]
    tasks = [make_task(repository=repo) for _ in range(12)]
    # a passes 10 where b fails, b passes 1 where a fails, both pass 1; one task only a has.
    for i, task in enumerate(tasks[:12]):
        a_pass, b_pass = (i < 10 or i == 11), (i == 10 or i == 11)
        lab.trial(task, model="a", reward=1.0 if a_pass else 0.0)
        lab.trial(task, model="b", reward=1.0 if b_pass else 0.0)
    extra = make_task(repository=repo)
    lab.trial(extra, model="a", reward=1.0)
    r = queries.paired(counted=repository_tasks(repo), a="a|terminus-2|medium", b="b|terminus-2|medium")
    assert (r.tasks, r.wins, r.losses, r.ties_passed, r.ties_failed) == (12, 10, 1, 1, 0)
    assert r.p_value == pytest.approx(0.01171875)  # 2 * (1 + 11) / 2**11


def test_reliability_counts_every_scored_attempt_and_flags_flaky_tasks(lab, repo) -> None:  # type: ignore[no-untyped-def]
    steady, flaky = make_task(repository=repo), make_task(repository=repo)
    for _ in range(3):
        lab.trial(steady, reward=1.0)
    for reward in (1.0, 0.0, 1.0, 0.0):
        lab.trial(flaky, reward=reward)
    lab.trial(flaky, reward=1.0, verified=False)  # not scored
    rel = queries.reliability(counted=repository_tasks(repo), configuration=BASE)
    by_task = {t.task_id: t for t in rel.tasks}
    assert (by_task[steady.pk].attempts, by_task[steady.pk].pass_rate, by_task[steady.pk].flaky) == (3, 1.0, False)
    assert (by_task[flaky.pk].attempts, by_task[flaky.pk].pass_rate, by_task[flaky.pk].flaky) == (4, 0.5, True)
    assert (rel.repeated_tasks, rel.flaky_tasks, rel.mean_pass_rate) == (2, 1, 0.75)


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the change trigger is PostgreSQL's")
def test_results_rebuild_changed_tasks_then_read_in_two_queries(lab, repo, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    tasks = [make_task(repository=repo) for _ in range(3)]
    for task in tasks:
        lab.trial(task, model="a")
        lab.trial(task, model="b")
    assert queries.refresh(repo.workspace_id) == 3  # the trigger marked every task with new trials
    with django_assert_num_queries(2):  # nothing changed: the check and one aggregate, whatever the trial count
        res = results(repo)
    assert len(res.configurations) == 2
    trial = lab.trial(tasks[0], model="a", reward=0.0)  # a newer result on one task
    assert queries.refresh(repo.workspace_id) == 1
    assert results(repo).get("a|terminus-2|medium").passed == 2
    trial.heartbeat_at = trial.finished_at
    trial.save(update_fields=["heartbeat_at"])  # not a scoring column: nothing to rebuild
    assert queries.refresh(repo.workspace_id) == 0
    trial.delete()
    assert results(repo).get("a|terminus-2|medium").passed == 3
