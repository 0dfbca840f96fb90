"""Public results: no login, the reference shape, ETag/304, Cache-Control, 404, 429 — and nothing unpublished."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from rest_framework.test import APIClient

from apps.results import services
from apps.runs.models import Trial, TrialArtifact
from tests.results.factories import make_repository, make_task

A, B = "a|terminus-2|medium", "b|terminus-2|medium"


@pytest.fixture
def released(api, workspace, repo, lab):  # type: ignore[no-untyped-def]
    tasks = [make_task(repository=repo, title=f"SECRET-TITLE-{i}") for i in range(3)]
    for task in tasks:
        lab.trial(task, model="a", reward=1.0, cost="0.10")
        lab.trial(task, model="b", reward=0.0, cost="0.01")
        lab.trial(task, model="secret-model", reward=1.0)  # not chosen: must never appear
        lab.trial(task, model="a", key="harness:h", harness_id="9")  # not baseline: must never appear
    unreleased = make_task(repository=repo, title="SECRET-UNRUN")
    lab.trial(unreleased, model="a")  # run only by a: outside the shared set
    p = api.get(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases/preview").json()
    r = api.post(
        f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases",
        {"settings": [A, B], "head": p["head"], "fingerprint": p["fingerprint"]},
        format="json",
    )
    assert r.status_code == 201
    cache.clear()
    return r.json()


def test_repository_results_need_no_login_and_have_the_reference_shape(repo, released) -> None:  # type: ignore[no-untyped-def]
    r = APIClient().get(f"/api/public/results/{repo.full_name}")
    assert r.status_code == 200
    line = r.json()["lines"][0]
    release = line["release"]
    assert release["releaseId"] == released["id"] and release["schemaVersion"] == 1
    assert release["repository"]["fullName"] == repo.full_name and release["tasks"] == 3
    a = next(s for s in release["settings"] if s["id"] == A)
    assert {"model", "harness", "reasoningLevel", "provider", "custom", "tasks", "passed", "accuracy"} <= set(a)
    assert (a["accuracy"], a["costPerTaskUsd"], a["totalCostUsd"], a["onFrontier"]) == (100.0, 0.1, 0.3, True)
    assert set(release["frontier"]) == {A, B} and line["endorsed"] is False
    assert r["Cache-Control"] == "public, max-age=60, s-maxage=10" and r["ETag"]


def test_nothing_unpublished_leaks(repo, released, lab) -> None:  # type: ignore[no-untyped-def]
    lab.trial(make_task(repository=repo, title="SECRET-LATER"), model="later-model")  # after the release
    client = APIClient()
    text = client.get(f"/api/public/results/{repo.full_name}").content.decode()
    text += client.get("/api/public/results").content.decode()
    for secret in (
        "secret-model",
        "harness:h",
        "SECRET",
        "later-model",
        "transcript",
        "costUsd",
        str(repo.workspace.slug),
    ):
        assert secret not in text, secret


def test_etag_gives_304(repo, released) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    first = client.get(f"/api/public/results/{repo.full_name}")
    again = client.get(f"/api/public/results/{repo.full_name}", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again["ETag"] == first["ETag"]


def test_404_when_nothing_released_or_withdrawn(repo, released) -> None:  # type: ignore[no-untyped-def]
    from apps.results.models import Release

    client = APIClient()
    assert client.get("/api/public/results/nobody/nothing").status_code == 404
    services.release_withdraw(release=Release.objects.get(pk=released["id"]))
    cache.clear()
    assert client.get(f"/api/public/results/{repo.full_name}").status_code == 404
    assert client.get("/api/public/results").json() == {"cards": []}


def test_cards_list_released_repositories(repo, released) -> None:  # type: ignore[no-untyped-def]
    cards = APIClient().get("/api/public/results").json()["cards"]
    assert len(cards) == 1
    card = cards[0]
    assert card["repository"]["fullName"] == repo.full_name and card["settings"] == 2 and card["tasks"] == 3
    assert {p["role"]: p["id"] for p in card["picks"]} == {"cheapest": B, "mostAccurate": A}
    assert card["defaultLine"] == released["id"]


def test_rate_limit_answers_429_with_retry_after(settings, repo, released) -> None:  # type: ignore[no-untyped-def]
    settings.PUBLIC_RESULTS_BURST = 3
    settings.PUBLIC_RESULTS_RATE_PER_MINUTE = 6
    client = APIClient()
    codes = [client.get("/api/public/results").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    r = client.get("/api/public/results")
    assert r.status_code == 429 and int(r["Retry-After"]) >= 1
    other = APIClient(REMOTE_ADDR="10.9.9.9")
    assert other.get("/api/public/results").status_code == 200


# --- publish options -------------------------------------------------------------------------------------------------

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a shape redaction knows
ANTHROPIC_KEY = "sk-ant-api03-" + "x9Y8w7V6u5T4s3R2q1P0o9N8m7L6"
PLANTED_IP = "10.88.0.7"


def give_files(task, marker: str) -> None:  # type: ignore[no-untyped-def]
    """A Harbor task directory as the authors write it (see apps/tasks/authoring.py), every file marked."""
    root = task.version.path
    files = {
        "instruction.md": f"Make greet() return hello (INSTRUCTION-{marker}).\n",
        "task.toml": f"[verifier]\ntimeout_sec = 120.0  # TASK-TOML-{marker}\n",
        "environment/Dockerfile": f"FROM base\nCOPY repo.tar /app/ # ENVIRONMENT-{marker}\n",
        "environment/.env": f"DEPLOY_SECRET=ENV-SECRET-{marker}\n",
        "tests/base.tar": f"BASE-SNAPSHOT-{marker}",
        "tests/verify.py": f"# VERIFIER-SCRIPT-{marker}\n",
        "tests/run-tests.sh": f"pytest  # RUNNER-{marker}\n",
        "tests/config.json": json.dumps({"held_out": ["tests/test_greeting.py"], "note": f"CONFIG-{marker}"}),
        "tests/held_out/tests/test_greeting.py": (
            f'TOKEN = "{GITHUB_TOKEN}"\n\ndef test_greet():\n    assert greet() == "hello"  # HIDDEN-TEST-{marker}\n'
        ),
        "tests/held_out/tests/data/blob.bin": "\x00\x01BINARY",
        "solution/solve.sh": f"git apply /solution/gold.patch  # SOLVE-{marker}\n",
        "solution/gold.patch": f"+    return 'hello'  # GOLD-PATCH-{marker}\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # A link among the held-out tests must not lead a release out of the task's tests.
    os.symlink(root / "environment" / ".env", root / "tests" / "held_out" / "tests" / "env_link.py")
    version = task.version
    version.fail_to_pass, version.pass_to_pass = ["tests/test_greeting.py::test_greet"], []
    version.save(update_fields=["fail_to_pass", "pass_to_pass"])


def give_trial_output(trial: Trial, marker: str) -> None:
    """What a finished trial records: its transcript and the artifacts Harbor left (verifier, agent logs, others)."""
    trial_dir = f"{django_settings.HARBOR_TRIALS_DIR}/{trial.harbor_name}"
    transcript = (
        f"## 1 · agent\nTRANSCRIPT-{marker}: calling {django_settings.GATEWAY_PUBLIC_URL}/openai/v1/responses\n"
        f"→ bash: export OPENAI_BASE_URL=http://{PLANTED_IP}:8000/gateway/openai/v1 ANTHROPIC_KEY={ANTHROPIC_KEY}\n"
        f"→ bash: curl http://host.containers.internal:8000/gateway/anthropic/v1/messages\n"
        f"← wrote {trial_dir}/artifacts/ARTIFACT-PATH-{marker}.txt and /logs/artifacts/LOG-PATH-{marker}.txt\n"
        f"← see https://github.com/acme/widgets/pull/7 and edit /app/widgets/greet.py\n"
    )
    Trial.objects.filter(pk=trial.pk).update(
        transcript=transcript, rewards={"reward": trial.reward}, trial_dir=trial_dir
    )
    outcomes = {
        "runs": [
            {
                "passed": trial.reward == 1.0,
                "outcomes": {
                    "tests/test_greeting.py::test_greet": "passed" if trial.reward == 1.0 else "failed",
                    "tests/test_greeting.py::test_other": "passed",
                },
            }
        ],
        "reward": trial.reward,
    }
    artifacts = {
        "verifier/test-stdout.txt": f"TEST-OUTPUT-{marker}\nFAILED? token={GITHUB_TOKEN}\nSB-REWARD {trial.reward}\n",
        "verifier/outcomes.json": json.dumps(outcomes),
        "agent/trajectory.json": f'{{"HARBOR-LOG-{marker}": true}}',
        "agent/command-0/stdout.txt": f"HARBOR-LOG-{marker}",
        "artifacts/notes.txt": f"ARTIFACT-CONTENT-{marker}",
    }
    TrialArtifact.objects.bulk_create(
        TrialArtifact(trial=trial, name=name, size=len(text), content=text) for name, text in artifacts.items()
    )


def publish(api, workspace, repo, settings: list[str], **options: bool) -> Any:  # type: ignore[no-untyped-def]
    p = api.get(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases/preview").json()
    body = {"settings": settings, "head": p["head"], "fingerprint": p["fingerprint"], **options}
    r = api.post(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases", body, format="json")
    cache.clear()
    return r


def public_text(repo) -> tuple[dict[str, Any], str]:  # type: ignore[no-untyped-def]
    """The repository's current public release and everything the public API serves, as text."""
    client = APIClient()
    r = client.get(f"/api/public/results/{repo.full_name}")
    assert r.status_code == 200
    return r.json()["lines"][0]["release"], r.content.decode() + client.get("/api/public/results").content.decode()


