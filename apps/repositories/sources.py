"""Where merged PRs come from: the GitHub REST API or a local git repository, behind one small interface.

Both yield `PullInfo` (the provenance facts) and `FileChange` lists (for analysis), so batches never care which kind
of repository they read. Network and subprocess access live here and nowhere else in the app.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

import httpx
from django.conf import settings

from apps.repositories.analysis import FileChange, parse_numstat

DEFAULT_BOT_AUTHORS = ("dependabot", "renovate", "github-actions", "greenkeeper", "snyk-bot", "pre-commit-ci")


@dataclass(frozen=True)
class PullInfo:
    """A merged PR as its source describes it, before redaction."""

    number: int
    title: str
    body: str
    author: str
    author_is_bot: bool
    merged_at: datetime
    base_sha: str
    head_sha: str
    merge_sha: str
    url: str = ""


class SourceError(Exception):
    """A repository source failed; `message` is safe to show (it never contains the token)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AuthFailed(SourceError):
    pass


class RepoNotFound(SourceError):
    pass


class PullNotFound(SourceError):
    pass


class RateLimited(SourceError):
    def __init__(self, message: str, *, reset_at: datetime) -> None:
        super().__init__(message)
        self.reset_at = reset_at


class Unavailable(SourceError):
    """The source could not be reached after retries (network errors, 5xx)."""


class PullSource(Protocol):
    calls: int

    def head_sha(self, branch: str) -> str: ...

    def merged_pulls(self, *, limit: int) -> list[PullInfo]: ...

    def pull(self, number: int) -> PullInfo: ...

    def files(self, pull: PullInfo) -> list[FileChange]: ...


def bot_authors() -> tuple[str, ...]:
    return tuple(getattr(settings, "REPOSITORIES_BOT_AUTHORS", None) or DEFAULT_BOT_AUTHORS)


def is_bot(login: str, *, user_type: str = "") -> bool:
    """GitHub `type: Bot`, a `[bot]` login, or a name on the configured list."""
    name = login.strip().lower()
    if user_type == "Bot" or name.endswith("[bot]"):
        return True
    return name in {b.lower() for b in bot_authors()}


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- GitHub ---------------------------------------------------------------------------------------------------------


