"""Gateway bench: added latency (direct vs via the gateway, interleaved in one run), then 200 concurrent streams
held for 30 s on one uvicorn worker: dropped chunks, ledger rows vs calls, CPU per stream.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sb_gateway_bench DEBUG=1 .venv/bin/python bench/gateway_bench.py

The upstream is the scripted double from tests/doubles (its own process); the gateway is `uvicorn
selfbench.asgi:application` (its own process, one worker), so its CPU time can be read from /proc alone.
Options: --calls N (latency samples per side), --streams N, --hold S, --events-per-s N, --chunks N.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "selfbench.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/sb_gateway_bench")
PY = str(ROOT / ".venv" / "bin" / "python")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_database() -> None:
    import psycopg

    url = os.environ["DATABASE_URL"]
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    subprocess.run([PY, "manage.py", "migrate", "-v", "0"], cwd=ROOT, check=True)


def start_upstream() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([PY, "-m", "tests.doubles.llm_upstream"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, f"http://127.0.0.1:{int(line.split()[1])}"


def start_gateway(upstream: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "OPENAI_BASE_URL": upstream, "LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "uvicorn",
            "selfbench.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--no-access-log",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("gateway did not start")


def setup_keys(run: str, n: int) -> list[str]:
    import django

    django.setup()
    from apps.accounts import services as account_services
    from apps.gateway import services
    from tests.factories import make_user, make_workspace

    workspace = make_workspace(slug=f"bench-{run}", owner=make_user(username=f"bench-{run}"))
    owner = workspace.memberships.get(role="owner")
    credential = account_services.credential_create(
        workspace=workspace, by=owner, name="bench openai", kind="openai", secret="sk-bench-upstream-000000"
    )
    keys = []
    for i in range(n):
        _, raw = services.trial_key_mint(
            workspace=workspace,
            subject=f"bench:{run}:{i}",
            models=[services.ModelRoute("gpt-5", credential)],
            ttl_seconds=3600,
        )
        keys.append(raw)
    return keys


def ledger_rows(run: str) -> tuple[int, int]:
    from apps.gateway.models import GatewayCall

    rows = GatewayCall.objects.filter(subject__startswith=f"bench:{run}:")
    return rows.count(), rows.filter(status="ok").count()


def body(stream: bool, directives: str) -> bytes:
    return json.dumps(
        {"model": "gpt-5", "stream": stream, "messages": [{"role": "user", "content": f"bench {directives}"}]}
    ).encode()


async def one_call(
    session: aiohttp.ClientSession, url: str, key: str, payload: bytes
) -> tuple[float, float, float | None]:
    """(total ms, time to first byte ms, gateway-reported overhead ms)."""
    t0 = time.perf_counter()
    async with session.post(
        url, data=payload, headers={"authorization": f"Bearer {key}", "content-type": "application/json"}
    ) as resp:
        first = None
        async for _ in resp.content.iter_any():
            if first is None:
                first = time.perf_counter()
        overhead = resp.headers.get("x-gateway-overhead-ms")
        assert resp.status == 200, resp.status
    end = time.perf_counter()
    return (end - t0) * 1000, ((first or end) - t0) * 1000, float(overhead) if overhead else None


async def latency_phase(gateway: str, upstream: str, key: str, calls: int) -> dict[str, object]:
    results: dict[str, dict[str, list[float]]] = {}
    overheads: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for kind, stream, directives in (("non-streamed", False, "@chunks=20"), ("streamed", True, "@chunks=50")):
            direct_total: list[float] = []
            via_total: list[float] = []
            direct_ttfb: list[float] = []
            via_ttfb: list[float] = []
            payload = body(stream, directives)
            for _ in range(10):  # warm both paths (connections, key cache)
                await one_call(session, f"{upstream}/v1/chat/completions", key, payload)
                await one_call(session, f"{gateway}/gateway/openai/v1/chat/completions", key, payload)
            for _ in range(calls):
                total, ttfb, _ = await one_call(session, f"{upstream}/v1/chat/completions", key, payload)
                direct_total.append(total)
                direct_ttfb.append(ttfb)
                total, ttfb, overhead = await one_call(
                    session, f"{gateway}/gateway/openai/v1/chat/completions", key, payload
                )
                via_total.append(total)
                via_ttfb.append(ttfb)
                if overhead is not None:
                    overheads.append(overhead)
            results[kind] = {"direct": direct_total, "via": via_total, "direct_ttfb": direct_ttfb, "via_ttfb": via_ttfb}

    print(f"\n== Added latency: {calls} interleaved calls per side (chat completions, gpt-5) ==")
    for kind, r in results.items():
        metric, dkey, vkey = (
            ("total", "direct", "via") if kind == "non-streamed" else ("TTFB", "direct_ttfb", "via_ttfb")
        )
        d50, d95, v50, v95 = pct(r[dkey], 50), pct(r[dkey], 95), pct(r[vkey], 50), pct(r[vkey], 95)
        print(
            f"{kind:13s} {metric:5s} direct p50 {d50:6.2f} p95 {d95:6.2f} ms"
            f" | via gateway p50 {v50:6.2f} p95 {v95:6.2f} ms"
            f" | added p50 {v50 - d50:+6.2f} p95 {v95 - d95:+6.2f} ms"
        )
        if kind == "streamed":
            t50 = pct(r["via"], 50) - pct(r["direct"], 50)
            t95 = pct(r["via"], 95) - pct(r["direct"], 95)
            print(f"{'':13s} total added p50 {t50:+6.2f} p95 {t95:+6.2f} ms (50 chunks)")
    print(
        "x-gateway-overhead-ms (self-time before first byte): "
        f"p50 {pct(overheads, 50):.2f} p95 {pct(overheads, 95):.2f}"
    )
    return {"via_calls": 2 * (calls + 10)}  # two kinds, each with 10 warm-up calls


async def hold_phase(
    gateway: str, keys: list[str], hold: float, events_per_s: float, chunks: int, pid: int, upstream_pid: int
) -> dict[str, float]:
    delay_ms = 1000 / events_per_s
    payload = body(True, f"@chunks={chunks} @delay_ms={delay_ms:g}")
    url = f"{gateway}/gateway/openai/v1/chat/completions"
    stats: dict[str, float] = {"calls": 0, "completed": 0, "failed": 0, "dropped": 0, "events": 0}
    ttfbs: list[float] = []
    durations: list[float] = []
    stop_at = time.monotonic() + hold

    async def worker(session: aiohttp.ClientSession, key: str, offset: float) -> None:
        await asyncio.sleep(offset)  # stagger starts so streams do not tick in lockstep
        while time.monotonic() < stop_at:
            stats["calls"] += 1
            t0 = time.perf_counter()
            received = 0
            try:
                async with session.post(
                    url, data=payload, headers={"authorization": f"Bearer {key}", "content-type": "application/json"}
                ) as resp:
                    first = True
                    async for line in resp.content:
                        if first:
                            ttfbs.append((time.perf_counter() - t0) * 1000)
                            first = False
                        if line.startswith(b"data: {") and b'"content":"tok' in line:
                            received += 1
                    ok = resp.status == 200
            except aiohttp.ClientError:
                ok = False
            durations.append(time.perf_counter() - t0)
            stats["events"] += received
            if ok:
                stats["completed"] += 1
                stats["dropped"] += chunks - received
            else:
                stats["failed"] += 1

    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        cpu0, wall0 = cpu_seconds(pid), time.monotonic()
        up0, me0 = cpu_seconds(upstream_pid), time.process_time()
        await asyncio.gather(
            *(worker(session, k, i * (chunks * delay_ms / 1000) / len(keys)) for i, k in enumerate(keys))
        )
        cpu1, wall1 = cpu_seconds(pid), time.monotonic()
        stats["upstream_cpu_s"] = cpu_seconds(upstream_pid) - up0
        stats["client_cpu_s"] = time.process_time() - me0
    stats.update(
        cpu_s=cpu1 - cpu0,
        wall_s=wall1 - wall0,
        ttfb_p50=pct(ttfbs, 50),
        ttfb_p95=pct(ttfbs, 95),
        dur_p50=pct(durations, 50),
        dur_p95=pct(durations, 95),
        ideal=chunks * delay_ms / 1000,
    )
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--hold", type=float, default=30.0)
    parser.add_argument("--events-per-s", type=float, default=20.0)
    parser.add_argument("--chunks", type=int, default=100)
    args = parser.parse_args()

    ensure_database()
    run = uuid.uuid4().hex[:8]
    keys = setup_keys(run, args.streams)
    upstream_proc, upstream = start_upstream()
    gateway_proc, gateway = start_gateway(upstream)
    try:
        print(f"upstream {upstream} (pid {upstream_proc.pid}); gateway {gateway} (pid {gateway_proc.pid}, 1 worker)")
        print(f"machine: {os.cpu_count()} CPUs; gateway RSS at start {rss_mb(gateway_proc.pid):.0f} MB")
        lat = asyncio.run(latency_phase(gateway, upstream, keys[0], args.calls))
        s = asyncio.run(
            hold_phase(gateway, keys, args.hold, args.events_per_s, args.chunks, gateway_proc.pid, upstream_proc.pid)
        )
        cpu_pct = 100 * s["cpu_s"] / s["wall_s"]
        print(
            f"\n== {args.streams} concurrent streams held {args.hold:.0f} s "
            f"({args.chunks} chunks at {args.events_per_s:g} events/s each) =="
        )
        print(f"streams: {s['calls']:.0f} started, {s['completed']:.0f} completed, {s['failed']:.0f} failed")
        print(f"dropped chunks: {s['dropped']:.0f} of {s['events'] + s['dropped']:.0f}")
        print(f"relayed events: {s['events']:.0f} ({s['events'] / s['wall_s']:.0f}/s)")
        print(
            f"gateway CPU: {s['cpu_s']:.2f} s over {s['wall_s']:.1f} s = {cpu_pct:.1f}% of one core; "
            f"{cpu_pct / args.streams:.3f}% of a core per concurrent stream; "
            f"{1000 * s['cpu_s'] / max(s['completed'], 1):.1f} ms CPU per completed stream; "
            f"{1e6 * s['cpu_s'] / max(s['events'], 1):.0f} µs per relayed event"
        )
        print(
            f"stream time p50 {s['dur_p50']:.2f} s p95 {s['dur_p95']:.2f} s (ideal {s['ideal']:.2f} s); "
            f"TTFB under load p50 {s['ttfb_p50']:.1f} ms p95 {s['ttfb_p95']:.1f} ms"
        )
        print(
            f"same window, other processes: upstream double {100 * s['upstream_cpu_s'] / s['wall_s']:.0f}% of a core, "
            f"bench client {100 * s['client_cpu_s'] / s['wall_s']:.0f}%; load average now {os.getloadavg()[0]:.1f} "
            f"on {os.cpu_count()} CPUs"
        )
        print(f"gateway RSS after: {rss_mb(gateway_proc.pid):.0f} MB")
        expected = int(s["calls"]) + int(lat["via_calls"])
        rows = (0, 0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rows = ledger_rows(run)
            if rows[0] >= expected:
                break
            time.sleep(0.5)
        print(f"ledger rows: {rows[0]} for {expected} calls via the gateway ({rows[1]} ok)")
    finally:
        gateway_proc.terminate()
        upstream_proc.terminate()
        gateway_proc.wait(30)
        upstream_proc.wait(30)


if __name__ == "__main__":
    main()