@pytest.fixture
def world(workspace, repo, lab):  # type: ignore[no-untyped-def]
    """Two released tasks (a and b ran them), one only a ran; unchosen, harness and older trials; another repository."""
    released = [make_task(repository=repo, title=f"Released {i}") for i in range(2)]
    outside = make_task(repository=repo, title="TITLE-OUTSIDE")
    for i, task in enumerate(released):
        give_files(task, str(i))
        give_trial_output(lab.trial(task, model="a", reward=0.0), f"OLDER-TRIAL-{i}")  # superseded by the next
        give_trial_output(lab.trial(task, model="a", reward=1.0), f"A-{i}")
        give_trial_output(lab.trial(task, model="b", reward=0.0), f"B-{i}")
        give_trial_output(lab.trial(task, model="secret-model"), f"UNCHOSEN-{i}")
        give_trial_output(lab.trial(task, model="a", key="harness:h", harness_id="9"), f"HARNESS-{i}")
    give_files(outside, "OUTSIDE")
    give_trial_output(lab.trial(outside, model="a"), "OUTSIDE")
    elsewhere = make_task(repository=make_repository(workspace=workspace), title="TITLE-ELSEWHERE")
    give_files(elsewhere, "ELSEWHERE")
    give_trial_output(lab.trial(elsewhere, model="a"), "ELSEWHERE")
    return released