class GitHubSource:
    """The GitHub REST API with a token: merged PRs by pagination, one `files` call per PR that is analysed."""

    def __init__(
        self,
        *,
        full_name: str,
        token: str,
        base_url: str | None = None,
        retries: int | None = None,
        backoff: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.full_name = full_name
        self.base_url = (base_url or settings.GITHUB_API_URL).rstrip("/")
        self.retries = retries if retries is not None else int(getattr(settings, "GITHUB_RETRIES", 3))
        self.backoff = backoff if backoff is not None else float(getattr(settings, "GITHUB_RETRY_BACKOFF", 1.0))
        self.sleep = sleep
        self.calls = 0
        self._client = httpx.Client(
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "selfbench",
            },
            timeout=httpx.Timeout(30.0, connect=10.0),
        )

    def close(self) -> None:
        self._client.close()

    def _get(self, url: str, params: dict[str, Any] | None = None) -> httpx.Response:
        if not url.startswith("http"):
            url = f"{self.base_url}{url}"
        attempt = 0
        while True:
            attempt += 1
            self.calls += 1
            try:
                response = self._client.get(url, params=params)
            except httpx.TransportError as exc:
                # Connection resets and timeouts are usually transient: back off exponentially, then give up.
                if attempt > self.retries:
                    raise Unavailable(f"GitHub unreachable after {attempt} attempts: {type(exc).__name__}") from exc
                self.sleep(self.backoff * 2 ** (attempt - 1))
                continue
            if response.status_code >= 500:
                if attempt > self.retries:
                    raise Unavailable(f"GitHub answered {response.status_code} after {attempt} attempts")
                self.sleep(self.backoff * 2 ** (attempt - 1))
                continue
            self._raise_for(response)
            return response

    def _raise_for(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        message = _message(response)
        limited = status == 429 or (
            status == 403
            and (
                response.headers.get("x-ratelimit-remaining") == "0"
                or "retry-after" in response.headers
                or "rate limit" in message.lower()
            )
        )
        if limited:
            raise RateLimited(f"GitHub rate limit: {message}", reset_at=_reset_at(response))
        if status == 401:
            raise AuthFailed("GitHub rejected the token (401 Bad credentials)")
        if status in (403, 404):
            raise RepoNotFound(f"GitHub: {self.full_name} not found, or the token cannot read it ({status})")
        raise SourceError(f"GitHub answered {status}: {message}")

    def repo(self) -> dict[str, Any]:
        data: dict[str, Any] = self._get(f"/repos/{self.full_name}").json()
        return data

    def head_sha(self, branch: str) -> str:
        data = self._get(f"/repos/{self.full_name}/branches/{branch}").json()
        return str(data["commit"]["sha"])

    def merged_pulls(self, *, limit: int) -> list[PullInfo]:
        # Closed PRs, most recently updated first; merged ones carry merged_at. Page size 100 keeps the listing of
        # 500 merged PRs near 5–8 calls, and no per-PR call is made here.
        pulls: list[PullInfo] = []
        max_pages = int(getattr(settings, "GITHUB_MAX_LIST_PAGES", 30))
        url: str | None = f"/repos/{self.full_name}/pulls"
        params: dict[str, Any] | None = {"state": "closed", "sort": "updated", "direction": "desc", "per_page": 100}
        pages = 0
        while url and len(pulls) < limit and pages < max_pages:
            response = self._get(url, params)
            pages += 1
            for item in response.json():
                if not item.get("merged_at"):
                    continue
                info = self._pull_info(item)
                if info.author_is_bot:
                    continue
                pulls.append(info)
                if len(pulls) >= limit:
                    break
            url = response.links.get("next", {}).get("url")
            params = None  # the next link carries them
        pulls.sort(key=lambda p: (p.merged_at, p.number), reverse=True)
        return pulls

    def pull(self, number: int) -> PullInfo:
        try:
            item = self._get(f"/repos/{self.full_name}/pulls/{number}").json()
        except RepoNotFound as exc:
            raise PullNotFound(f"PR #{number} not found in {self.full_name}") from exc
        if not item.get("merged_at"):
            raise PullNotFound(f"PR #{number} is not merged")
        return self._pull_info(item)

    def files(self, pull: PullInfo) -> list[FileChange]:
        files: list[FileChange] = []
        url: str | None = f"/repos/{self.full_name}/pulls/{pull.number}/files"
        params: dict[str, Any] | None = {"per_page": 100}
        while url:
            response = self._get(url, params)
            for item in response.json():
                # GitHub omits `patch` for binary files (and for very large text diffs, which then carry counts).
                binary = "patch" not in item and item.get("changes", 0) == 0 and item.get("status") != "removed"
                files.append(
                    FileChange(
                        path=item["filename"],
                        additions=int(item.get("additions", 0)),
                        deletions=int(item.get("deletions", 0)),
                        binary=binary,
                        status=item.get("status", "modified"),
                        previous_path=item.get("previous_filename", ""),
                    )
                )
            url = response.links.get("next", {}).get("url")
            params = None
        return files

    def _pull_info(self, item: dict[str, Any]) -> PullInfo:
        user = item.get("user") or {}
        login = str(user.get("login", ""))
        return PullInfo(
            number=int(item["number"]),
            title=item.get("title") or "",
            body=item.get("body") or "",
            author=login,
            author_is_bot=is_bot(login, user_type=str(user.get("type", ""))),
            merged_at=_parse_time(item["merged_at"]),
            base_sha=item["base"]["sha"],
            head_sha=item["head"]["sha"],
            merge_sha=item.get("merge_commit_sha") or "",
            url=item.get("html_url", ""),
        )


def _message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    return str(data.get("message", "")) if isinstance(data, dict) else ""


def _reset_at(response: httpx.Response) -> datetime:
    now = time.time()
    retry_after = response.headers.get("retry-after")
    if retry_after and retry_after.isdigit():
        return datetime.fromtimestamp(now + int(retry_after), tz=UTC)
    reset = response.headers.get("x-ratelimit-reset")
    if reset and reset.isdigit():
        return datetime.fromtimestamp(max(int(reset), now), tz=UTC)
    # GitHub's advice for secondary limits without headers: wait at least a minute.
    return datetime.fromtimestamp(now + 60, tz=UTC)


# --- local git ------------------------------------------------------------------------------------------------------

_MERGE_SUBJECT = re.compile(r"^Merge pull request #(?P<number>\d+) from (?P<source>\S+)")
_SQUASH_SUBJECT = re.compile(r"^(?P<title>.*\S)\s+\(#(?P<number>\d+)\)$")
_RECORD = "\x1e"
_FIELD = "\x00"


def local_path(location: str) -> Path:
    """A local repository's directory from a path or a file:// URL."""
    if location.startswith("file://"):
        return Path(unquote(urlparse(location).path))
    return Path(location).expanduser()


def git(path: Path, *args: str, timeout: float = 120) -> str:
    """Run git in `path` and return stdout; a failure becomes a SourceError with git's own message."""
    try:
        done = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"git {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise SourceError(f"git {args[0]} failed: {done.stderr.strip()[:300]}")
    return done.stdout


class LocalGitSource:
    """A local git repository: merge commits `Merge pull request #N` and squash commits `Title (#N)` are its PRs."""

    def __init__(self, *, location: str, default_branch: str) -> None:
        self.path = local_path(location)
        self.default_branch = default_branch
        self.calls = 0
        self._head = ""

    def check(self) -> str:
        """Raise RepoNotFound unless this is a git repository; return its current branch name."""
        if not self.path.is_dir():
            raise RepoNotFound(f"{self.path} is not a directory")
        try:
            git(self.path, "rev-parse", "--git-dir")
        except SourceError as exc:
            raise RepoNotFound(f"{self.path} is not a git repository") from exc
        try:
            return git(self.path, "symbolic-ref", "--short", "HEAD").strip()
        except SourceError:
            return self.default_branch

    def head_sha(self, branch: str) -> str:
        self.calls += 1
        try:
            self._head = git(self.path, "rev-parse", "--verify", f"{branch}^{{commit}}").strip()
        except SourceError as exc:
            raise RepoNotFound(f"branch {branch!r} not found in {self.path}") from exc
        return self._head

    def merged_pulls(self, *, limit: int) -> list[PullInfo]:
        head = self._head or self.head_sha(self.default_branch)
        self.calls += 1
        out = git(
            self.path,
            "log",
            "--first-parent",
            # git expands %x00 / %x1e itself: argv cannot carry NUL bytes.
            "--format=%H%x00%P%x00%an%x00%ae%x00%cI%x00%B%x1e",
            head,
        )
        pulls: list[PullInfo] = []
        seen: set[int] = set()
        for record in out.split(_RECORD):
            info = self._parse(record.strip("\n"))
            if info is None or info.number in seen or info.author_is_bot:
                continue
            seen.add(info.number)
            pulls.append(info)
            if len(pulls) >= limit:
                break
        return pulls

    def pull(self, number: int) -> PullInfo:
        for info in self.merged_pulls(limit=10**6):
            if info.number == number:
                return info
        raise PullNotFound(f"PR #{number} has no merge or squash commit on {self.default_branch}")

    def files(self, pull: PullInfo) -> list[FileChange]:
        self.calls += 1
        return parse_numstat(git(self.path, "diff", "--numstat", "-M", pull.base_sha, pull.merge_sha))

    def _parse(self, record: str) -> PullInfo | None:
        if not record:
            return None
        sha, parents, name, email, date, message = record.split(_FIELD, 5)
        parent_list = parents.split()
        subject, _, rest = message.partition("\n")
        merge = _MERGE_SUBJECT.match(subject)
        if merge and len(parent_list) >= 2:
            # GitHub's merge message: subject, blank line, PR title, blank line, PR body.
            title, _, body = rest.strip("\n").partition("\n")
            author = merge["source"].split("/", 1)[0] if "/" in merge["source"] else name
            return PullInfo(
                number=int(merge["number"]),
                title=title.strip(),
                body=body.strip("\n"),
                author=author,
                author_is_bot=is_bot(author) or is_bot(name),
                merged_at=_parse_time(date),
                base_sha=parent_list[0],
                head_sha=parent_list[1],
                merge_sha=sha,
            )
        squash = _SQUASH_SUBJECT.match(subject)
        if squash and len(parent_list) == 1:
            return PullInfo(
                number=int(squash["number"]),
                title=squash["title"],
                body=rest.strip("\n"),
                author=name,
                author_is_bot=is_bot(name) or "[bot]@" in email,
                merged_at=_parse_time(date),
                base_sha=parent_list[0],
                head_sha=sha,
                merge_sha=sha,
            )
        return None
