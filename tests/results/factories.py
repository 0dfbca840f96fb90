"""Rows for results tests: repositories, approved tasks and finished trials, written straight to the tables."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from apps.accounts.models import Workspace
from apps.repositories.models import Repository, RepositoryKind
from apps.runs.models import Comparison, Evaluation, Trial, TrialStatus
from apps.tasks.models import Task, TaskState, TaskVersion

_seq = itertools.count(1)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_repository(*, workspace: Workspace, full_name: str | None = None, private: bool = False) -> Repository:
    n = next(_seq)
    return Repository.objects.create(
        workspace=workspace,
        kind=RepositoryKind.GITHUB,
        full_name=full_name or f"acme/repo{n}",
        github_id=1000 + n,
        location=f"https://github.com/acme/repo{n}.git",
        is_private=private,
    )


def make_task(*, repository: Repository, state: str = TaskState.APPROVED, **overrides: Any) -> Task:
    n = next(_seq)
    task = Task.objects.create(
        workspace=repository.workspace,
        repository=repository,
        source_path="/nonexistent",
        source_repository=repository.full_name,
        pr_number=n,
        base_sha="a" * 40,
        head_sha="b" * 40,
        title=overrides.pop("title", f"Fix bug {n}"),
        tier="easy",
        state=state,
        reason=overrides.pop("reason", "approved" if state == TaskState.APPROVED else ""),
        **overrides,
    )
    version = TaskVersion.objects.create(task=task, content_hash=f"{n:064x}", verified_at=timezone.now())
    Task.objects.filter(pk=task.pk).update(version=version)
    task.refresh_from_db()
    return task


@dataclass
class Lab:
    """Makes evaluations per (model, thinking) and trials on them, with increasing finish times."""

    workspace: Workspace
    _evaluations: dict[tuple[str, str, int], Evaluation] = field(default_factory=dict)
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def evaluation(self, model: str, thinking: str = "medium", run: int = 0) -> Evaluation:
        key = (model, thinking, run)
        if key not in self._evaluations:
            comparison = Comparison.objects.create(
                workspace=self.workspace, client_id=uuid.uuid4(), body={}, body_hash="x", sandbox="podman"
            )
            self._evaluations[key] = Evaluation.objects.create(
                workspace=self.workspace,
                comparison=comparison,
                position=0,
                catalog_id=model,
                managed=True,
                thinking=thinking,
            )
        return self._evaluations[key]

    def trial(
        self,
        task: Task,
        *,
        model: str = "gpt-5",
        reward: float | None = 1.0,
        cost: str | None = "0.10",
        cost_complete: bool | None = None,
        verified: bool = True,
        status: str = TrialStatus.COMPLETED,
        agent: str = "terminus-2",
        thinking: str = "medium",
        key: str = "baseline",
        harness_id: str = "",
        environment_id: str = "",
        run: int | None = None,
        seconds: int = 60,
        tokens: int = 1000,
    ) -> Trial:
        tick = next(self._clock)
        finished = T0 + timedelta(minutes=tick)
        evaluation = self.evaluation(model, thinking, tick if run is None else run)
        assert task.version is not None
        return Trial.objects.create(
            workspace=self.workspace,
            evaluation=evaluation,
            task=task,
            task_version=task.version,
            task_dir="/nonexistent",
            agent=agent,
            harness_id=harness_id,
            environment_id=environment_id,
            configuration_key=key,
            configuration_label="Baseline" if key == "baseline" else key,
            sandbox="podman",
            status=status,
            reward=reward,
            reward_valid=reward is not None,
            started_at=finished - timedelta(seconds=seconds),
            finished_at=finished,
            input_tokens=tokens,
            output_tokens=tokens // 10,
            cost_usd=None if cost is None else Decimal(cost),
            cost_complete=(cost is not None) if cost_complete is None else cost_complete,
            model_verified=verified,
        )
