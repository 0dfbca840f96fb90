"""Results: the one place scores are computed (the API, the pages, releases and the bench all call these).

Rules (seeds/how-it-works.md, Results):
- Only **counted tasks** count: a repository's approved tasks (`repository_tasks`), or — later — a benchmark's or a
  workspace eval's tasks (build a `CountedTasks` over them; a workspace eval's is `releasable=False`).
- A **configuration** is model (`Evaluation.catalog_id`) × thinking × agent × `Trial.configuration_key` (the baseline,
  a saved harness, a repo ablation, or both). Its id is `model|agent|thinking` for the baseline (the public
  `model|harness|reasoning` id) and `model|agent|thinking|<configuration key>` otherwise.
- A trial is **graded** when it completed, its model was verified and it has a reward; it is **scored** when it is
  graded and also has a complete cost (`cost_complete` and a `cost_usd`). Each configuration's latest scored trial
  on each counted task counts (latest = `finished_at`, then id).
- **Cost is never silently zero.** When a configuration's latest graded trial on a task has no complete cost (an
  *unpriced task*), that task is not scored for it; if an older scored trial exists that one still counts for
  accuracy, but the configuration's cost becomes incomplete: `cost_complete=False`, `total_cost_usd` and
  `cost_per_task_usd` are None (shown as "incomplete", never 0), `unpriced_tasks` says how many, and it is never on
  the Pareto frontier.

How it is computed, in the database (never a Python loop over trials):
- The rule itself is one window query over the trials (partition configuration × task, newest first) that keeps,
  per configuration × task, the latest scored trial and whether the latest graded one is unpriced. Its outcome is
  cached in `LatestResult` rows, rebuilt only for tasks whose trials changed: a trigger on runs_trial (migration
  0003) marks such tasks in `DirtyTask`, and `refresh()` rebuilds them before every read.
- A read is then one aggregate over `LatestResult` joined with the counted tasks: two queries when nothing changed
  (the change check and the aggregate), whatever the number of trials.

HTML views: call `configuration_results(counted=…, filters=…)` and render `Results.configurations`; the fields are
documented on `ConfigurationResult`. Reads write only the `LatestResult` cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet

from apps.repositories.models import Repository
from apps.results import stats
from apps.results.models import DirtyTask, LatestResult, Release
from apps.runs.configurations import BASELINE_KEY
from apps.runs.models import Evaluation, Trial, TrialStatus
from apps.tasks.models import Task, TaskState

# --- counted tasks --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CountedTasks:
    """The tasks a set of results counts. `tasks` is any Task queryset of one workspace; `releasable` is False for
    collections that must never go public (workspace evals)."""

    workspace_id: int
    kind: str  # "repository", "tasks" (an explicit list, e.g. a release's task set), later "benchmark" / "eval"
    tasks: QuerySet[Task]
    releasable: bool
    repository: Repository | None = None

    def sql(self) -> tuple[str, tuple[Any, ...]]:
        """`SELECT id FROM …` for the counted tasks, to embed as a subquery."""
        sql, params = self.tasks.order_by().values("pk").query.sql_with_params()
        return sql, tuple(params)


def repository_tasks(repository: Repository) -> CountedTasks:
    """A repository's counted tasks: the ones a person approved (a later rejection takes a task back out)."""
    return CountedTasks(
        workspace_id=repository.workspace_id,
        kind="repository",
        tasks=Task.objects.filter(repository=repository, state=TaskState.APPROVED),
        releasable=True,
        repository=repository,
    )


def task_set(counted: CountedTasks, task_ids: list[int]) -> CountedTasks:
    """The same counted tasks narrowed to these ids (a release's shared task set)."""
    return CountedTasks(
        workspace_id=counted.workspace_id,
        kind=counted.kind,
        tasks=counted.tasks.filter(pk__in=task_ids),
        releasable=counted.releasable,
        repository=counted.repository,
    )


# --- configurations and filters -------------------------------------------------------------------------------------


def configuration_id(*, model: str, agent: str, thinking: str, key: str) -> str:
    base = f"{model}|{agent}|{thinking}"
    return base if key == BASELINE_KEY else f"{base}|{key}"


