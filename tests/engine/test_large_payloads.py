"""Payloads near the caps travel whole on both stores: starts, signals, updates, activity results.

A statement carrying about 1 MB used to hang the Postgres store's pipelined
write forever (psycopg stopped sending it half way and waited for an answer
the server could not give: `store/sql/pipeline_sync.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    HistoryCaps,
    PayloadTooLarge,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_BYTES
from harvest_engine.shaping import MAX_INPUT_BYTES_CEILING
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]

# Under the 2 MiB payload cap once JSON-quoted, over the ~1 MB that hung.
NEAR_CAP = MAX_PAYLOAD_BYTES - 1024

pytestmark = pytest.mark.timeout(60)


@activity
def echo_big(ctx: ActivityContext, size: int) -> str:
    return "a" * size


@workflow(max_input_bytes=MAX_INPUT_BYTES_CEILING)
async def carrier(ctx: WorkflowContext, blob: str) -> dict[str, int]:
    seen = {"input": len(blob)}

    async def grow(arg: str) -> str:
        return "u" * len(arg)

    ctx.register_update_handler("grow", None, grow)
    seen["signal"] = len(await ctx.wait_for_signal("big"))
    seen["activity"] = len(await ctx.execute_activity(echo_big, NEAR_CAP))
    return seen


async def test_near_cap_payloads_travel_on_every_path(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(carrier)
    rt.register_activity(echo_big)
    run = rt.start_workflow("carrier", "s" * (3 * 1024 * 1024))
    assert await rt.run_until_blocked(run) == RunState.WaitingSignal(name="big")
    assert await rt.update(run, "grow", "g" * NEAR_CAP) == "u" * NEAR_CAP
    rt.send_signal(run, "big", "b" * NEAR_CAP)
    await rt.run_until_blocked(run)
    assert rt.outcome(run) == ExecutionOutcome.Completed(
        output={
            "input": 3 * 1024 * 1024,
            "signal": NEAR_CAP,
            "activity": NEAR_CAP,
        }
    )


async def test_over_cap_payloads_are_refused_and_write_nothing(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(carrier)
    rt.register_activity(echo_big)
    with pytest.raises(PayloadTooLarge):
        rt.start_workflow("carrier", "s" * (MAX_INPUT_BYTES_CEILING + 1))
    assert sum(rt.counts_by_state().values()) == 0
    run = rt.start_workflow("carrier", "small")
    assert await rt.run_until_blocked(run) == RunState.WaitingSignal(name="big")
    before = len(rt.load_history(run))
    with pytest.raises(PayloadTooLarge):
        rt.send_signal(run, "big", "b" * (MAX_PAYLOAD_BYTES + 1))
    with pytest.raises(PayloadTooLarge):
        await rt.update(run, "grow", "g" * (MAX_PAYLOAD_BYTES + 1))
    await rt.run_until_blocked(run)
    assert len(rt.load_history(run)) == before


def test_an_input_at_the_ceiling_fits_the_default_history_cap() -> None:
    # A start input the workflow accepts must not fail its run at the first
    # decision: the WorkflowStarted event holds it, and room stays for the
    # events of a run's life (a fifth of the cap, as should_continue_as_new).
    cap = HistoryCaps().max_bytes
    assert cap is not None
    assert cap * 4 // 5 >= MAX_INPUT_BYTES_CEILING


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    yield from served_store(request, tmp_path)


async def test_near_cap_payloads_travel_from_a_client(served: ServedStore) -> None:
    served.rt.register_workflow(carrier)
    served.rt.register_activity(echo_big)
    with served.client() as client:
        async with served.serving():
            run = await client.start_workflow("carrier", "s" * (3 * 1024 * 1024))
            assert await client.update(run, "grow", "g" * NEAR_CAP) == "u" * NEAR_CAP
            await client.send_signal(run, "big", "b" * NEAR_CAP)
            outcome = await client.result(run, timeout=30)
    assert outcome == ExecutionOutcome.Completed(
        output={"input": 3 * 1024 * 1024, "signal": NEAR_CAP, "activity": NEAR_CAP}
    )
