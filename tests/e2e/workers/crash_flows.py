"""Workflows of the crash tests: every activity body appends one line per run to a log file.

A body's input names a folder. Each run of a body appends a JSON line (its
step, idempotency key, attempt and pid) to ``<folder>/<step>.log``, so the
logs count exactly which bodies ran, in which process. A file
``<folder>/block-<step>`` makes that body write ``<folder>/running-<step>``
and wait until the block file goes (or a bound passes): the test SIGKILLs
the process while it waits. A file ``<folder>/fail-once-<step>`` makes the
body's next run fail once (the file is consumed).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

# A blocked body gives up after this long, so a worker whose test died
# cannot linger for ever.
BLOCK_LIMIT_SECONDS = 60.0
STEP_POLL_SECONDS = 0.01


def _enter(ctx: ActivityContext, payload: dict[str, Any]) -> tuple[Path, str]:
    """Record this run of the body durably, then fail once if told to."""
    folder = Path(payload["dir"])
    step = str(payload["step"])
    line = {
        "step": step,
        "key": ctx.idempotency_key(),
        "attempt": ctx.info().attempt,
        "pid": os.getpid(),
    }
    with open(folder / f"{step}.log", "a") as log:
        log.write(json.dumps(line, sort_keys=True) + "\n")
        log.flush()
        os.fsync(log.fileno())
    fail_flag = folder / f"fail-once-{step}"
    if fail_flag.exists():
        fail_flag.unlink()
        raise RuntimeError(f"{step} failed once on purpose")
    return folder, step


def announce(path: Path, text: str) -> None:
    """Write a marker file the test polls for, all at once (written aside, then renamed)."""
    aside = path.with_name(path.name + ".tmp")
    aside.write_text(text)
    aside.rename(path)


def _blocked(folder: Path, step: str) -> bool:
    """Whether the test asked this step to block; announce it once when so."""
    if not (folder / f"block-{step}").exists():
        return False
    announce(folder / f"running-{step}", str(os.getpid()))
    return True


@activity
def fetch(ctx: ActivityContext, payload: dict[str, Any]) -> str:
    """A sync body (it runs off the loop thread)."""
    folder, step = _enter(ctx, payload)
    if _blocked(folder, step):
        deadline = time.monotonic() + BLOCK_LIMIT_SECONDS
        while (folder / f"block-{step}").exists() and time.monotonic() < deadline:
            time.sleep(STEP_POLL_SECONDS)
    return f"{step} done"


@activity
async def transform(ctx: ActivityContext, payload: dict[str, Any]) -> str:
    """An async body (it runs on the runtime's event loop)."""
    folder, step = _enter(ctx, payload)
    if _blocked(folder, step):
        for _ in range(int(BLOCK_LIMIT_SECONDS / STEP_POLL_SECONDS)):
            if not (folder / f"block-{step}").exists():
                break
            await asyncio.sleep(STEP_POLL_SECONDS)
    return f"{step} done"


@activity(retry=RetryPolicy(max_attempts=3, initial_interval="20ms"))
def publish(ctx: ActivityContext, payload: dict[str, Any]) -> str:
    """A sync body with retries: a re-run after a crash keeps its attempt number."""
    return fetch(ctx, payload)


def _step(payload: dict[str, Any], step: str) -> dict[str, Any]:
    return {"dir": payload["dir"], "step": step}


@workflow
async def pipeline(ctx: WorkflowContext, payload: dict[str, Any]) -> list[str]:
    """fetch, then two transforms side by side, then publish."""
    fetched = await ctx.execute_activity(fetch, _step(payload, "fetch"))
    first, second = await asyncio.gather(
        ctx.execute_activity(transform, _step(payload, "transform-1")),
        ctx.execute_activity(transform, _step(payload, "transform-2")),
    )
    published = await ctx.execute_activity(publish, _step(payload, "publish"))
    return [fetched, first, second, published]


PIPELINE_STEPS = ("fetch", "transform-1", "transform-2", "publish")


@workflow
async def order(ctx: WorkflowContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Guide §13: reserve, wait for approval, ship."""
    reserved = await ctx.execute_activity(fetch, _step(payload, "reserve"))
    approval = await ctx.wait_for_signal("approve")
    shipped = await ctx.execute_activity(fetch, _step(payload, "ship"))
    return {"reserved": reserved, "approval": approval, "shipped": shipped}


def register(rt: SqliteRuntime) -> None:
    """What every session registers (registrations live in memory, guide §10)."""
    for wf in (pipeline, order):
        rt.register_workflow(wf)
    for act in (fetch, transform, publish):
        rt.register_activity(act)


async def drive(rt: SqliteRuntime, exec_id: Any) -> RunState:
    """Drive a run until it ends or waits on a signal, riding out retry backoff."""
    while True:
        state = await rt.run_until_blocked(exec_id)
        if not isinstance(state, RunState.WaitingTimer):
            return state
        await asyncio.sleep(STEP_POLL_SECONDS)
