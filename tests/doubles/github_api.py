"""A GitHub REST API double: a real HTTP server on 127.0.0.1 in a thread, answering with GitHub-shaped JSON.

It serves what SelfBench reads: `GET /repos/{o}/{r}`, `/branches/{b}`, `/pulls?state=closed` (paginated, with a
Link header), `/pulls/{n}`, `/pulls/{n}/files` (paginated). Tokens are checked (401 "Bad credentials"), unknown
repositories answer 404, and failures can be scripted: rate-limit replies (403 with x-ratelimit-* headers, or 429
with retry-after), 5xx, and dropped connections. Every request is recorded in `requests` for call counting.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class FakeFile:
    filename: str
    additions: int = 0
    deletions: int = 0
    binary: bool = False
    status: str = "modified"

    def as_json(self, sha: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "sha": sha,
            "filename": self.filename,
            "status": self.status,
            "additions": 0 if self.binary else self.additions,
            "deletions": 0 if self.binary else self.deletions,
            "changes": 0 if self.binary else self.additions + self.deletions,
            "blob_url": f"https://github.com/x/y/blob/{sha}/{self.filename}",
            "raw_url": f"https://github.com/x/y/raw/{sha}/{self.filename}",
            "contents_url": f"https://api.github.com/repos/x/y/contents/{self.filename}?ref={sha}",
        }
        if not self.binary:
            lines = [f"+added line {i}" for i in range(self.additions)] + [
                f"-removed line {i}" for i in range(self.deletions)
            ]
            data["patch"] = f"@@ -1,{self.deletions} +1,{self.additions} @@\n" + "\n".join(lines)
        return data


@dataclass
class FakePull:
    number: int
    title: str
    body: str = ""
    author: str = "alice"
    author_type: str = "User"
    merged: bool = True
    merged_at: datetime | None = None
    files: list[FakeFile] = field(default_factory=list)
    base_sha: str = ""
    head_sha: str = ""
    merge_sha: str = ""

    def as_json(self, repo: FakeRepo, base_url: str) -> dict[str, Any]:
        full = repo.full_name
        merged_at = self.merged_at.isoformat().replace("+00:00", "Z") if self.merged and self.merged_at else None
        created = (self.merged_at or datetime(2025, 1, 1, tzinfo=UTC)) - timedelta(days=2)
        user = {
            "login": self.author,
            "id": abs(hash(self.author)) % 10**8,
            "type": self.author_type,
            "site_admin": False,
            "avatar_url": f"https://avatars.githubusercontent.com/u/{abs(hash(self.author)) % 10**8}?v=4",
            "html_url": f"https://github.com/{self.author}",
        }
        return {
            "url": f"{base_url}/repos/{full}/pulls/{self.number}",
            "id": 1_000_000 + self.number,
            "node_id": f"PR_kwDO{self.number:08d}",
            "html_url": f"https://github.com/{full}/pull/{self.number}",
            "diff_url": f"https://github.com/{full}/pull/{self.number}.diff",
            "number": self.number,
            "state": "closed",
            "locked": False,
            "title": self.title,
            "user": user,
            "body": self.body or None,
            "labels": [],
            "created_at": created.isoformat().replace("+00:00", "Z"),
            "updated_at": (self.merged_at or created).isoformat().replace("+00:00", "Z"),
            "closed_at": (self.merged_at or created).isoformat().replace("+00:00", "Z"),
            "merged_at": merged_at,
            "merge_commit_sha": self.merge_sha or f"{self.number:040x}",
            "draft": False,
            "head": {
                "label": f"{self.author}:feature-{self.number}",
                "ref": f"feature-{self.number}",
                "sha": self.head_sha or f"{self.number + 7_000_000:040x}",
                "user": user,
            },
            "base": {
                "label": f"{full.split('/')[0]}:{repo.default_branch}",
                "ref": repo.default_branch,
                "sha": self.base_sha or f"{self.number + 9_000_000:040x}",
            },
            "author_association": "CONTRIBUTOR",
            "auto_merge": None,
        }


@dataclass
class FakeRepo:
    full_name: str
    default_branch: str = "main"
    head_sha: str = "c0ffee" + "0" * 34
    private: bool = True
    clone_url: str = ""
    pulls: list[FakePull] = field(default_factory=list)
    branches: dict[str, str] = field(default_factory=dict)

    def as_json(self, base_url: str) -> dict[str, Any]:
        owner, name = self.full_name.split("/")
        return {
            "id": abs(hash(self.full_name)) % 10**9,
            "node_id": "R_kgDO" + name,
            "name": name,
            "full_name": self.full_name,
            "private": self.private,
            "owner": {"login": owner, "type": "Organization"},
            "html_url": f"https://github.com/{self.full_name}",
            "url": f"{base_url}/repos/{self.full_name}",
            "clone_url": self.clone_url or f"https://github.com/{self.full_name}.git",
            "default_branch": self.default_branch,
            "visibility": "private" if self.private else "public",
            "permissions": {"admin": False, "push": True, "pull": True},
        }


@dataclass
class Failure:
    """A scripted reply for the next request whose path starts with `path_prefix`."""

    path_prefix: str
    kind: str  # "rate_limit" | "secondary_rate_limit" | "server_error" | "drop"
    reset_in: int = 1


class GitHubDouble:
    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.tokens: set[str] = {"ghp_" + "T" * 36}
        self.requests: list[str] = []
        self.failures: list[Failure] = []
        self.remaining = 5000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def token(self) -> str:
        return next(iter(self.tokens))

    def start(self) -> GitHubDouble:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add_repo(self, repo: FakeRepo) -> FakeRepo:
        self.repos[repo.full_name.lower()] = repo
        return repo

    def fail_next(self, path_prefix: str, kind: str, *, times: int = 1, reset_in: int = 1) -> None:
        for _ in range(times):
            self.failures.append(Failure(path_prefix, kind, reset_in))

    def calls(self, contains: str = "") -> int:
        return sum(1 for r in self.requests if contains in r)

    # --- HTTP ---------------------------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes; without NODELAY, Nagle + delayed ACK add ~40 ms per reply.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                double._handle(self)

        return Handler

    def _take_failure(self, path: str) -> Failure | None:
        with self._lock:
            for i, failure in enumerate(self.failures):
                if path.startswith(failure.path_prefix):
                    return self.failures.pop(i)
        return None

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(h.path)
        path = parsed.path
        query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
        with self._lock:
            self.requests.append(h.path)
        failure = self._take_failure(path)
        if failure is not None:
            if failure.kind == "drop":
                # Close without a reply: the client sees a RemoteProtocolError / connection reset.
                h.close_connection = True
                h.connection.shutdown(2)
                return
            if failure.kind == "server_error":
                return self._send(h, 502, {"message": "Server Error"})
            reset = int(time.time()) + failure.reset_in
            if failure.kind == "secondary_rate_limit":
                return self._send(
                    h,
                    429,
                    {
                        "message": "You have exceeded a secondary rate limit.",
                        "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                    },
                    {"retry-after": str(failure.reset_in)},
                )
            return self._send(
                h,
                403,
                {
                    "message": "API rate limit exceeded for user ID 1.",
                    "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
                },
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
            )
        auth = h.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else ""
        if token not in self.tokens:
            return self._send(
                h,
                401,
                {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"},
            )
        parts = [p for p in path.split("/") if p]
        if len(parts) < 3 or parts[0] != "repos":
            return self._not_found(h)
        repo = self.repos.get(f"{parts[1]}/{parts[2]}".lower())
        if repo is None:
            return self._not_found(h)
        rest = parts[3:]
        if not rest:
            return self._send(h, 200, repo.as_json(self.url))
        if rest[0] == "branches" and len(rest) == 2:
            sha = repo.head_sha if rest[1] == repo.default_branch else repo.branches.get(rest[1])
            if sha is None:
                return self._send(h, 404, {"message": "Branch not found", "status": "404"})
            return self._send(h, 200, {"name": rest[1], "commit": {"sha": sha, "url": ""}, "protected": True})
        if rest[0] == "pulls" and len(rest) == 1:
            pulls = sorted(repo.pulls, key=lambda p: p.merged_at or datetime.min.replace(tzinfo=UTC), reverse=True)
            if query.get("state", "open") != "closed":
                pulls = []
            return self._page(h, path, query, [p.as_json(repo, self.url) for p in pulls])
        if rest[0] == "pulls" and len(rest) >= 2 and rest[1].isdigit():
            pull = next((p for p in repo.pulls if p.number == int(rest[1])), None)
            if pull is None:
                return self._not_found(h)
            if len(rest) == 2:
                data = pull.as_json(repo, self.url)
                data.update(
                    merged=pull.merged,
                    commits=1,
                    additions=sum(f.additions for f in pull.files),
                    deletions=sum(f.deletions for f in pull.files),
                    changed_files=len(pull.files),
                )
                return self._send(h, 200, data)
            if rest[2] == "files":
                items = [f.as_json(f"{i:040x}") for i, f in enumerate(pull.files)]
                return self._page(h, path, query, items)
        return self._not_found(h)

    def _page(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, str], items: list[Any]) -> None:
        per_page = min(int(query.get("per_page", 30)), 100)
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        links = []
        base = {k: v for k, v in query.items() if k != "page"}

        def link(n: int, rel: str) -> str:
            qs = "&".join(f"{k}={v}" for k, v in {**base, "page": n}.items())
            return f'<{self.url}{path}?{qs}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        headers = {"Link": ", ".join(links)} if links else {}
        self._send(h, 200, chunk, headers)

    def _not_found(self, h: BaseHTTPRequestHandler) -> None:
        self._send(
            h, 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}
        )

    def _send(self, h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        with self._lock:
            self.remaining = max(0, self.remaining - 1)
            remaining = self.remaining
        h.send_response(status)
        h.send_header("Content-Type", "application/json; charset=utf-8")
        h.send_header("Content-Length", str(len(payload)))
        h.send_header("x-ratelimit-limit", "5000")
        h.send_header("x-ratelimit-used", str(5000 - remaining))
        h.send_header("x-ratelimit-resource", "core")
        h.send_header("x-github-api-version-selected", "2022-11-28")
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        if not headers or "x-ratelimit-remaining" not in headers:
            h.send_header("x-ratelimit-remaining", str(remaining))
            h.send_header("x-ratelimit-reset", str(int(time.time()) + 3600))
        h.end_headers()
        h.wfile.write(payload)


def impl_file(path: str, lines: int) -> FakeFile:
    return FakeFile(filename=path, additions=lines, deletions=0)


def sized_pull(number: int, *, impl_paths: int, lines_per_path: int, tests: int = 1, **kw: Any) -> FakePull:
    """A merged PR: `impl_paths` implementation files of `lines_per_path` added lines, plus `tests` test files."""
    merged_at = kw.pop("merged_at", datetime(2025, 6, 1, tzinfo=UTC) + timedelta(hours=number))
    files = [impl_file(f"src/pkg/module_{number}_{i}.py", lines_per_path) for i in range(impl_paths)]
    files += [FakeFile(filename=f"tests/test_module_{number}_{i}.py", additions=15) for i in range(tests)]
    return FakePull(
        number=number, title=kw.pop("title", f"Change number {number}"), merged_at=merged_at, files=files, **kw
    )


def running(double: GitHubDouble) -> Iterator[GitHubDouble]:
    """Start `double`, yield it, stop it: for fixtures."""
    double.start()
    try:
        yield double
    finally:
        double.stop()
