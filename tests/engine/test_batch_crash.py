"""A process SIGKILLed while it collects a batch loses no acknowledged input and doubles none."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    Batch,
    ExecutionOutcome,
    ManualClock,
    PostgresRuntime,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)

if TYPE_CHECKING:
    from tests.stores import Databases

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys
    from harvest_engine import Batch, PostgresRuntime, SqliteRuntime, workflow

    @workflow(batch=Batch(max_size=100_000, max_wait="1h"), name="bag")
    async def bag(ctx, items):
        return items

    target = sys.argv[1]
    if target.startswith("postgresql:"):
        rt = PostgresRuntime.connect(target)
    else:
        rt = SqliteRuntime.open(target)
    rt.register_workflow(bag)
    n = 0
    while True:
        exec_id = rt.start_workflow("bag", n)
        print(n, exec_id, flush=True)  # acknowledged: its start committed
        n += 1
    """
)


@workflow(batch=Batch(max_size=100_000, max_wait="1h"), name="bag")
async def bag(ctx: WorkflowContext, items: list[int]) -> list[int]:
    return items


def _collect_then_kill(target: str, at_least: int) -> tuple[int, set[str]]:
    """Run the collecting child until it acknowledged `at_least` starts, then SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, target],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acknowledged = -1
    ids: set[str] = set()
    try:
        while acknowledged + 1 < at_least:
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            line = proc.stdout.readline() if ready else ""
            assert line, (
                f"the child stopped: {proc.poll()} {proc.stderr.read() if proc.stderr else ''}"
            )
            number, exec_id = line.split()
            acknowledged = int(number)
            ids.add(exec_id)
    finally:
        proc.send_signal(signal.SIGKILL)  # mid-collection, maybe mid-transaction
        # What it printed before the kill and we had not read yet was acknowledged
        # too (the child goes on committing while we read). Read through the
        # text stream: `communicate` would skip the lines its buffer already holds.
        rest = proc.stdout.read()
        proc.communicate(timeout=10)  # reaps it and closes its pipes
    for line in rest.splitlines():
        fields = line.split()
        if len(fields) == 2:  # a line the kill cut short was never acknowledged
            acknowledged = int(fields[0])
            ids.add(fields[1])
    return acknowledged, ids


async def test_a_killed_collector_loses_and_doubles_no_batch_input(
    databases: Databases, tmp_path: Path
) -> None:
    path = tmp_path / "bag.db"
    target = str(path) if databases.server is None else databases.dsn(path)
    acknowledged, ids = _collect_then_kill(target, at_least=30)
    assert len(ids) == 1  # every start joined the one open batch
    clock = ManualClock()
    clock.advance(timedelta(days=30_000))  # past the child's real clock + max_wait
    rt: Any = (
        SqliteRuntime.open(path, clock=clock)
        if databases.server is None
        else PostgresRuntime.connect(target, clock=clock)
    )
    try:
        rt.register_workflow(bag)
        [held] = rt.held_starts()
        assert held.exec_id in ids
        await rt.run_until_idle()
        outcome = rt.outcome(held.exec_id)
        assert isinstance(outcome, ExecutionOutcome.Completed)
        items = outcome.output
        # A prefix of the arrivals, in order, each once: every acknowledged
        # start is there, and at most the one the kill cut off after its commit.
        assert items == list(range(len(items)))
        assert acknowledged + 1 <= len(items) <= acknowledged + 2
    finally:
        rt.close()