# Markers of what must never be public, whatever the options.
NEVER = (
    "TASK-TOML", "ENVIRONMENT-", "ENV-SECRET", "BASE-SNAPSHOT", "VERIFIER-SCRIPT", "RUNNER-", "CONFIG-", "BINARY",
    "HARBOR-LOG", "ARTIFACT-CONTENT", "ARTIFACT-PATH", "LOG-PATH", "OLDER-TRIAL", "UNCHOSEN", "HARNESS-",
    "OUTSIDE", "ELSEWHERE", "secret-model", "harness:h", GITHUB_TOKEN, ANTHROPIC_KEY, PLANTED_IP,
    "host.containers.internal", "/gateway", str(django_settings.HARBOR_TRIALS_DIR), "sb-trial-",
)  # fmt: skip
# Markers of what only Publish Tasks / Publish Results by Task make public.
TASK_FILES = ("Released ", "INSTRUCTION-", "HIDDEN-TEST", "GOLD-PATCH", "SOLVE-")
TASK_TEXT = (*TASK_FILES, "test_greeting")
RESULT_TEXT = ("TRANSCRIPT-", "TEST-OUTPUT", "test_other", "transcript", "testOutput", "grading")


def assert_absent(text: str, markers: tuple[str, ...]) -> None:
    for marker in markers:
        assert marker not in text, marker


def test_with_both_options_off_only_aggregates_are_public(api, workspace, repo, world) -> None:  # type: ignore[no-untyped-def]
    assert publish(api, workspace, repo, [A, B]).status_code == 201
    release, text = public_text(repo)
    assert set(release) == {
        "schemaVersion", "releaseId", "releasedAt", "repository", "publisher", "tasks", "settings", "frontier",
        "publishTasks", "publishResultsByTask",
    }  # fmt: skip
    assert (release["publishTasks"], release["publishResultsByTask"], release["tasks"]) == (False, False, 2)
    assert_absent(text, NEVER + TASK_TEXT + RESULT_TEXT + ("taskList", "resultsByTask"))


