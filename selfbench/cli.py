"""`self-bench`: the operator CLI for registry grants and task exports, over the workspace API (standard library only).

Environment: SELFBENCH_API_URL (default http://127.0.0.1:8000), SELFBENCH_API_TOKEN (an `sbk_` API key) and
SELFBENCH_WORKSPACE (the workspace slug; or --workspace).

    self-bench grant create --task 12 --task 13 [--ttl 3h] [--note …] [--wait]   registry credentials for those
        task images (returns at once while the images are built; --wait polls until the grant is ready)
    self-bench grant status GRANT_ID [--wait] · grant cancel GRANT_ID · grant list   (also `self-bench status|…`)
    self-bench export create (--repository N | --task N …)              an archive; prints its SHA-256 and a warning
    self-bench download EXPORT_ID [-o FILE]                             verifies the SHA-256, writes create-only
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from time import monotonic, sleep
from typing import Any, NoReturn

DEFAULT_URL = "http://127.0.0.1:8000"
EXPORT_NOTICE = "Exports include tasks, hidden tests and reference solutions, unencrypted. Keep them private."


class CliError(Exception):
    """A failure to report on stderr with exit status 1."""


class Api:
    def __init__(self, base: str, token: str, workspace: str) -> None:
        self.base = base.rstrip("/")
        self.token = token
        self.workspace = workspace

    def url(self, path: str) -> str:
        return f"{self.base}/api/w/{self.workspace}/{path.lstrip('/')}"

    def open(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url(path), data=data, method=method)  # noqa: S310 - URL from the operator
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            return urllib.request.urlopen(request, timeout=600)  # noqa: S310
        except urllib.error.HTTPError as exc:
            raise CliError(f"{method} {path}: HTTP {exc.code}: {_detail(exc)}") from exc
        except urllib.error.URLError as exc:
            raise CliError(f"cannot reach {self.base}: {exc.reason}") from exc

    def json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        with self.open(method, path, body) as response:
            return json.loads(response.read() or b"null")


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read())
    except ValueError:
        return exc.reason or "error"
    return str(body.get("detail") or body) if isinstance(body, dict) else str(body)


def parse_ttl(value: str) -> int:
    """Seconds from `90`, `45m`, `3h` or `2d`."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        if value and value[-1] in units:
            return int(float(value[:-1]) * units[value[-1]])
        return int(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a duration: {value!r} (use 90, 45m, 3h, 2d)") from exc


def _print(args: argparse.Namespace, data: Any, lines: list[str]) -> None:
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print("\n".join(lines))


def _grant_lines(g: dict[str, Any]) -> list[str]:
    lines = [f"grant {g['id']}  {g['status']}  expires {g['expiresAt']}" + (f"  ({g['note']})" if g["note"] else "")]
    lines += [f"  task {i['taskId']}: {i['repository']}@{i['digest'] or '(building)'}" for i in g["images"]]
    if g.get("failureReason"):
        lines.append(f"  failed: {g['failureReason']}")
    return lines


def _pull_lines(g: dict[str, Any]) -> list[str]:
    return ["pull:", *[f"  {ref}" for ref in g["pull"]]] if g.get("pull") else []


def _credential_lines(g: dict[str, Any]) -> list[str]:
    return [
        f"registry: {g['registry']}",
        f"username: {g['username']}",
        f"password: {g['password']}",
        "The password is shown once; anyone holding it can pull these images until the grant expires or is cancelled.",
    ]


def wait_for_grant(api: Api, grant_id: str, *, timeout: float, interval: float) -> dict[str, Any]:
    """Poll the grant until its images are no longer building (or it is cancelled or expired), or the timeout."""
    deadline = monotonic() + timeout
    while True:
        g: dict[str, Any] = api.json("GET", f"registry-grants/{grant_id}")
        if g["status"] != "building" or monotonic() >= deadline:
            return g
        sleep(max(0.0, min(interval, deadline - monotonic())))


def _check_ready(g: dict[str, Any], timeout: float) -> None:
    if g["status"] == "building":
        raise CliError(
            f"grant {g['id']} is still building after {timeout:g} s; wait again with: self-bench grant status "
            f"{g['id']} --wait"
        )
    if g["status"] == "failed":
        raise CliError(f"grant {g['id']} failed: {g['failureReason']}")
    if g["status"] != "active":
        raise CliError(f"grant {g['id']} is {g['status']}")


def grant_create(api: Api, args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"tasks": args.task, "note": args.note}
    if args.ttl is not None:
        body["ttlSeconds"] = args.ttl
    g = api.json("POST", "registry-grants", body)
    credentials = {k: g[k] for k in ("registry", "username", "password")}
    if not args.wait:
        hint = f"Its images are being built; pull references appear with: self-bench grant status {g['id']} --wait"
        _print(args, g, [*_grant_lines(g), *_credential_lines(g), *([] if g["pull"] else [hint]), *_pull_lines(g)])
        return
    if not args.json:
        # The credentials first: they are shown once, whatever happens to the wait (timeout, failure, Ctrl-C).
        print("\n".join([*_grant_lines(g), *_credential_lines(g), "waiting for the images to be built…"]), flush=True)
    try:
        polled = wait_for_grant(api, g["id"], timeout=args.timeout, interval=args.interval)
    except KeyboardInterrupt as exc:
        if args.json:
            print(json.dumps(g, indent=1))  # still the only time the password is shown
        raise CliError(f"interrupted; wait again with: self-bench grant status {g['id']} --wait") from exc
    final = {**polled, **credentials}
    if args.json:
        print(json.dumps(final, indent=1))
    _check_ready(final, args.timeout)
    if not args.json:
        print("\n".join([*_grant_lines(final), *_pull_lines(final)]))


def grant_status(api: Api, args: argparse.Namespace) -> None:
    if args.wait:
        g = wait_for_grant(api, args.id, timeout=args.timeout, interval=args.interval)
    else:
        g = api.json("GET", f"registry-grants/{args.id}")
    _print(args, g, [*_grant_lines(g), *_pull_lines(g)])
    if args.wait:
        _check_ready(g, args.timeout)


def grant_list(api: Api, args: argparse.Namespace) -> None:
    rows = api.json("GET", "registry-grants")
    _print(args, rows, [line for g in rows for line in _grant_lines(g)] or ["no grants"])


def grant_cancel(api: Api, args: argparse.Namespace) -> None:
    g = api.json("POST", f"registry-grants/{args.id}/cancel")
    _print(args, g, _grant_lines(g))


def export_create(api: Api, args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"tasks": args.task or []}
    if args.repository is not None:
        body["repository"] = args.repository
    print(f"warning: {EXPORT_NOTICE}", file=sys.stderr)
    e = api.json("POST", "exports", body)
    lines = [f"export {e['id']}: {len(e['taskIds'])} tasks, {e['size']} bytes, sha256 {e['sha256']}"]
    _print(args, e, [*lines, f"download: self-bench download {e['id']}"])


def download(api: Api, args: argparse.Namespace) -> None:
    meta = api.json("GET", f"exports/{args.id}")
    dest = Path(args.output or f"selfbench-export-{meta['id']}.tar.gz")
    if dest.exists():
        raise CliError(f"{dest} exists; download writes create-only (choose another -o)")
    print(f"warning: {meta.get('warning') or EXPORT_NOTICE}", file=sys.stderr)
    expected = meta["sha256"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, api.open("GET", f"exports/{args.id}/download") as response:
            announced = response.headers.get("X-Content-SHA256")
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        got = digest.hexdigest()
        if got != expected or (announced and announced != expected):
            raise CliError(f"SHA-256 mismatch: expected {expected}, got {got}; nothing written")
        try:
            os.link(tmp, dest)  # create-only: fails rather than replace a file that appeared meanwhile
        except FileExistsError as exc:
            raise CliError(f"{dest} appeared during the download; nothing overwritten") from exc
    finally:
        tmp.unlink(missing_ok=True)
    _print(args, {**meta, "path": str(dest)}, [f"{dest}: sha256 {expected} verified"])


def _wait_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait", action="store_true", help="poll until the images are built (exit 1 unless ready)")
    p.add_argument("--timeout", type=parse_ttl, default=1800, help="how long --wait polls, e.g. 30m (the default)")
    p.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="self-bench", description="SelfBench registry grants and task exports.")
    p.add_argument("--workspace", default=os.environ.get("SELFBENCH_WORKSPACE", ""), help="workspace slug")
    p.add_argument("--json", action="store_true", help="print the API's JSON")
    sub = p.add_subparsers(dest="command", required=True)

    grant = sub.add_parser("grant", help="registry grants").add_subparsers(dest="action", required=True)
    create = grant.add_parser("create", help="grant pulling these tasks' images by digest")
    create.add_argument("--task", type=int, action="append", required=True, help="an approved task id (repeat)")
    create.add_argument("--ttl", type=parse_ttl, default=None, help="lifetime, e.g. 3h (the default)")
    create.add_argument("--note", default="")
    _wait_options(create)
    create.set_defaults(run=grant_create)
    for name, fn, helptext in (("status", grant_status, "show a grant"), ("cancel", grant_cancel, "cancel a grant")):
        for where in (grant, sub):
            c = where.add_parser(name, help=helptext)
            c.add_argument("id")
            if fn is grant_status:
                _wait_options(c)
            c.set_defaults(run=fn)
    for where in (grant, sub):
        where.add_parser("list", help="list grants").set_defaults(run=grant_list)

    export = sub.add_parser("export", help="task exports").add_subparsers(dest="action", required=True)
    ex = export.add_parser("create", help="archive approved tasks (hidden tests and solutions included)")
    ex.add_argument("--repository", type=int)
    ex.add_argument("--task", type=int, action="append")
    ex.set_defaults(run=export_create)

    dl = sub.add_parser("download", help="download an export, verify its SHA-256, write create-only")
    dl.add_argument("id")
    dl.add_argument("-o", "--output")
    dl.set_defaults(run=download)
    return p


def fail(message: str) -> NoReturn:
    print(f"self-bench: {message}", file=sys.stderr)
    raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    token = os.environ.get("SELFBENCH_API_TOKEN", "")
    if not token:
        fail("set SELFBENCH_API_TOKEN to a workspace API key (sbk_…)")
    if not args.workspace:
        fail("set SELFBENCH_WORKSPACE (or --workspace) to the workspace slug")
    api = Api(os.environ.get("SELFBENCH_API_URL", DEFAULT_URL), token, args.workspace)
    try:
        args.run(api, args)
    except CliError as exc:
        fail(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