def parse_configuration_id(value: str) -> tuple[str, str, str, str] | None:
    """(model, agent, thinking, configuration key) of a configuration id, or None when it is not one."""
    parts = value.split("|", 3)
    if len(parts) < 3 or not all(parts[:3]):
        return None
    return parts[0], parts[1], parts[2], parts[3] if len(parts) == 4 and parts[3] else BASELINE_KEY


@dataclass(frozen=True)
class Filters:
    """Narrow results to one configuration, model, agent, saved harness or environment (repo ablation).
    `harness="none"` / `environment="none"` keep trials without one; `baseline_only` keeps the baseline."""

    configuration: str | None = None
    model: str | None = None
    agent: str | None = None
    harness: str | None = None
    environment: str | None = None
    baseline_only: bool = False

    def sql(self) -> tuple[str, list[Any]]:
        """` AND …` conditions on results_latestresult's columns."""
        where: list[str] = []
        params: list[Any] = []
        if self.configuration:
            parsed = parse_configuration_id(self.configuration)
            if parsed is None:
                return " AND 1 = 0", []
            where.append("l.model = %s AND l.agent = %s AND l.thinking = %s AND l.configuration_key = %s")
            params.extend(parsed)
        for column, value in (("l.model", self.model), ("l.agent", self.agent)):
            if value:
                where.append(f"{column} = %s")
                params.append(value)
        for column, value in (("l.harness_id", self.harness), ("l.environment_id", self.environment)):
            if value:
                where.append(f"{column} = %s")
                params.append("" if value == "none" else value)
        if self.baseline_only:
            where.append("l.configuration_key = %s")
            params.append(BASELINE_KEY)
        return "".join(f" AND {w}" for w in where), params


# --- the scoring rule, cached per task -------------------------------------------------------------------------------

_TRIAL = Trial._meta.db_table
_EVALUATION = Evaluation._meta.db_table
_LATEST = LatestResult._meta.db_table
_DIRTY = DirtyTask._meta.db_table
_CHUNK = 5000
_ANALYZE_AFTER = 1000


def _seconds_sql() -> str:
    if connection.vendor == "postgresql":
        return "EXTRACT(EPOCH FROM (t.finished_at - t.started_at))"
    return "(julianday(t.finished_at) - julianday(t.started_at)) * 86400.0"


def _rebuild_sql(n_tasks: int) -> str:
    """INSERT the scoring rule's outcome for some tasks of a workspace: one row per configuration × task with its
    latest scored trial (`chosen`) and whether its latest graded trial is unpriced (`rn = 1 AND NOT priced`)."""
    marks = ", ".join(["%s"] * n_tasks)
    return f"""
        INSERT INTO {_LATEST} (workspace_id, model, thinking, agent, configuration_key, task_id, label, harness_id,
            environment_id, trial_id, passed, cost_usd, input_tokens, cached_input_tokens, cache_write_tokens,
            output_tokens, reasoning_tokens, seconds, unpriced)
        WITH graded AS (
            SELECT t.workspace_id, e.catalog_id AS model, e.thinking, t.agent, t.configuration_key AS ckey,
                   t.configuration_label AS label, t.harness_id, t.environment_id, t.task_id, t.id, t.finished_at,
                   t.reward, t.cost_usd, (t.cost_complete AND t.cost_usd IS NOT NULL) AS priced,
                   t.input_tokens, t.cached_input_tokens, t.cache_write_tokens, t.output_tokens, t.reasoning_tokens,
                   {_seconds_sql()} AS seconds
            FROM {_TRIAL} t JOIN {_EVALUATION} e ON e.id = t.evaluation_id
            WHERE t.workspace_id = %s AND t.task_id IN ({marks})
              AND t.status = %s AND t.model_verified AND t.reward IS NOT NULL
        ),
        ranked AS (
            SELECT g.*, row_number() OVER w AS rn, count(*) FILTER (WHERE g.priced) OVER w AS priced_rank
            FROM graded g
            WINDOW w AS (PARTITION BY model, thinking, agent, ckey, task_id
                         ORDER BY g.finished_at DESC NULLS LAST, g.id DESC)
        ),
        latest AS (
            SELECT r.*, (r.priced AND r.priced_rank = 1) AS chosen FROM ranked r
            WHERE r.rn = 1 OR (r.priced AND r.priced_rank = 1)
        )
        SELECT workspace_id, model, thinking, agent, ckey, task_id, max(label), max(harness_id), max(environment_id),
               max(id) FILTER (WHERE chosen),
               CAST(max(CASE WHEN reward >= 1 THEN 1 ELSE 0 END) FILTER (WHERE chosen) AS boolean),
               max(cost_usd) FILTER (WHERE chosen), max(input_tokens) FILTER (WHERE chosen),
               max(cached_input_tokens) FILTER (WHERE chosen), max(cache_write_tokens) FILTER (WHERE chosen),
               max(output_tokens) FILTER (WHERE chosen), max(reasoning_tokens) FILTER (WHERE chosen),
               max(seconds) FILTER (WHERE chosen),
               CAST(max(CASE WHEN rn = 1 AND NOT priced THEN 1 ELSE 0 END) AS boolean)
        FROM latest
        GROUP BY workspace_id, model, thinking, agent, ckey, task_id"""  # noqa: S608 - values are parameters


