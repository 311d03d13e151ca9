"""The GUI's determinism check understands patch markers, as WorkflowReplayer does."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from harvest_engine import SqliteReader, SqliteRuntime, WorkflowContext, workflow
from harvest_gui.inspect.replay_check import check_determinism
from tests.gui.history_app import step, steps_v1

if TYPE_CHECKING:
    from pathlib import Path


@workflow(name="steps")
async def steps_patched(ctx: WorkflowContext, n: int) -> Any:
    """steps_v1 with a patch: new runs sleep between the two steps."""
    a = await ctx.execute_activity(step, n)
    if ctx.patched("pause"):
        await ctx.sleep(1)
    b = await ctx.execute_activity(step, a)
    go = await ctx.wait_for_signal("go")
    return [a, b, go, await ctx.execute_activity(step, b)]


def run_once(path: Path, code: Any) -> str:
    """One run of `code` under the name "steps", driven to its wait for go."""
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(code)
        rt.register_activity(step)
        exec_id = str(rt.start_workflow("steps", 1))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_blocked(exec_id))
        finally:
            loop.close()
    return exec_id


def test_patched_code_checks_clean_against_old_and_marked_histories(
    tmp_path: Path,
) -> None:
    path = tmp_path / "steps.db"
    old = run_once(path, steps_v1)
    marked = run_once(path, steps_patched)
    with SqliteReader.open(path) as reader:
        old_history = reader.load_history(old)
        marked_history = reader.load_history(marked)
    assert "MarkerRecorded" in [e.type for e in marked_history]

    assert check_determinism([steps_patched], old_history).clean
    assert check_determinism([steps_patched], marked_history).clean
    stale = check_determinism([steps_v1], marked_history)
    assert not stale.clean
    assert "Timer" in stale.recorded
