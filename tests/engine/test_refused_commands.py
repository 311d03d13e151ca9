"""A refused client command is settled at once, not kept until the one-day purge (both stores).

A command whose reply is an error changed nothing, so nothing needs its row
for an at-most-once retry: the client removes it once it read the reply, and
the serving loop's purge takes one whose client never read it after a
minute. An accepted command keeps its row (a retry under its id must still
find it) until the day is out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    CommandTimedOut,
    ExecutionNotFound,
    ManualClock,
    UnknownWorkflow,
    WorkflowContext,
    workflow,
)
from harvest_engine.runtime.serving import commands
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@workflow
async def waiter(ctx: WorkflowContext, _: Any) -> str:
    await ctx.wait_for_signal("go")
    return "done"


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    for found in served_store(request, tmp_path, clock=ManualClock()):
        found.rt.register_workflow(waiter)
        yield found


def command_ids(served: ServedStore) -> list[str]:
    return [
        r[0] for r in served.rows("SELECT command_id FROM harvest_commands ORDER BY id")
    ]


async def test_a_refused_command_leaves_no_row_once_its_client_read_the_refusal(
    served: ServedStore,
) -> None:
    with served.client() as client:
        async with served.serving():
            exec_id = await client.start_workflow("waiter", None, command_id="ok-1")
            with pytest.raises(UnknownWorkflow):
                await client.start_workflow("nope", None, command_id="bad-1")
            with pytest.raises(ExecutionNotFound):
                await client.send_signal("no-such-run", "go", command_id="bad-2")
            await client.send_signal(exec_id, "go", command_id="ok-2")
    assert command_ids(served) == ["ok-1", "ok-2"]


async def test_a_refused_command_nobody_read_is_purged_after_a_minute_not_a_day(
    served: ServedStore,
) -> None:
    exec_id = served.rt.start_workflow("waiter", None)
    with served.client() as client:
        # Queued by a client that goes away before the replies (a short timeout).
        with pytest.raises(CommandTimedOut):
            await client.send_signal(
                "no-such-run", "go", timeout="1ms", command_id="bad"
            )
        with pytest.raises(CommandTimedOut):
            await client.send_signal(exec_id, "go", timeout="1ms", command_id="ok")
    commands.apply_pending(served.rt._engine)
    assert command_ids(served) == ["bad", "ok"]
    served.rt.clock.advance("2m")
    commands.purge_applied(served.rt._engine)
    assert command_ids(served) == ["ok"]
    served.rt.clock.advance("1d")
    commands.purge_applied(served.rt._engine)
    assert command_ids(served) == []
