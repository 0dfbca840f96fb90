"""A workspace vibe eval authored for real: a terminus-2 author (scripted model) in podman writes the starting
files and the tests, the five real gates check them, the reviewer accepts, and the eval is never released.
(In its own file so that the container tests' xdist workers split the two long authoring runs.)"""

from __future__ import annotations

from typing import Any

import pytest

from apps.authoring.models import VerifyCall, VibeEval
from apps.tasks import services as task_services
from apps.tasks.models import TaskState
from tests.authoring.conftest import drain
from tests.authoring.test_e2e_containers import model  # noqa: F401  (fixture)
from tests.doubles.authoring_terminus_model import AuthoringTerminusModel
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.containers]


WS_START = {"start/report.py": "TOTAL = 0\n"}
WS_TEST = "import json\n\n\ndef test_report():\n    assert json.load(open('/app/report.json'))['total'] == 3\n"
WS_GOLD = (
    "diff --git a/report.json b/report.json\nnew file mode 100644\n--- /dev/null\n+++ b/report.json\n"
    '@@ -0,0 +1 @@\n+{"total": 3}\n'
)


def test_a_workspace_vibe_eval_goes_from_description_to_an_approved_task_in_podman_and_is_never_released(
    gw: Gateway,  # noqa: F811
    model: AuthoringTerminusModel,  # noqa: F811
    enqueued: list[tuple[str, int]],
    api_for: Any,
) -> None:
    """A workspace eval has no repository: the terminus-2 author writes the starting files (start/ becomes /app) and
    tests that read only what the agent leaves in /app; the real gates check it; the reviewer accepts."""
    model.files = model.first_files = {
        **WS_START,
        "instruction.md": 'Write /app/report.json with the total of the report, as JSON: {"total": N}.\n',
        "gold.patch": WS_GOLD,
        "held_out/tests/test_report.py": WS_TEST,
    }
    model.verdicts = [{"verdict": "accept", "notes": "Reads only /app/report.json."}]
    client = api_for(gw.workspace)
    base = f"/api/w/{gw.workspace.slug}/evals"
    created = client.post(base, {"name": "cli habits"}, format="json")
    assert created.status_code == 201, created.json()
    body = {
        "description": "The agent printed the total instead of writing report.json.",
        "settings": {
            "authorModel": "gpt-5-mini",
            "authorCredentialId": gw.credentials["openai"].pk,
            "reviewerModel": "gpt-5",
            "reviewerCredentialId": gw.credentials["openai"].pk,
        },
    }
    r = client.post(f"{base}/{created.json()['id']}/vibe-evals", body, format="json")
    assert r.status_code == 201, r.json()
    drain(enqueued)
    task = VibeEval.objects.get(pk=r.json()["id"]).task
    assert task.state == TaskState.AWAITING_APPROVAL, (task.reason, model.author_turns)
    assert task.repository_id is None
    version = task.version
    assert version is not None and version.fail_to_pass == ["tests/test_report.py::test_report"]
    checks = VerifyCall.objects.get(round__task=task).report["checks"]
    assert [c["status"] for c in checks] == ["passed"] * 7, checks
    assert task_services.task_approve(task=task, user=None).state == TaskState.APPROVED
    refused = client.post(f"{base}/{created.json()['id']}/release")
    assert refused.status_code == 409
