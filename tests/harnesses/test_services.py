"""Saved harnesses: every rule, the fingerprint (configuration identity) and the frozen snapshot."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Credential, Workspace
from apps.harnesses import queries, services
from apps.harnesses.models import Harness
from selfbench.errors import Conflict, InvalidInput
from tests.factories import make_workspace
from tests.runs.factories import make_credential


def _create(workspace: Workspace, **kw: Any) -> Harness:
    kw.setdefault("name", "With skills")
    kw.setdefault("agent", "claude-code")
    return services.harness_create(workspace=workspace, **kw)


def test_harness_create_keeps_normalized_changes_and_a_fingerprint(workspace: Workspace) -> None:
    harness = _create(
        workspace,
        skills=["https://github.com/acme/skills.git", "acme/more@v1.2", "acme/skills"],
        instructions="  Run the tests before you finish.\r\n",
        options={"max_turns": 30, "config": {"env": {"FOO": "1"}}},
    )
    assert harness.skills == ["acme/skills", "acme/more@v1.2"]  # a GitHub URL is its shorthand; repeats dropped
    assert harness.instructions == "Run the tests before you finish."
    assert harness.options == {"max_turns": 30, "config": {"env": {"FOO": "1"}}}
    assert harness.instructions_in_system_prompt is True
    assert len(harness.fingerprint) == 64 and harness.fingerprint == services.harness_fingerprint(harness)


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_instructions_go_to_the_system_prompt_for_claude_code_and_codex(workspace: Workspace, agent: str) -> None:
    assert _create(workspace, agent=agent, instructions="x").instructions_in_system_prompt is True


@pytest.mark.parametrize("agent", ["pi", "terminus-2", "mini-swe-agent", "muse-code"])
def test_instructions_are_appended_to_the_task_for_other_agents(workspace: Workspace, agent: str) -> None:
    assert _create(workspace, agent=agent, instructions="x").instructions_in_system_prompt is False


def test_harness_create_rejects_an_unknown_agent(workspace: Workspace) -> None:
    with pytest.raises(InvalidInput, match="agent: 'aider' is not one of"):
        _create(workspace, agent="aider")


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("acme/skills", "acme/skills"),
        ("acme/skills@main", "acme/skills@main"),
        ("acme/skills@v1.0.0", "acme/skills@v1.0.0"),
        ("https://github.com/acme/skills", "acme/skills"),
        ("https://github.com/acme/skills/tree/release/2", "acme/skills@release/2"),
        ("https://git.example.com/team/skills.git", "https://git.example.com/team/skills.git"),
        ("https://git.example.com/team/skills.git@v2", "https://git.example.com/team/skills.git@v2"),
        ("file:///srv/git/skills", "file:///srv/git/skills"),
        ("git@example.com:team/skills.git", "git@example.com:team/skills.git"),
    ],
)
def test_skill_sources_take_the_three_shapes(workspace: Workspace, raw: str, stored: str) -> None:
    assert _create(workspace, skills=[raw]).skills == [stored]


@pytest.mark.parametrize("raw", ["skills", "acme/skills@", "acme/ski lls", "../etc/passwd", "ftp://x/y", "a/b/c", ""])
def test_skill_sources_of_another_shape_are_refused(workspace: Workspace, raw: str) -> None:
    with pytest.raises(InvalidInput, match="use org/repo, org/repo@ref, or a git URL"):
        _create(workspace, skills=["acme/ok", raw])


@pytest.mark.parametrize("agent", ["terminus-2", "mini-swe-agent", "muse-code"])
def test_skills_are_refused_for_agents_that_do_not_load_them(workspace: Workspace, agent: str) -> None:
    with pytest.raises(InvalidInput, match=f"{agent} does not load skills; only claude-code, codex and pi do"):
        _create(workspace, agent=agent, skills=["acme/skills"])


@pytest.mark.parametrize("agent", ["claude-code", "codex", "pi"])
def test_skills_are_taken_by_claude_code_codex_and_pi(workspace: Workspace, agent: str) -> None:
    assert _create(workspace, agent=agent, skills=["acme/skills"]).skills == ["acme/skills"]


def test_options_are_validated_against_the_agents_harbor_model(workspace: Workspace) -> None:
    assert _create(workspace, agent="codex", options={"web_search": "live", "reasoning_summary": "concise"}).options
    with pytest.raises(InvalidInput, match="options for codex") as exc:
        _create(workspace, name="bad", agent="codex", options={"max_turns": 3})
    assert exc.value.errors and "options" in exc.value.errors  # type: ignore[operator]
    with pytest.raises(InvalidInput, match="options for claude-code"):
        _create(workspace, name="bad", options={"max_turns": "many"})
    with pytest.raises(InvalidInput, match="options for codex"):
        _create(workspace, name="bad", agent="codex", options={"web_search": "sometimes"})


@pytest.mark.parametrize("key", ["base_url", "api_base", "model_api", "session_id"])
def test_options_that_would_route_around_the_gateway_are_refused(workspace: Workspace, key: str) -> None:
    with pytest.raises(InvalidInput, match=key):
        _create(workspace, agent="terminus-2", options={key: "http://elsewhere/v1"})


def test_claude_code_always_bypasses_permission_checks(workspace: Workspace) -> None:
    with pytest.raises(InvalidInput, match="permission checks bypassed"):
        _create(workspace, options={"permission_mode": "default"})
    assert _create(workspace, options={"permission_mode": "bypassPermissions"}).options


def test_a_harness_name_is_unique_in_its_workspace(workspace: Workspace) -> None:
    _create(workspace, name="Fast")
    with pytest.raises(Conflict, match="a harness named 'Fast' already exists"):
        _create(workspace, name="Fast", agent="codex")
    _create(make_workspace(), name="Fast")  # another workspace may
    with pytest.raises(InvalidInput, match="name"):
        _create(workspace, name="   ")


# --- subagent models ------------------------------------------------------------------------------------------------


def test_a_subagent_model_is_for_claude_code_and_codex_only(workspace: Workspace, openai: Credential) -> None:
    for agent in ("pi", "terminus-2", "mini-swe-agent", "muse-code"):
        with pytest.raises(InvalidInput, match="subagent models run on claude-code and codex only"):
            _create(workspace, agent=agent, subagent={"catalogId": "gpt-5-mini"})
    assert _create(workspace, agent="codex", subagent={"catalogId": "gpt-5-mini"}).has_subagent


def test_a_subagent_model_must_be_in_the_catalog(workspace: Workspace, openai: Credential) -> None:
    with pytest.raises(InvalidInput, match="'gpt-99' is not in the model catalog"):
        _create(workspace, subagent={"catalogId": "gpt-99"})


def test_a_subagent_credential_defaults_to_the_first_that_serves_it_through_the_gateway(
    workspace: Workspace,
) -> None:
    with pytest.raises(InvalidInput, match=r"no credential of this workspace can serve deepseek-v3\.2"):
        _create(workspace, subagent={"catalogId": "deepseek-v3.2"})
    make_credential(workspace=workspace, kind="custom", base_url="http://127.0.0.1:9/v1")  # never a default
    with pytest.raises(InvalidInput, match="no credential of this workspace can serve"):
        _create(workspace, subagent={"catalogId": "deepseek-v3.2"})
    first = make_credential(workspace=workspace, kind="openrouter")
    make_credential(workspace=workspace, kind="openrouter")
    harness = _create(workspace, subagent={"catalogId": "deepseek-v3.2"})
    assert harness.subagent_credential is None  # left out: resolved when a run snapshots it
    snap = services.harness_snapshot(harness)
    assert snap["subagent"]["credentialId"] == str(first.pk) and snap["subagent"]["credentialDefaulted"] is True


def test_a_subagent_credential_must_go_through_the_gateway(workspace: Workspace) -> None:
    custom = make_credential(workspace=workspace, kind="custom", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(InvalidInput, match="is a custom endpoint"):
        _create(workspace, subagent={"catalogId": "gpt-5-mini", "credentialId": str(custom.pk)})


def test_a_subagent_credential_must_be_the_workspaces_and_serve_the_model(
    workspace: Workspace, anthropic: Credential
) -> None:
    with pytest.raises(InvalidInput, match=r"\(anthropic\) cannot serve gpt-5-mini"):
        _create(workspace, subagent={"catalogId": "gpt-5-mini", "credentialId": anthropic.pk})
    stranger = make_credential(workspace=make_workspace(), kind="openai")
    with pytest.raises(InvalidInput, match="is not a credential of this workspace"):
        _create(workspace, subagent={"catalogId": "gpt-5-mini", "credentialId": stranger.pk})
    github = make_credential(workspace=workspace, kind="github")
    with pytest.raises(InvalidInput, match="not a model credential"):
        _create(workspace, subagent={"catalogId": "gpt-5-mini", "credentialId": github.pk})


def test_managed_model_serves_a_subagent_only_where_the_deployment_has_it(workspace: Workspace, settings: Any) -> None:
    with pytest.raises(InvalidInput, match="managed-model is not available for openai"):
        _create(workspace, subagent={"catalogId": "gpt-5-mini", "credentialId": "managed-model"})
    settings.MANAGED_OPENAI_API_KEY = "sk-managed-000000000000"
    harness = _create(workspace, subagent={"catalogId": "gpt-5-mini", "credentialId": "managed-model"})
    assert services.harness_snapshot(harness)["subagent"]["credentialId"] == "managed-model"


def test_picking_a_subagent_model_starts_with_the_delegation_prompt_and_empty_means_none(
    workspace: Workspace, openai: Credential
) -> None:
    default = _create(workspace, name="a", subagent={"catalogId": "gpt-5-mini"})
    assert default.subagent_prompt == services.DEFAULT_DELEGATION_PROMPT
    silent = _create(workspace, name="b", subagent={"catalogId": "gpt-5-mini", "prompt": ""})
    assert silent.subagent_prompt == ""
    own = _create(workspace, name="c", subagent={"catalogId": "gpt-5-mini", "prompt": "Hand tests to subagents."})
    assert own.subagent_prompt == "Hand tests to subagents."
    assert len({default.fingerprint, silent.fingerprint, own.fingerprint}) == 3


# --- configuration identity -----------------------------------------------------------------------------------------


def test_harnesses_that_change_the_same_things_are_one_configuration(workspace: Workspace, openai: Credential) -> None:
    second = make_credential(workspace=workspace, kind="openai")
    a = _create(
        workspace,
        name="A",
        skills=["acme/x", "acme/y"],
        options={"max_turns": 5, "reasoning_effort": "low"},
        instructions="Be brief.",
        subagent={"catalogId": "gpt-5-mini", "credentialId": openai.pk},
    )
    b = _create(
        workspace,
        name="B, named otherwise",
        skills=["https://github.com/acme/y", "acme/x"],
        options={"reasoning_effort": "low", "max_turns": 5},
        instructions="Be brief.\n\n",
        subagent={"catalogId": "gpt-5-mini", "credentialId": second.pk},  # who pays is not a change
    )
    assert a.fingerprint == b.fingerprint
    assert queries.same_configuration([a, b]) == {a.pk: [b.pk], b.pk: [a.pk]}
    other = [
        _create(workspace, name="C", skills=["acme/x"], options={"max_turns": 5, "reasoning_effort": "low"}),
        _create(workspace, name="D", agent="codex", instructions="Be brief."),
        _create(workspace, name="E", instructions="Be briefer."),
        _create(workspace, name="F", instructions="Be brief.", options={"max_turns": 6}),
    ]
    assert len({a.fingerprint, *(h.fingerprint for h in other)}) == 5


def test_editing_a_harness_changes_its_fingerprint_and_keeps_its_subagent(
    workspace: Workspace, openai: Credential
) -> None:
    harness = _create(workspace, instructions="one", subagent={"catalogId": "gpt-5-mini", "prompt": ""})
    before = harness.fingerprint
    harness = services.harness_update(harness=harness, instructions="two")
    assert harness.fingerprint != before and harness.subagent_catalog_id == "gpt-5-mini"
    assert harness.subagent_prompt == ""
    with pytest.raises(InvalidInput, match="subagent models run on claude-code and codex only"):
        services.harness_update(harness=harness, agent="pi")
    harness = services.harness_update(harness=Harness.objects.get(pk=harness.pk), agent="pi", subagent=None)
    assert harness.agent == "pi" and not harness.has_subagent
    assert Harness.objects.get(pk=harness.pk).fingerprint == services.harness_fingerprint(harness)


def test_the_snapshot_is_plain_data_that_later_edits_do_not_touch(workspace: Workspace, openai: Credential) -> None:
    harness = _create(workspace, skills=["acme/x"], instructions="Keep it small.", options={"max_turns": 9})
    snap = services.harness_snapshot(harness)
    assert snap == {
        "id": str(harness.pk),
        "name": "With skills",
        "agent": "claude-code",
        "skills": ["acme/x"],
        "instructions": "Keep it small.",
        "instructionsInSystemPrompt": True,
        "options": {"max_turns": 9},
        "subagent": None,
        "fingerprint": harness.fingerprint,
    }
    services.harness_update(harness=harness, instructions="Changed.", options={})
    services.harness_delete(harness=harness)
    assert snap["instructions"] == "Keep it small." and snap["options"] == {"max_turns": 9}
    assert queries.harness_snapshots(workspace=workspace, ids=[str(harness.pk)]) == {}


def test_snapshots_load_only_this_workspaces_harnesses(workspace: Workspace) -> None:
    mine = _create(workspace)
    theirs = _create(make_workspace())
    loaded = queries.harness_snapshots(workspace=workspace, ids=[str(mine.pk), str(theirs.pk), "nope"])
    assert list(loaded) == [str(mine.pk)]
