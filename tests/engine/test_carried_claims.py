"""Claims a pass carries to the next one survive that pass failing on storage.

A follow-up decision claims its run's next task and the next pass runs the
body. If that pass cannot ask the store which claims it still holds (the
database went away for a moment), the claims must stay with the runtime:
dropped, their tasks would stay RUNNING under this worker, renewed by its
lease timer on Postgres, and the run would never finish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvest_engine import (
    ActivityContext,
    StorageError,
    WorkflowContext,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvest_engine import SqliteRuntime


@activity
async def add_one(ctx: ActivityContext, x: int) -> int:
    return x + 1


@workflow
async def three_adds(ctx: WorkflowContext, x: int) -> int:
    for _ in range(3):
        x = await ctx.execute_activity(add_one, x)
    return x


async def test_a_carried_claim_survives_a_pass_whose_store_read_fails(
    open_rt: Callable[..., SqliteRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_rt()
    rt.register_workflow(three_adds)
    rt.register_activity(add_one)
    exec_id = rt.start_workflow("three_adds", 0)
    assert await rt.poll_once()
    assert (
        rt._driver.group.has_carried
    )  # the next step, claimed by the follow-up decision

    held = rt.store.claimed_task_ids
    failures = [StorageError(path="db", reason="server closed the connection")]

    def away_once(task_ids: Sequence[int]) -> set[int]:
        if failures:
            raise failures.pop()
        return held(task_ids)

    monkeypatch.setattr(rt.store, "claimed_task_ids", away_once)
    with pytest.raises(StorageError):
        await rt.poll_once()

    for _ in range(10):
        if not await rt.poll_once():
            break
    assert rt.describe(exec_id).state == "COMPLETED"
    assert rt.describe(exec_id).output.value == 3
