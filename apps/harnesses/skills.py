"""Skill sources: the shapes a harness accepts, and a cache that fetches each repository's skills/ folder once per ref.

A source is `org/repo`, `org/repo@ref`, or a git URL (`https://…`, `ssh://…`, `git@host:…`, `file://…`), optionally
with `@ref` after its last path segment. GitHub shorthands clone from settings.HARNESS_SKILLS_GITHUB_URL.
The cache lives under MEDIA_ROOT/skills: `refs/<key>.json` pins what a ref resolved to the first time it was used
(so every later trial gets the same files), and `<key>/<sha>/` holds that commit's skills/ folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from selfbench.errors import InvalidInput

SKILLS_FOLDER = "skills"
GIT_TIMEOUT_SEC = 120

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_REF = r"[A-Za-z0-9][A-Za-z0-9._/+-]*"
_SHORTHAND = re.compile(rf"^(?P<org>{_NAME})/(?P<repo>{_NAME})(?:@(?P<ref>{_REF}))?$")
_URL = re.compile(r"^(?:(?:https?|ssh|git|file)://\S+|git@[A-Za-z0-9.-]+:\S+)$")
_GITHUB_URL = re.compile(
    rf"^https://github\.com/(?P<org>{_NAME})/(?P<repo>{_NAME}?)(?:\.git)?/?(?:tree/(?P<ref>{_REF}?))?/?$"
)
_SHA = re.compile(r"^[0-9a-f]{40}$")


class SkillFetchError(Exception):
    """A skill source could not be resolved or fetched (unreachable, unknown ref, no skills/ folder)."""


@dataclass(frozen=True)
class SkillSource:
    """One normalized source: `text` is how it is stored and shown; `url` and `ref` are what git is given."""

    text: str
    url: str
    ref: str | None

    @property
    def key(self) -> str:
        """A filesystem-safe name for the repository (the ref is not part of it)."""
        readable = re.sub(r"[^A-Za-z0-9._-]+", "-", self.url.split("://", 1)[-1]).strip("-.")[-80:]
        return f"{readable}-{hashlib.sha256(self.url.encode()).hexdigest()[:12]}"


def github_url() -> str:
    return str(getattr(settings, "HARNESS_SKILLS_GITHUB_URL", "https://github.com")).rstrip("/")


def parse(raw: str) -> SkillSource:
    """Check a source's shape and normalize it; raise InvalidInput naming the accepted shapes."""
    text = raw.strip() if isinstance(raw, str) else ""
    match = _GITHUB_URL.match(text)
    if match and match["repo"]:
        repo = match["repo"].removesuffix(".git")
        ref = (match["ref"] or "").rstrip("/") or None
        return _shorthand(match["org"], repo, ref)
    match = _SHORTHAND.match(text)
    if match:
        return _shorthand(match["org"], match["repo"].removesuffix(".git"), match["ref"])
    if _URL.match(text):
        url, ref = text, None
        tail = text.rsplit("/", 1)[-1]
        if "@" in tail:
            url, ref = text.rsplit("@", 1)
            if not re.fullmatch(_REF, ref):
                raise InvalidInput(f"skill {raw!r}: {ref!r} is not a git ref")
        return SkillSource(text=url.rstrip("/") + (f"@{ref}" if ref else ""), url=url.rstrip("/"), ref=ref)
    raise InvalidInput(f"skill {raw!r}: use org/repo, org/repo@ref, or a git URL (https://…, file://…)")


def _shorthand(org: str, repo: str, ref: str | None) -> SkillSource:
    text = f"{org}/{repo}" + (f"@{ref}" if ref else "")
    return SkillSource(text=text, url=f"{github_url()}/{org}/{repo}.git", ref=ref)


def normalize(raw: list[str]) -> list[str]:
    """Parse every source, drop repeats (keeping the first), and list every problem at once."""
    problems: list[str] = []
    seen: list[str] = []
    for item in raw:
        try:
            text = parse(item).text
        except InvalidInput as exc:
            problems.append(exc.message)
            continue
        if text not in seen:
            seen.append(text)
    if problems:
        raise InvalidInput("; ".join(problems), errors={"skills": problems})
    return seen