def refresh(workspace_id: int) -> int:
    """Rebuild the cached scoring rule (LatestResult) for the workspace's tasks whose trials changed (DirtyTask, kept
    by a trigger on runs_trial; without PostgreSQL every task is rebuilt). Returns how many tasks were rebuilt; one
    query when nothing changed."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT 1 FROM {_DIRTY} WHERE workspace_id = %s LIMIT 1", [workspace_id])  # noqa: S608
            if cursor.fetchone() is None:
                return 0
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            every = f"SELECT DISTINCT workspace_id, task_id FROM {_TRIAL} WHERE workspace_id = %s"  # noqa: S608
            mark = f"INSERT INTO {_DIRTY} (workspace_id, task_id) {every} ON CONFLICT DO NOTHING"
            cursor.execute(mark, [workspace_id])
        # Claim first, compute after: a trial that changes meanwhile marks its task dirty again.
        cursor.execute(f"DELETE FROM {_DIRTY} WHERE workspace_id = %s RETURNING task_id", [workspace_id])  # noqa: S608
        task_ids = sorted(row[0] for row in cursor.fetchall())
        for i in range(0, len(task_ids), _CHUNK):
            chunk = task_ids[i : i + _CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"DELETE FROM {_LATEST} WHERE workspace_id = %s AND task_id IN ({marks})",  # noqa: S608
                [workspace_id, *chunk],
            )
            cursor.execute(_rebuild_sql(len(chunk)), [workspace_id, *chunk, TrialStatus.COMPLETED])
        if len(task_ids) >= _ANALYZE_AFTER and connection.vendor == "postgresql":
            # A bulk rebuild changes the table's shape; fresh statistics keep the read a hash aggregate.
            cursor.execute(f"ANALYZE {_LATEST}")
    return len(task_ids)


@dataclass(frozen=True)
class Tokens:
    input: int = 0
    cached_input: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.cached_input + self.cache_write + self.output


@dataclass(frozen=True)
class ConfigurationResult:
    """One configuration's results over the counted tasks.

    - `tasks`: counted tasks it has a scored result on; `passed`: of those, reward 1.
    - `accuracy`: passed / tasks as a fraction in [0, 1] (None with no tasks); `interval`: its 95% Wilson interval.
    - `cost_complete`: False when `unpriced_tasks` > 0; then `total_cost_usd` / `cost_per_task_usd` are None, to be
      shown as "incomplete" (never 0). `known_cost_usd` is the sum over the scored tasks, for context only.
    - `tokens` and `agent_seconds` are sums over the scored tasks (`seconds_per_task` their mean).
    - `on_frontier`: on the Pareto frontier of accuracy against cost per task (never with incomplete cost).
    - `checksum`: changes whenever any counted result changes (release fingerprints use it).
    """

    id: str
    model: str
    thinking: str
    agent: str
    configuration_key: str
    label: str
    harness_id: str
    environment_id: str
    tasks: int
    passed: int
    unpriced_tasks: int
    known_cost_usd: Decimal
    tokens: Tokens
    agent_seconds: float
    checksum: str
    on_frontier: bool = False

    @property
    def is_baseline(self) -> bool:
        return self.configuration_key == BASELINE_KEY

    @property
    def accuracy(self) -> float | None:
        return self.passed / self.tasks if self.tasks else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return stats.wilson_interval(self.passed, self.tasks)

    @property
    def cost_complete(self) -> bool:
        return self.unpriced_tasks == 0

    @property
    def total_cost_usd(self) -> Decimal | None:
        return self.known_cost_usd if self.cost_complete and self.tasks else None

    @property
    def cost_per_task_usd(self) -> Decimal | None:
        total = self.total_cost_usd
        return None if total is None else total / self.tasks

    @property
    def seconds_per_task(self) -> float | None:
        return self.agent_seconds / self.tasks if self.tasks else None


@dataclass(frozen=True)
class Results:
    """Results of one set of counted tasks: `configurations` sorted by accuracy (then cost), `frontier` their ids."""

    counted_tasks: int
    configurations: list[ConfigurationResult] = field(default_factory=list)

    @property
    def frontier(self) -> list[str]:
        return [c.id for c in self.configurations if c.on_frontier]

    def get(self, configuration: str) -> ConfigurationResult | None:
        return next((c for c in self.configurations if c.id == configuration), None)


def configuration_results(*, counted: CountedTasks, filters: Filters | None = None) -> Results:
    """Per-configuration results over the counted tasks, with the Pareto frontier. Two queries when no trial changed
    since the last call (the refresh check and one aggregate); changed tasks are rebuilt first."""
    refresh(counted.workspace_id)
    tasks_sql, tasks_params = counted.sql()
    filter_sql, filter_params = (filters or Filters()).sql()
    sql = f"""
        SELECT l.model, l.thinking, l.agent, l.configuration_key, max(l.label), max(l.harness_id),
               max(l.environment_id), count(l.trial_id), count(*) FILTER (WHERE l.passed),
               count(*) FILTER (WHERE l.unpriced),
               coalesce(sum(l.cost_usd), 0), coalesce(sum(l.input_tokens), 0), coalesce(sum(l.cached_input_tokens), 0),
               coalesce(sum(l.cache_write_tokens), 0), coalesce(sum(l.output_tokens), 0),
               coalesce(sum(l.reasoning_tokens), 0), coalesce(sum(l.seconds), 0),
               coalesce(sum(l.trial_id), 0), coalesce(max(l.trial_id), 0), (SELECT count(*) FROM ({tasks_sql}) c)
        FROM {_LATEST} l
        WHERE l.workspace_id = %s AND l.task_id IN ({tasks_sql}){filter_sql}
        GROUP BY l.model, l.thinking, l.agent, l.configuration_key"""  # noqa: S608 - values are parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, [*tasks_params, counted.workspace_id, *tasks_params, *filter_params])
        rows = cursor.fetchall()
    counted_total = rows[0][-1] if rows else counted.tasks.count()
    found = [
        ConfigurationResult(
            id=configuration_id(model=r[0], agent=r[2], thinking=r[1], key=r[3]),
            model=r[0],
            thinking=r[1],
            agent=r[2],
            configuration_key=r[3],
            label=r[4],
            harness_id=r[5],
            environment_id=r[6],
            tasks=r[7],
            passed=r[8],
            unpriced_tasks=r[9],
            known_cost_usd=Decimal(str(r[10])),  # str(): SQLite hands back floats
            tokens=Tokens(int(r[11]), int(r[12]), int(r[13]), int(r[14]), int(r[15])),
            agent_seconds=round(float(r[16]), 3),
            checksum=f"{r[7]}:{r[8]}:{r[9]}:{r[17]}:{r[18]}",
        )
        for r in rows
    ]
    points = [
        stats.Point(c.id, c.accuracy, float(cost) if (cost := c.cost_per_task_usd) is not None else None)
        for c in found
        if c.accuracy is not None
    ]
    frontier = stats.pareto_frontier(points)
    ordered = sorted(
        (replace(c, on_frontier=c.id in frontier) for c in found),
        key=lambda c: (-(c.accuracy or 0.0), c.cost_per_task_usd is None, c.cost_per_task_usd or 0, c.id),
    )
    return Results(counted_tasks=counted_total, configurations=ordered)


# --- per task -------------------------------------------------------------------------------------------------------


def _latest_rows(*, counted: CountedTasks, configurations: list[str]) -> list[tuple[str, int, bool, int]]:
    """(configuration id, counted task id, passed, trial id) of each configuration's latest scored trial per task."""
    pairs = [p for p in (parse_configuration_id(c) for c in configurations) if p is not None]
    if not pairs:
        return []
    refresh(counted.workspace_id)
    tasks_sql, tasks_params = counted.sql()
    match = " OR ".join("(model = %s AND agent = %s AND thinking = %s AND configuration_key = %s)" for _ in pairs)
    sql = f"""
        SELECT model, agent, thinking, configuration_key, task_id, passed, trial_id FROM {_LATEST}
        WHERE workspace_id = %s AND trial_id IS NOT NULL AND task_id IN ({tasks_sql}) AND ({match})"""  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [counted.workspace_id, *tasks_params, *(v for p in pairs for v in p)])
        return [
            (configuration_id(model=model, agent=agent, thinking=thinking, key=key), task_id, bool(passed), trial_id)
            for model, agent, thinking, key, task_id, passed, trial_id in cursor.fetchall()
        ]


