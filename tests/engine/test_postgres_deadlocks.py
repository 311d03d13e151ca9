"""Two Postgres workers never deadlock: runs that signal each other, claims read in other orders.

Each worker holds its own run's row for the decision and then needs the
other's row to stage the signal: waiting for it would be a lock cycle that
Postgres breaks by failing one worker's whole round (`StorageError`). A
rendezvous inside the workflow code makes both decisions hold their row at
the same time, every time. Claims lock their runs' rows too: two workers
claiming the same ready tasks in other orders are made to meet after their
first claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import (
    ActivityContext,
    PostgresReader,
    PostgresRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.store.postgres.write_txn import PostgresWriteTxn

if TYPE_CHECKING:
    import pytest

# Both decisions of the first round meet here while holding their own row.
MEET = threading.Barrier(2)
MET = threading.Event()


def meet_once() -> None:
    """Block until the other worker's decision is here too (the first time only)."""
    if not MET.is_set():
        MEET.wait(timeout=10)
        MET.set()


@workflow
async def pinger(ctx: WorkflowContext, _: Any) -> Any:
    """Signal the peer it is given (if any) at the rendezvous, then wait for a ping."""
    peer = await ctx.wait_for_signal("peer")
    if peer is not None:
        meet_once()
        await ctx.signal_external_workflow(peer, "ping", ctx.info().exec_id)
    return await ctx.wait_for_signal("ping")


def worker(dsn: str, name: str, runs_per_commit: int) -> PostgresRuntime:
    """A worker whose pass decides `runs_per_commit` runs per transaction.

    A transaction locks the runs it decides together (batch_locks), so with
    the default size the first worker would take every run and the other
    none: a small size gives each worker its own runs.
    """
    rt = PostgresRuntime.connect(dsn, worker_id=name)
    rt.settings.group_commit_size = runs_per_commit
    rt.register_workflow(pinger)
    return rt


def polls(rt: PostgresRuntime, errors: list[BaseException], rounds: int) -> None:
    """Poll `rounds` times in this thread's own loop, keeping every error."""

    async def run() -> None:
        for _ in range(rounds):
            try:
                await rt.poll_once()
            except Exception as exc:  # noqa: BLE001 - the test asserts there is none
                errors.append(exc)

    asyncio.run(run())


def first_rounds_at_once(one: PostgresRuntime, two: PostgresRuntime) -> None:
    """One pass of each worker at the same time (threads), then passes until all settle.

    Asserts that no pass failed: a deadlock would fail one worker's round.
    """
    MEET.reset()
    MET.clear()
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=polls, args=(rt, errors, 1)) for rt in (one, two)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert MET.is_set()  # both signalling decisions held their rows at once
    assert errors == []
    # A run whose decision stood back goes on at the next pass.
    for _ in range(5):
        polls(one, errors, 1)
        polls(two, errors, 1)
    assert errors == []


def test_two_workers_whose_runs_signal_each_other_at_once_do_not_deadlock(
    pg_dsn: str,
) -> None:
    one, two = worker(pg_dsn, "one", 1), worker(pg_dsn, "two", 1)
    try:
        a = str(one.start_workflow("pinger"))
        b = str(one.start_workflow("pinger"))
        one.send_signal(a, "peer", b)
        one.send_signal(b, "peer", a)
        first_rounds_at_once(one, two)
    finally:
        one.close()
        two.close()
    with PostgresReader.connect(pg_dsn) as reader:
        assert reader.describe(a).output.value == b
        assert reader.describe(b).output.value == a
        for run in (a, b):
            types = [e.type for e in reader.load_history(run)]
            assert types.count("ExternalSignalSent") == 1
            assert types.count("SignalReceived") == 2


def test_a_signal_to_a_run_another_worker_holds_while_it_holds_a_run_of_this_batch(
    pg_dsn: str,
) -> None:
    # Oldest first, each worker's pass takes two runs in one transaction:
    # one worker holds A (decided, parked) and B, the other C and D; then B
    # signals D while D signals A: a cycle through a run decided earlier in
    # the same batch.
    one, two = worker(pg_dsn, "one", 2), worker(pg_dsn, "two", 2)
    try:
        a, b, c, d = (str(one.start_workflow("pinger")) for _ in range(4))
        for run, peer in ((a, None), (b, d), (c, None), (d, a)):
            one.send_signal(run, "peer", peer)
        first_rounds_at_once(one, two)
    finally:
        one.close()
        two.close()
    with PostgresReader.connect(pg_dsn) as reader:
        assert reader.describe(a).output.value == d
        assert reader.describe(d).output.value == b
        assert reader.describe(b).state == "RUNNING"  # nobody pings B or C
        assert reader.describe(c).state == "RUNNING"


@activity
def noop(ctx: ActivityContext, _: Any) -> None:
    return None


@workflow
async def one_step(ctx: WorkflowContext, _: Any) -> None:
    await ctx.execute_activity(noop, None)


def test_two_workers_claiming_the_same_ready_tasks_in_other_orders_do_not_deadlock(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A claim locks its task's run row; two workers whose ready lists differ
    # in order (read at other moments) each took one run's row and waited for
    # the other's. The rendezvous after each worker's first claim forces it.
    workers = [PostgresRuntime.connect(pg_dsn, worker_id=f"w{i}") for i in (1, 2)]
    try:
        for rt in workers:
            rt.register_workflow(one_step)
            rt.register_activity(noop)
        first, _second = workers
        runs = [str(first.start_workflow("one_step")) for _ in range(2)]
        asyncio.run(first._driver.group._decide_all(runs, first.clock.now, []))
        with psycopg.connect(
            pg_dsn, autocommit=True
        ) as admin:  # claimed: back to ready
            admin.execute(
                "UPDATE harvest_tasks SET status = 'PENDING', worker_id = NULL, "
                "claimed_at = NULL, lease_expires_at = NULL"
            )
        ready = first.store.ready_tasks(None, first.clock.now())
        assert sorted(t.exec_id for t in ready) == sorted(runs)
        orders = {"w1": ready, "w2": list(reversed(ready))}
        for rt in workers:
            store = rt.store
            monkeypatch.setattr(
                store,
                "ready_tasks",
                lambda *_, who=rt.worker_id: list(orders[who]),
            )
        meet = threading.Barrier(2)
        claims = 0
        real_claim = PostgresWriteTxn.claim_task

        def claim_then_meet(txn: PostgresWriteTxn, task_id: int, at: Any) -> Any:
            nonlocal claims
            got = real_claim(txn, task_id, at)
            claims += 1
            with contextlib.suppress(threading.BrokenBarrierError):
                meet.wait(timeout=1)  # the other may be waiting on our row
            return got

        monkeypatch.setattr(PostgresWriteTxn, "claim_task", claim_then_meet)
        errors: list[BaseException] = []
        held: dict[str, list[int]] = {}

        def claim(rt: PostgresRuntime) -> None:
            try:
                got = rt._driver.group._claim_ready(None, rt.clock.now)
                held[rt.worker_id] = [t.id for t in got]
            except Exception as exc:  # noqa: BLE001 - the test asserts there is none
                errors.append(exc)

        threads = [threading.Thread(target=claim, args=(rt,)) for rt in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert errors == []
        assert claims >= 2
        taken = held["w1"] + held["w2"]
        assert sorted(taken) == sorted(t.id for t in ready)  # each claimed once
    finally:
        for rt in workers:
            rt.close()
