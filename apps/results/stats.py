"""The statistics results are reported with: Wilson intervals, the Pareto frontier and an exact McNemar test.

Pure functions over numbers; the queries that feed them live in `queries.py`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def wilson_interval(passed: int, total: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for a pass rate, as (low, high) in [0, 1]; None when there is nothing to rate."""
    if total <= 0:
        return None
    if not 0 <= passed <= total:
        raise ValueError(f"passed={passed} must lie in 0..{total}")
    p = passed / total
    z2 = z * z
    denom = 1 + z2 / total
    centre = (p + z2 / (2 * total)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    # Clamp float noise at the ends (0/n and n/n must give exactly 0 and 1).
    return (max(0.0, centre - half) if passed else 0.0, min(1.0, centre + half) if passed < total else 1.0)


@dataclass(frozen=True)
class Point:
    key: str
    accuracy: float
    cost: float | None  # None = incomplete: such a point is never on the frontier


def pareto_frontier(points: Sequence[Point]) -> set[str]:
    """Keys of the points no other point beats: another dominates when it costs no more and is no less accurate,
    and is strictly better on one of the two. Points with unknown cost are left out (never treated as free)."""
    priced = [p for p in points if p.cost is not None]
    frontier: set[str] = set()
    for p in priced:
        assert p.cost is not None
        dominated = False
        for q in priced:
            assert q.cost is not None
            if q is p:
                continue
            if q.cost <= p.cost and q.accuracy >= p.accuracy and (q.cost < p.cost or q.accuracy > p.accuracy):
                dominated = True
                break
        if not dominated:
            frontier.add(p.key)
    return frontier


@dataclass(frozen=True)
class PairedResult:
    tasks: int
    wins: int  # A passed, B failed
    losses: int  # A failed, B passed
    ties_passed: int
    ties_failed: int
    p_value: float | None  # exact two-sided McNemar (binomial on the discordant pairs); None with no tasks


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs against p = 1/2."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_comparison(a: dict[int, bool], b: dict[int, bool]) -> PairedResult:
    """Compare two configurations on the tasks both have scored (task id → passed)."""
    shared = a.keys() & b.keys()
    wins = sum(1 for t in shared if a[t] and not b[t])
    losses = sum(1 for t in shared if b[t] and not a[t])
    ties_passed = sum(1 for t in shared if a[t] and b[t])
    ties_failed = len(shared) - wins - losses - ties_passed
    return PairedResult(
        tasks=len(shared),
        wins=wins,
        losses=losses,
        ties_passed=ties_passed,
        ties_failed=ties_failed,
        p_value=mcnemar_exact(wins, losses) if shared else None,
    )
