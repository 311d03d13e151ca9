"""Progress that lasts: rollback never shows, summaries survive a reopen, a reader resumes after a kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    HarvestClient,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    WorkflowPanicked,
    workflow,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine import Runtime
    from tests.stores import Databases

PANIC = {"on": True}
CHILD = Path(__file__).with_name("progress_child.py")
ROOT = Path(__file__).resolve().parents[2]


@workflow
async def writes_then_panics(ctx: WorkflowContext, _: Any) -> str:
    """Writes progress, then (while PANIC is on) fails the decision with a bug."""
    ctx.write_stream("s", "v0")
    ctx.set_event("e", "set")
    ctx.set_current_details("half way")
    if PANIC["on"]:
        return {"a": 1}["missing"]  # a panic: the cycle rolls back
    ctx.close_stream("s")
    return "done"


@workflow
async def labelled(ctx: WorkflowContext, _: Any) -> str:
    """Says what it does, then parks."""
    ctx.set_current_details("waiting for go")
    await ctx.wait_for_signal("go")
    return "went"


async def test_a_rolled_back_decision_leaves_no_progress(
    open_rt: Callable[..., Runtime],
) -> None:
    rt = open_rt()
    rt.register_workflow(writes_then_panics)
    PANIC["on"] = True
    try:
        exec_id = rt.start_workflow("writes_then_panics", None)
        with pytest.raises(WorkflowPanicked):
            await rt.run_until_blocked(exec_id)
        assert rt.store.execution(str(exec_id)).panic_count == 1  # type: ignore[union-attr]
        assert rt.events(exec_id) == {}
        assert rt.describe(exec_id).current_details is None
        assert await rt.get_event(exec_id, "e", timeout="10ms") is None
        assert rt.store.stream_items(str(exec_id), "s", 0) == []
        PANIC["on"] = False
        await rt.run_until_blocked(exec_id)
    finally:
        PANIC["on"] = True
    assert [v async for v in rt.read_stream(exec_id, "s")] == [(0, "v0")]
    assert rt.events(exec_id) == {"e": "set"}
    assert rt.describe(exec_id).current_details == "half way"


async def test_summary_details_and_current_details_survive_a_reopen(
    open_rt: Callable[..., Runtime],
) -> None:
    rt = open_rt()
    rt.register_workflow(labelled)
    started = rt.start_workflow_with_options(
        "labelled", None, StartOptions(summary="nightly import", details="from S3")
    )
    exec_id = started.exec_id
    await rt.run_until_blocked(exec_id)
    rt.close()
    again = open_rt()
    again.register_workflow(labelled)
    detail = again.describe(exec_id)
    assert (detail.summary, detail.details, detail.current_details) == (
        "nightly import",
        "from S3",
        "waiting for go",
    )
    assert again.list_executions().executions[0].summary == "nightly import"
    # A replay of the run (a fresh instance) says it again: the same text stays.
    again.send_signal(exec_id, "go")
    await again.run_until_blocked(exec_id)
    assert again.describe(exec_id).current_details == "waiting for go"


def _serve(path: Path | str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "serving"
    return proc


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)


async def test_a_reader_resumes_from_its_offset_after_the_server_is_killed(
    databases: Databases, tmp_path: Path
) -> None:
    where: Path | str = tmp_path / "p.db"
    if databases.server is None:
        SqliteRuntime.open(where).close()
    else:
        where = databases.dsn(tmp_path)
    proc = _serve(where)
    try:
        opened = (
            HarvestClient.connect(where)
            if isinstance(where, str)
            else HarvestClient.open(where)
        )
        with opened as client:
            exec_id = await client.start_workflow("chatter", 3)
            assert await client.get_event(exec_id, "ready", timeout="10s") is True
            await client.send_signal(exec_id, "more", "go")
            seen: list[tuple[int, Any]] = []
            async for item in client.read_stream(exec_id, "out"):
                seen.append(item)
                if len(seen) == 2:
                    break
            _kill(proc)
            proc = _serve(where)
            await client.send_signal(exec_id, "more", "go", timeout="10s")
            await client.send_signal(exec_id, "more", "end", timeout="10s")
            resumed = [
                item
                async for item in client.read_stream(
                    exec_id, "out", offset=seen[-1][0] + 1
                )
            ]
    finally:
        _kill(proc)
    values = [v for _, v in seen + resumed]
    assert values == list(range(6))
    assert [o for o, _ in seen + resumed] == list(range(6))
