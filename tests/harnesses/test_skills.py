"""The skills cache: each source's skills/ folder is fetched once per ref (GitHub is unreachable here, so the
sources are local git repositories, by file:// URL and as `org/repo` shorthands under a file:// "GitHub")."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from apps.harnesses import skills


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _skills_repo(root: Path, *, text: str = "v1") -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "skills" / "testing").mkdir(parents=True)
    (root / "skills" / "testing" / "SKILL.md").write_text(f"---\nname: testing\n---\nRun the tests ({text}).\n")
    (root / "README.md").write_text("not a skill\n")
    _commit(root, "first")
    return root


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def test_a_source_is_fetched_once_per_ref_and_then_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _skills_repo(tmp_path / "repo")
    first_sha = _git(repo, "rev-parse", "HEAD")
    source = f"file://{repo}"
    fetched = skills.fetch(source)
    assert fetched.sha == first_sha
    assert (fetched.path / "testing" / "SKILL.md").read_text().endswith("(v1).\n")
    assert not (fetched.path.parent / "README.md").exists()  # only the skills/ folder is kept
    assert fetched.path.is_relative_to(skills.cache_root())

    # The branch moves on: the ref was pinned the first time, so every later trial gets the same files...
    (repo / "skills" / "testing" / "SKILL.md").write_text("changed\n")
    second_sha = _commit(repo, "second")

    def no_network(*args: Any, **kwargs: Any) -> str:
        raise AssertionError(f"git was called again: {args}")

    monkeypatch.setattr(skills, "_git", no_network)
    again = skills.fetch(source)
    assert again == fetched
    monkeypatch.undo()

    # ...while another ref is its own fetch.
    pinned = skills.fetch(f"{source}@{second_sha}")
    assert pinned.sha == second_sha and (pinned.path / "testing" / "SKILL.md").read_text() == "changed\n"
    _git(repo, "tag", "v1", first_sha)
    tagged = skills.fetch(f"{source}@v1")
    assert tagged.sha == first_sha and tagged.path == fetched.path  # same commit, same cached folder


def test_github_shorthands_clone_from_the_configured_github(tmp_path: Path, settings: Any) -> None:
    _skills_repo(tmp_path / "github" / "acme" / "skills.git")
    settings.HARNESS_SKILLS_GITHUB_URL = f"file://{tmp_path / 'github'}"
    fetched = skills.fetch("acme/skills@main")
    assert fetched.source == "acme/skills@main"
    assert (fetched.path / "testing" / "SKILL.md").is_file()
    assert skills.cached("acme/skills@main") == fetched
    assert skills.cached("acme/skills@other") is None


def test_a_repository_without_a_skills_folder_or_ref_is_a_clear_error(tmp_path: Path) -> None:
    repo = tmp_path / "plain"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hi\n")
    _commit(repo, "only a readme")
    with pytest.raises(skills.SkillFetchError, match="has no skills/ folder"):
        skills.fetch(f"file://{repo}")
    with pytest.raises(skills.SkillFetchError, match="no ref 'nope'"):
        skills.fetch(f"file://{repo}@nope")
    with pytest.raises(skills.SkillFetchError, match="ls-remote failed"):
        skills.fetch(f"file://{tmp_path / 'missing'}")
    assert skills.cached(f"file://{repo}") is None  # nothing half-written is pinned
