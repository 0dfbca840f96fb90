"""Results page: the table per configuration with Wilson intervals, chart data with the frontier, incomplete cost
never shown as $0, filters on the same URL, the paired comparison."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Workspace
from tests.results.factories import Lab, make_repository, make_task

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
CHEAP = "gpt-5-mini|terminus-2|medium"
DEAR = "gpt-5|terminus-2|medium"


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def populate(workspace: Workspace) -> Any:
    """Four approved tasks: gpt-5 passes 3 at $0.40, gpt-5-mini passes 2 at $0.05, claude passes its one scored task but
    has an unpriced one, so its cost is incomplete."""
    repo = make_repository(workspace=workspace, full_name="acme/widgets")
    lab = Lab(workspace=workspace)
    tasks = [make_task(repository=repo) for _ in range(4)]
    for i, task in enumerate(tasks):
        lab.trial(task, model="gpt-5", reward=1.0 if i < 3 else 0.0, cost="0.40")
        lab.trial(task, model="gpt-5-mini", reward=1.0 if i in (0, 3) else 0.0, cost="0.05")
    lab.trial(tasks[1], model="claude-sonnet-4-5", reward=1.0, cost="0.20")
    lab.trial(tasks[0], model="claude-sonnet-4-5", reward=1.0, cost=None)
    return repo


def chart(page: str) -> dict[str, Any]:
    match = re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', page, re.S)
    assert match is not None
    return dict(json.loads(match.group(1)))


def test_results_table_has_accuracy_interval_cost_and_frontier(client: Client, workspace: Workspace) -> None:
    populate(workspace)
    r = client.get(reverse("results:index", args=[workspace.slug]))
    assert r.status_code == 200 and r.templates[0].name == "results/results.html"
    page = r.content.decode()
    assert "<strong>4</strong> counted tasks in acme/widgets" in page
    # gpt-5: 3/4 = 75%, Wilson 95% interval 30–95%; gpt-5-mini: 2/4 = 50%.
    assert "<strong>75%</strong>" in page and "30–95%" in page and "<strong>50%</strong>" in page
    assert "$0.4000" in page and "$0.0500" in page
    assert "vendor/chart.umd.min.js" in page and "js/results-chart.js" in page
    data = chart(page)
    by_id = {p["id"]: p for p in data["points"]}
    assert by_id[DEAR] == {
        "id": DEAR,
        "name": "gpt-5 · terminus-2 · medium",
        "accuracy": 75.0,
        "cost": 0.4,
        "frontier": True,
    }
    assert by_id[CHEAP]["frontier"] is True and by_id[CHEAP]["cost"] == 0.05
    # The unpriced configuration is listed as incomplete, never plotted or shown at $0.
    assert [p["id"] for p in data["unpriced"]] == ["claude-sonnet-4-5|terminus-2|medium"]
    assert "incomplete" in page and "$0.0000" not in page


def test_filters_use_the_same_url_and_return_the_section_for_htmx(client: Client, workspace: Workspace) -> None:
    populate(workspace)
    url = reverse("results:index", args=[workspace.slug])
    r = client.get(url, {"model": "gpt-5-mini"}, **HX)
    assert r.status_code == 200 and r.templates[0].name == "results/partials/results_section.html"
    assert b"<html" not in r.content and "HX-Request" in r["Vary"]
    assert [p["id"] for p in chart(r.content.decode())["points"]] == [CHEAP]
    r = client.get(url, {"configuration": DEAR})
    assert b"<html" in r.content and [p["id"] for p in chart(r.content.decode())["points"]] == [DEAR]


def test_paired_comparison_of_two_configurations(client: Client, workspace: Workspace) -> None:
    populate(workspace)
    r = client.get(reverse("results:index", args=[workspace.slug]), {"a": DEAR, "b": CHEAP})
    page = r.content.decode()
    assert "on the 4 tasks both have scored" in page
    # Only gpt-5 passed tasks 1 and 2; only gpt-5-mini passed task 3; both passed task 0.
    assert "<td>2</td><td>1</td><td>1</td><td>0</td><td>1.000</td>" in page


def test_pick_another_repository(client: Client, workspace: Workspace) -> None:
    populate(workspace)
    other = make_repository(workspace=workspace, full_name="acme/empty")
    page = client.get(reverse("results:index", args=[workspace.slug]), {"repository": other.pk}).content.decode()
    assert "<strong>0</strong> counted tasks in acme/empty" in page and "No scored results here yet" in page


def test_empty_workspace_says_what_to_do(client: Client, workspace: Workspace) -> None:
    page = client.get(reverse("results:index", args=[workspace.slug])).content.decode()
    assert "No results yet" in page and reverse("repositories:list", args=[workspace.slug]) in page


def test_results_page_runs_a_fixed_number_of_queries(
    client: Client, workspace: Workspace, django_assert_num_queries: Any
) -> None:
    populate(workspace)
    url = reverse("results:index", args=[workspace.slug])
    client.get(url)
    # session, user, membership, repositories; then results.queries for the unfiltered and the filtered results
    # (each: its cache's dirty check and the scoring query). None per configuration.
    with django_assert_num_queries(8):
        client.get(url, {"model": "gpt-5"})
