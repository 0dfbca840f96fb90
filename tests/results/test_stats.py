"""Known values for the interval, the frontier and the paired test."""

from __future__ import annotations

import pytest

from apps.results.stats import Point, mcnemar_exact, paired_comparison, pareto_frontier, wilson_interval


@pytest.mark.parametrize(
    ("passed", "total", "low", "high"),
    [
        # Reference values (Wilson 1927; e.g. Newcombe 1998, Table I and R's binom::binom.wilson).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_matches_known_values(passed: int, total: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(passed, total)  # type: ignore[misc]
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_interval_of_nothing_is_none_and_bad_counts_raise() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(5, 3)


def test_frontier_keeps_undominated_points_and_never_unpriced_ones() -> None:
    points = [
        Point("cheap", 0.40, 0.10),
        Point("mid", 0.60, 0.50),
        Point("dominated", 0.55, 0.80),  # mid is cheaper and more accurate
        Point("best", 0.80, 2.00),
        Point("tie-cost-worse", 0.70, 2.00),  # best costs the same and is more accurate
        Point("unpriced", 0.95, None),
    ]
    assert pareto_frontier(points) == {"cheap", "mid", "best"}


def test_identical_points_are_both_on_the_frontier() -> None:
    assert pareto_frontier([Point("a", 0.5, 1.0), Point("b", 0.5, 1.0)]) == {"a", "b"}


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [
        (0, 0, 1.0),
        (5, 5, 1.0),
        (10, 0, 0.001953125),  # 2 * 0.5**10
        (1, 9, 0.021484375),  # 2 * (1 + 10) / 1024
        (12, 4, 0.076812744140625),  # 2 * sum(C(16,i), i<=4) / 2**16
    ],
)
def test_exact_mcnemar_against_hand_computed_binomial_tails(wins: int, losses: int, p: float) -> None:
    assert mcnemar_exact(wins, losses) == pytest.approx(p, rel=1e-12)


def test_paired_comparison_counts_only_shared_tasks() -> None:
    a = {1: True, 2: True, 3: False, 4: False, 5: True}
    b = {1: True, 2: False, 3: True, 4: False, 6: True}
    r = paired_comparison(a, b)
    assert (r.tasks, r.wins, r.losses, r.ties_passed, r.ties_failed) == (4, 1, 1, 1, 1)
    assert r.p_value == 1.0
    assert paired_comparison({1: True}, {2: True}).p_value is None
