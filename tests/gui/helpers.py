"""Helpers for GUI tests: demo-free workflows and a file maker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    ActivityContext,
    SqliteRuntime,
    WorkflowContext,
    WorkflowLogPolicy,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]


async def async_wait_until(pred: Callable[[], Any], seconds: float = 3.0) -> None:
    """`qtbot.waitUntil` for async bodies (which must not start a nested Qt loop)."""
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.01)


@workflow
async def waits_for_go(ctx: WorkflowContext, arg: Any) -> Any:
    """A run that waits for a "go" signal, then returns its payload."""
    ctx.log(f"waiting, arg={arg!r}")
    return await ctx.wait_for_signal("go")


@workflow
async def quick(ctx: WorkflowContext, arg: Any) -> Any:
    """A run that completes at once."""
    return arg


@activity
def stamp(ctx: ActivityContext, label: str) -> str:
    """An activity step that records its label."""
    return f"stamped {label}"


@workflow
async def three_steps(ctx: WorkflowContext, arg: Any) -> Any:
    """Three activity steps in a row (a run to fork from)."""
    return [await ctx.execute_activity(stamp, label) for label in ("a", "b", "c")]


@workflow
async def reporter(ctx: WorkflowContext, arg: Any) -> Any:
    """Sets events and writes a "ticks" stream, one value per "tick" signal, until "end"."""
    ctx.set_event("phase", "started")
    ctx.set_current_details("waiting for ticks")
    n = 0
    while True:
        value = await ctx.wait_for_signal("tick")
        if value == "end":
            break
        n += 1
        ctx.write_stream("ticks", value)
        ctx.set_event("ticks seen", n)
    ctx.close_stream("ticks")
    ctx.set_event("phase", "done")
    return n


def make_runs(
    path: Path, n: int, *, finish: int = 0, name: str = "waits_for_go"
) -> list[str]:
    """Create `path` with `n` runs of `name`; the first `finish` are signalled and completed."""
    rt = SqliteRuntime.open(path)
    try:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(quick)
        rt.set_workflow_log_policy(WorkflowLogPolicy())
        ids = [
            str(rt.start_workflow_with_id(name, f"wf-{i:05d}", {"i": i}))
            for i in range(n)
        ]

        async def drive() -> None:
            await rt.run_until_idle()
            for exec_id in ids[:finish]:
                rt.send_signal(exec_id, "go", "done")
            await rt.run_until_idle()

        # A private loop: asyncio.run would reset the current loop a test may have set.
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(drive())
        finally:
            loop.close()
        return ids
    finally:
        rt.close()


WORKFLOWS = [waits_for_go, quick]
"""The `--app` convention: this module's workflows, registered on a writer session."""


@contextmanager
def serving(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Serve `path` from another process (tests/gui/workers/server.py) until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/gui/workers/server.py"), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    with proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            yield proc
        finally:
            stop_serving(proc)


def stop_serving(proc: subprocess.Popen[str]) -> None:
    """Ask the serving process to quit and wait for it (safe twice)."""
    if proc.poll() is None and proc.stdin is not None:
        proc.stdin.write("quit\n")
        proc.stdin.flush()
    proc.wait(timeout=10)