def latest_by_task(*, counted: CountedTasks, configurations: list[str]) -> dict[str, dict[int, bool]]:
    """For each configuration id: counted task id → passed, from its latest scored trial."""
    out: dict[str, dict[int, bool]] = {c: {} for c in configurations}
    for cid, task_id, passed, _ in _latest_rows(counted=counted, configurations=configurations):
        out.setdefault(cid, {})[task_id] = passed
    return out


def latest_scored_by_task(
    *, counted: CountedTasks, configurations: list[str]
) -> dict[str, dict[int, tuple[bool, int]]]:
    """For each configuration id: counted task id → (passed, trial id) of its latest scored trial (the one that
    counts)."""
    out: dict[str, dict[int, tuple[bool, int]]] = {c: {} for c in configurations}
    for cid, task_id, passed, trial_id in _latest_rows(counted=counted, configurations=configurations):
        out.setdefault(cid, {})[task_id] = (passed, trial_id)
    return out


def paired(*, counted: CountedTasks, a: str, b: str) -> stats.PairedResult:
    """Configuration `a` against `b` on the counted tasks both have scored: wins (a passed, b failed), losses, ties
    and the exact McNemar p-value."""
    by = latest_by_task(counted=counted, configurations=[a, b])
    return stats.paired_comparison(by.get(a, {}), by.get(b, {}))