# --- the cache ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchedSkills:
    source: str
    sha: str
    path: Path  # a directory whose children each hold a SKILL.md


def cache_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "skills"


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_SEC, env=env, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise SkillFetchError(f"git {args[0]} timed out after {GIT_TIMEOUT_SEC} s") from exc
    if proc.returncode != 0:
        raise SkillFetchError(f"git {args[0]} failed: {(proc.stderr or proc.stdout).strip()[-400:]}")
    return proc.stdout


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _ref_file(source: SkillSource) -> Path:
    ref = source.ref or "HEAD"
    return cache_root() / "refs" / source.key / f"{hashlib.sha256(ref.encode()).hexdigest()[:16]}.json"


def cached(source_text: str) -> FetchedSkills | None:
    """What this source was pinned to, if it was fetched before (never touches the network)."""
    source = parse(source_text)
    pin = _ref_file(source)
    if not pin.is_file():
        return None
    sha = json.loads(pin.read_text())["sha"]
    path = cache_root() / source.key / sha / SKILLS_FOLDER
    return FetchedSkills(source.text, sha, path) if path.is_dir() else None


def fetch(source_text: str) -> FetchedSkills:
    """The source's skills/ folder, fetched the first time its ref is used and read from the cache after."""
    source = parse(source_text)
    hit = cached(source.text)
    if hit is not None:
        return hit
    with _locked(cache_root() / "locks" / f"{source.key}.lock"):
        hit = cached(source.text)
        if hit is not None:
            return hit
        sha = _resolve(source)
        dest = cache_root() / source.key / sha
        if not (dest / SKILLS_FOLDER).is_dir():
            _checkout(source, sha, dest)
        pin = _ref_file(source)
        pin.parent.mkdir(parents=True, exist_ok=True)
        pin.write_text(json.dumps({"source": source.text, "url": source.url, "ref": source.ref, "sha": sha}))
        return FetchedSkills(source.text, sha, dest / SKILLS_FOLDER)


def _resolve(source: SkillSource) -> str:
    if source.ref and _SHA.match(source.ref):
        return source.ref
    wanted = source.ref or "HEAD"
    out = _git("ls-remote", source.url, wanted)
    rows = [line.split("\t") for line in out.splitlines() if "\t" in line]
    # Prefer an exact name, then a tag's peeled commit, then a branch.
    by_name = {name: sha for sha, name in rows}
    for name in (wanted, f"refs/tags/{wanted}^{{}}", f"refs/tags/{wanted}", f"refs/heads/{wanted}"):
        if name in by_name:
            return by_name[name]
    if rows:
        return rows[0][0]
    raise SkillFetchError(f"{source.text}: no ref {wanted!r} in {source.url}")


def _checkout(source: SkillSource, sha: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest.parent))
    try:
        repo = work / "repo"
        _git("init", "-q", str(repo))
        _git("remote", "add", "origin", source.url, cwd=repo)
        try:
            _git("fetch", "-q", "--depth", "1", "origin", sha, cwd=repo)
        except SkillFetchError:
            # Servers that refuse a fetch by commit id: fetch the ref by name, then check it is the pinned commit.
            _git("fetch", "-q", "--depth", "1", "origin", source.ref or "HEAD", cwd=repo)
        got = _git("rev-parse", "FETCH_HEAD", cwd=repo).strip()
        if got != sha:
            raise SkillFetchError(f"{source.text}: fetched {got[:12]}, expected {sha[:12]}")
        _git("-c", "advice.detachedHead=false", "checkout", "-q", "--detach", sha, cwd=repo)
        folder = repo / SKILLS_FOLDER
        if not folder.is_dir():
            raise SkillFetchError(f"{source.text}: the repository has no {SKILLS_FOLDER}/ folder at {sha[:12]}")
        staged = work / "out"
        staged.mkdir()
        shutil.copytree(folder, staged / SKILLS_FOLDER, symlinks=False, ignore=shutil.ignore_patterns(".git"))
        if dest.exists():
            shutil.rmtree(dest)
        os.rename(staged, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fetch_all(sources: list[str]) -> list[FetchedSkills]:
    """Each source's skills (for the worker, right before a trial hands them to Harbor)."""
    return [fetch(s) for s in sources]
