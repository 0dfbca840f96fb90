"""run_trial is synchronous; a caller whose thread already runs an event loop (Playwright's sync API in a test
process, an async view) must still be able to call it. CI once failed every container test after a browser test."""

from __future__ import annotations

import asyncio
import threading

import pytest

from selfbench.harbor_adapter import _run_to_completion


async def _where() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


def test_runs_in_this_thread_when_no_loop_is_running() -> None:
    assert _run_to_completion(_where()) == threading.current_thread().name


def test_runs_on_a_thread_of_its_own_under_a_running_loop_and_returns_or_raises() -> None:
    async def caller() -> str:
        return _run_to_completion(_where())  # blocks this loop on purpose, as a sync caller would

    assert asyncio.run(caller()) == "harbor-trial"

    async def failing() -> None:
        raise ValueError("boom")

    async def caller_of_failure() -> None:
        _run_to_completion(failing())

    with pytest.raises(ValueError, match="boom"):
        asyncio.run(caller_of_failure())