@dataclass(frozen=True)
class TaskReliability:
    task_id: int
    attempts: int  # scored trials of this configuration on the task
    passed: int

    @property
    def pass_rate(self) -> float:
        return self.passed / self.attempts

    @property
    def flaky(self) -> bool:
        """Passed on some attempts and failed on others."""
        return 0 < self.passed < self.attempts


@dataclass(frozen=True)
class Reliability:
    """Every scored attempt of one configuration per counted task (not only the latest)."""

    configuration: str
    tasks: list[TaskReliability]

    @property
    def repeated_tasks(self) -> int:
        return sum(1 for t in self.tasks if t.attempts > 1)

    @property
    def flaky_tasks(self) -> int:
        return sum(1 for t in self.tasks if t.flaky)

    @property
    def mean_pass_rate(self) -> float | None:
        return sum(t.pass_rate for t in self.tasks) / len(self.tasks) if self.tasks else None


def reliability(*, counted: CountedTasks, configuration: str) -> Reliability:
    """Per-task pass rate over all scored attempts of one configuration; flaky = both passed and failed. One query."""
    parsed = parse_configuration_id(configuration)
    if parsed is None:
        return Reliability(configuration=configuration, tasks=[])
    rows = (
        Trial.objects.filter(
            workspace_id=counted.workspace_id,
            task_id__in=counted.tasks.order_by().values("pk"),
            status=TrialStatus.COMPLETED,
            model_verified=True,
            reward__isnull=False,
            cost_complete=True,
            cost_usd__isnull=False,
            evaluation__catalog_id=parsed[0],
            agent=parsed[1],
            evaluation__thinking=parsed[2],
            configuration_key=parsed[3],
        )
        .values("task_id")
        .annotate(attempts=Count("id"), passed=Count("id", filter=Q(reward__gte=1)))
        .order_by("task_id")
    )
    return Reliability(
        configuration=configuration,
        tasks=[TaskReliability(r["task_id"], r["attempts"], r["passed"]) for r in rows],
    )


def past_releases(repository: Repository) -> QuerySet[Release]:
    """A repository's releases, newest first, for the Releases page: who published each and its withdrawal come in
    the same query (one query however many releases); the public document, which the page never shows, stays behind."""
    return Release.objects.filter(repository=repository).select_related("withdrawal", "published_by").defer("document")