def test_publish_tasks_makes_instruction_held_out_tests_and_gold_patch_public(api, workspace, repo, world) -> None:  # type: ignore[no-untyped-def]
    assert publish(api, workspace, repo, [A, B], publishTasks=True).status_code == 201
    release, text = public_text(repo)
    assert "resultsByTask" not in release
    task_list = release["taskList"]
    assert [(t["taskId"], t["title"]) for t in task_list] == [(t.pk, f"Released {i}") for i, t in enumerate(world)]
    first = task_list[0]
    assert first["instruction"] == "Make greet() return hello (INSTRUCTION-0).\n"
    assert first["baseSha"] == world[0].base_sha and first["contentHash"] == world[0].version.content_hash
    tests = first["tests"]
    assert [f["path"] for f in tests["files"]] == ["tests/data/blob.bin", "tests/test_greeting.py"]  # no link
    blob, greeting = tests["files"]
    assert blob["content"] is None  # binary: listed, never inlined
    assert "HIDDEN-TEST-0" in greeting["content"] and 'TOKEN = "[REDACTED:github_token]"' in greeting["content"]
    assert tests["failToPass"] == ["tests/test_greeting.py::test_greet"] and tests["passToPass"] == []
    assert first["solution"]["goldPatch"] == "+    return 'hello'  # GOLD-PATCH-0\n"
    assert "SOLVE-0" in first["solution"]["solveScript"]
    assert_absent(text, NEVER + RESULT_TEXT + ("resultsByTask",))


def test_publish_results_by_task_shows_grading_test_output_and_transcript_redacted(  # type: ignore[no-untyped-def]
    api, workspace, repo, world
) -> None:
    assert publish(api, workspace, repo, [A, B], publishResultsByTask=True).status_code == 201
    release, text = public_text(repo)
    assert "taskList" not in release
    rows = release["resultsByTask"]
    assert [r["taskId"] for r in rows] == [t.pk for t in world]
    row = rows[0]
    assert row["passed"] == {A: True, B: False} and set(row["results"]) == {A, B}
    a, b = row["results"][A], row["results"][B]
    assert a["passed"] is True and b["passed"] is False
    assert a["grading"] == {
        "reward": 1.0,
        "rewards": {"reward": 1.0},
        "tests": {"tests/test_greeting.py::test_greet": "passed", "tests/test_greeting.py::test_other": "passed"},
        "runs": 1,
        "passedRuns": 1,
    }
    assert b["grading"]["tests"]["tests/test_greeting.py::test_greet"] == "failed" and b["grading"]["passedRuns"] == 0
    assert "TEST-OUTPUT-A-0" in a["testOutput"] and "token=[REDACTED:" in a["testOutput"]
    transcript = a["transcript"]
    assert "TRANSCRIPT-A-0" in transcript and "ANTHROPIC_KEY=[REDACTED:" in transcript
    assert "[REDACTED:endpoint]" in transcript and "[REDACTED:path]" in transcript
    # What is not an endpoint stays readable.
    assert "https://github.com/acme/widgets/pull/7" in transcript and "/app/widgets/greet.py" in transcript
    assert "TRANSCRIPT-B-1" in rows[1]["results"][B]["transcript"]
    gateway_host = django_settings.GATEWAY_PUBLIC_URL.split("://", 1)[1].split("/", 1)[0]
    assert_absent(text, NEVER + TASK_FILES + ("taskList", django_settings.GATEWAY_PUBLIC_URL, gateway_host))


def test_publish_options_are_part_of_the_content_hash(api, workspace, repo, world) -> None:  # type: ignore[no-untyped-def]
    """Each option changes what is public, so each is a new release; the same options again are unchanged."""
    first = publish(api, workspace, repo, [A, B])
    both = publish(api, workspace, repo, [A, B], publishTasks=True, publishResultsByTask=True)
    again = publish(api, workspace, repo, [A, B], publishTasks=True, publishResultsByTask=True)
    assert (first.status_code, both.status_code, again.status_code) == (201, 201, 200)
    assert again.json()["id"] == both.json()["id"] and again.json()["unchanged"] is True
    assert both.json()["document"]["taskList"] and both.json()["document"]["resultsByTask"]
    release, text = public_text(repo)
    assert release["releaseId"] == both.json()["id"]
    assert_absent(text, NEVER)
