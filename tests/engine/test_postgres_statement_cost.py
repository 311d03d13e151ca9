"""What a 3-activity run costs a Postgres worker: statements and round trips per run.

The worker's connection is traced by libpq itself (every protocol message
it sends), while one PostgresRuntime drives a batch of runs to completion
with passes. A statement is an Execute (or a simple Query); a round trip
is a Sync or a Flush, after which the worker waits for the server. The
budgets hold the batch locks (batch_locks.py): a decision batch and a
record batch each lock their runs in one round trip, and the rows, flags
and short histories read with the locks spare each decision its own reads;
and a decision's savepoint is not released (pipelined.roll_back_to).
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING

from psycopg import pq

from harvest_engine import (
    ActivityContext,
    PostgresReader,
    PostgresRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.store.postgres.store import PostgresStore

if TYPE_CHECKING:
    from pathlib import Path

RUNS = 20
# Per run, every run queued before the passes, the passes' own reads included
# (measured: 3.4 statements, 2.1 round trips; before the commit's wake
# notice went with the appends' check (appends_check.CHECK_WAKING), 3.7;
# before a pass's runs' held writes went as one statement
# (store/postgres/held_batch.py), 7.45 and 2.1;
# before that, 8.4 and 2.5; before the appends' check went
# with the COMMIT instead of a round trip of its own (appends_check.py), 8.2
# and 3.0; before the held writes, a completion's task delete, attempt and
# append sent with its run's next decision as one statement, the run's end
# held too, and a decision's savepoint sent only if the decision sends a
# statement (store/postgres/deferred.py), 24.0; before the batch locks and
# the open savepoints, at 190d3af, 37.4 and 16.0).
STATEMENTS_PER_RUN = 4
ROUND_TRIPS_PER_RUN = 2.5


@activity
def add_one(ctx: ActivityContext, n: int) -> int:
    return n + 1


@workflow
async def three_steps(ctx: WorkflowContext, n: int) -> int:
    a = await ctx.execute_activity(add_one, n)
    b = await ctx.execute_activity(add_one, a)
    return int(await ctx.execute_activity(add_one, b))


def sent_messages(trace: Path) -> collections.Counter[str]:
    """How many messages of each type the worker sent (libpq trace lines "F <len> <type> ...")."""
    sent: collections.Counter[str] = collections.Counter()
    for line in trace.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) > 2 and parts[0] == "F":
            sent[parts[2]] += 1
    return sent


def drive_traced(dsn: str, trace: Path) -> collections.Counter[str]:
    """Serve RUNS queued 3-activity runs to completion; the worker connection's messages."""
    rt = PostgresRuntime.connect(dsn)
    try:
        # A batch is never cut by its time budget: the counts do not depend on load.
        rt.settings.group_commit_seconds = 60.0
        rt.register_activity(add_one)
        rt.register_workflow(three_steps)
        runs = [str(rt.start_workflow("three_steps", i)) for i in range(RUNS)]
        return traced_passes(rt, dsn, runs, trace, passes=100)
    finally:
        rt.close()


def traced_passes(
    rt: PostgresRuntime, dsn: str, runs: list[str], trace: Path, *, passes: int
) -> collections.Counter[str]:
    """Drive `runs` (n -> n + 3) pass by pass to completion, the worker's connection traced."""
    store = rt.store
    assert isinstance(store, PostgresStore)
    pgconn = store.connection.pgconn
    with trace.open("w") as out, PostgresReader.connect(dsn) as reader:
        pgconn.trace(out.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

        async def drive() -> None:
            for _ in range(passes):
                await rt.poll_once()
                if reader.counts_by_state()["COMPLETED"] == len(runs):
                    return
            raise AssertionError("the runs did not complete")

        try:
            asyncio.run(drive())
        finally:
            pgconn.untrace()
        outputs = [reader.describe(run).output.value for run in runs]
        assert outputs == [i + 3 for i in range(len(runs))]
    return sent_messages(trace)


def test_a_three_activity_run_costs_few_statements_and_round_trips_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    sent = drive_traced(pg_dsn, tmp_path / "libpq.trace")
    statements = (sent["Execute"] + sent["Query"]) / RUNS
    round_trips = (sent["Sync"] + sent["Flush"]) / RUNS
    assert statements <= STATEMENTS_PER_RUN, sent
    assert round_trips <= ROUND_TRIPS_PER_RUN, sent
