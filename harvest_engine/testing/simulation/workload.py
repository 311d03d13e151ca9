"""The built-in workload: workflows that use every primitive, and what clients send them.

Each workflow reads its shape from its input (how many activities, how long
a timer, which child), so the seed that picks the input picks the path.
Every workflow ends when it has done its work or when it receives the
`stop` signal, so once faults stop and the harness sends `stop` to what
still runs, every run of this workload converges to a terminal state.
"""

from __future__ import annotations

import random  # noqa: TC003 - the Workload dataclass's field types are read at runtime
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harvest_engine.activity import ActivityContext
from harvest_engine.authoring import RetryPolicy, activity, workflow
from harvest_engine.errors import ApplicationError
from harvest_engine.flow import Queue, Rate
from harvest_engine.schedules import Schedule, WorkflowSchedule
from harvest_engine.workflow.context import WorkflowContext
from harvest_engine.workflow.parent_close import ParentClosePolicy

STOP = "stop"


@activity(
    retry=RetryPolicy(max_attempts=4, initial_interval="2s"), start_to_close="30s"
)
async def sim_work(ctx: ActivityContext, n: int) -> int:
    """A remote activity; the harness decides whether an attempt finishes, fails or hangs."""
    return n + 1


@activity(local=True, retry=RetryPolicy(max_attempts=3, initial_interval="1s"))
async def sim_local(ctx: ActivityContext, n: int) -> int:
    """A local activity, run inline after the decision."""
    return n * 2


@workflow
async def sim_steps(ctx: WorkflowContext, spec: dict[str, Any]) -> int:
    """Activities with retries, a local activity and a timer; answers `progress`, updates `bump`."""
    total = 0
    extra = 0

    async def bump(by: int) -> int:
        nonlocal extra
        extra += by
        return extra

    def positive(by: int) -> None:
        if by <= 0:
            raise ValueError("bump by a positive number")

    ctx.register_query("progress", lambda: total)
    ctx.register_update_handler("bump", positive, bump)
    for i in range(int(spec.get("activities", 2))):
        try:
            total += int(await ctx.execute_activity(sim_work, i))
        except ApplicationError:
            total -= 1  # the activity gave up after its retries
    total += int(await ctx.execute_local_activity(sim_local, total))
    if spec.get("timer"):
        await ctx.sleep(int(spec["timer"]))
    return total + extra


@workflow
async def sim_signals(ctx: WorkflowContext, spec: dict[str, Any]) -> list[Any]:
    """Collects `item` signals (by handler and by receive) until `stop`; counts `tick`s."""
    got: list[Any] = []
    ticks: list[Any] = []
    ctx.register_signal_handler("tick", ticks.append)
    ctx.register_query("count", lambda: len(got) + len(ticks))
    while True:
        got.extend(ctx.drain_signals("item"))
        if ctx.try_receive_signal(STOP) is not None:
            break
        item = await ctx.wait_for_signal_timeout("item", int(spec.get("wait", 600)))
        # A cancel is read after the last recorded await (README, run lifecycle).
        if ctx.is_cancelled():
            break
        if item is not None:
            got.append(item)
        elif spec.get("end_on_timeout"):
            break
    got.extend(ctx.drain_signals("item"))
    return [*got, *ticks]


@workflow
async def sim_child(ctx: WorkflowContext, n: int) -> int:
    """A child: one activity, then waits for `go` or a timer."""
    value = int(await ctx.execute_activity(sim_work, n))
    await ctx.wait_for_signal_timeout("go", 300)
    return value


@workflow
async def sim_parent(ctx: WorkflowContext, spec: dict[str, Any]) -> int:
    """Children attached and detached (one maybe into the queue), external signal, cancel and await."""
    detached = await ctx.spawn_child_workflow_detached(
        sim_child, 1, ParentClosePolicy.ABANDON
    )
    await ctx.signal_external_workflow(detached, "go", "now")
    try:
        value = int(await ctx.spawn_child_workflow(sim_child, 2, timeout=3600))
    except ApplicationError:
        value = -1
    if spec.get("queued_child"):
        try:  # waits ENQUEUED in the workload's queue until admitted
            value += int(
                await ctx.spawn_child_workflow(
                    sim_child, 3, timeout=3600, queue=SIM_QUEUE.name, priority=5
                )
            )
        except ApplicationError:
            value -= 1
    if spec.get("cancel_other"):
        other = await ctx.spawn_child_workflow_detached(
            sim_signals, {"wait": 900}, ParentClosePolicy.ABANDON
        )
        await ctx.request_cancel_external_workflow(other)
    try:
        value += int(await ctx.await_external_workflow(detached))
    except ApplicationError:
        value -= 1
    return value


@workflow
async def sim_generations(ctx: WorkflowContext, spec: dict[str, Any]) -> int:
    """Continues as new `left` times, one activity per generation."""
    done = int(spec.get("done", 0)) + int(await ctx.execute_activity(sim_work, 0))
    if int(spec.get("left", 0)) > 0 and not ctx.is_cancelled():
        ctx.continue_as_new({"left": int(spec["left"]) - 1, "done": done})
    return done


@workflow
async def sim_locked(ctx: WorkflowContext, spec: dict[str, Any]) -> int:
    """Holds the mutex `shared` around an activity and a short timer."""
    async with ctx.mutex("shared") as guard:
        await ctx.execute_activity(sim_work, int(spec.get("n", 0)))
        await ctx.sleep(5)
        return int(guard.lock_seq)


@workflow
async def sim_tick(ctx: WorkflowContext, n: Any = None) -> int:
    """Started by the schedule: one local activity."""
    return int(await ctx.execute_local_activity(sim_local, 1))


@dataclass(frozen=True)
class Workload:
    """What a simulation runs: the code, how to start runs, and what clients send.

    Attributes:
        workflows: @workflow functions to register.
        activities: @activity functions to register (the harness runs their
            bodies and decides, by the seed, whether an attempt finishes,
            fails, times out or heartbeats first).
        starts: ``rng -> (workflow name, input)``: a new run for a client to start.
        signals: signal names clients send to running runs (payloads are
            unique tokens, so each can be traced to its one event).
        queries: query names clients ask running runs.
        updates: ``(update name, argument)`` pairs clients send.
        schedules: schedules upserted at the start and deleted when faults stop.
        queues: queues registered at the start (their limits are invariants).
        queue_starts: ``rng -> (workflow name, input)``: a run a client starts
            into the first queue (None: no queue starts); it must end on its
            own, since it may be admitted after the stop signal went out.
        repairs: whether clients also reset, pause and unpause runs.
        stop_signal: sent to every running run once faults stop, so runs can
            end; None to send nothing.
        must_end: whether every run must be terminal at the end (otherwise
            a run may stay parked, as long as it says what it waits on).
    """

    workflows: Sequence[Callable[..., Any]]
    activities: Sequence[Callable[..., Any]]
    starts: Callable[[random.Random], tuple[str, Any]]
    signals: Sequence[str] = ()
    queries: Sequence[str] = ()
    updates: Sequence[tuple[str, Any]] = ()
    schedules: Sequence[WorkflowSchedule] = field(default_factory=tuple)
    queues: Sequence[Queue] = ()
    queue_starts: Callable[[random.Random], tuple[str, Any]] | None = None
    repairs: bool = False
    stop_signal: str | None = None
    must_end: bool = False


def _start(rng: random.Random) -> tuple[str, Any]:
    kind = rng.choice(
        (
            "sim_steps",
            "sim_steps",
            "sim_signals",
            "sim_parent",
            "sim_generations",
            "sim_locked",
        )
    )
    if kind == "sim_steps":
        return kind, {"activities": rng.randint(0, 3), "timer": rng.choice((0, 0, 60))}
    if kind == "sim_signals":
        return kind, {
            "wait": rng.choice((60, 600)),
            "end_on_timeout": rng.random() < 0.3,
        }
    if kind == "sim_parent":
        return kind, {
            "cancel_other": rng.random() < 0.5,
            "queued_child": rng.random() < 0.5,
        }
    if kind == "sim_generations":
        return kind, {"left": rng.randint(0, 3)}
    return kind, {"n": rng.randint(0, 9)}


def _queue_start(rng: random.Random) -> tuple[str, Any]:
    if rng.random() < 0.25:  # its successors queue again
        return "sim_generations", {"left": rng.randint(1, 2)}
    return "sim_steps", {"activities": rng.randint(0, 2), "timer": rng.choice((0, 30))}


SIM_QUEUE = Queue("sim-q", concurrency=2, rate=Rate(1, "20s"), priority=True)
"""The workload's queue: two at once, one admission every 20 s, priorities."""


def default_workload() -> Workload:
    """The workload of every primitive.

    Activities with retries, local activities, timers, signals (handlers,
    receive, drain, keyed), queries, updates, children, external
    signal/cancel/await, continue-as-new, a mutex and a schedule.
    """
    return Workload(
        workflows=(
            sim_steps,
            sim_signals,
            sim_child,
            sim_parent,
            sim_generations,
            sim_locked,
            sim_tick,
        ),
        activities=(sim_work, sim_local),
        starts=_start,
        signals=("item", "item", "tick", "go"),
        queries=("progress", "count"),
        updates=(("bump", 2), ("bump", -1)),
        schedules=(
            WorkflowSchedule(workflow_name="sim_tick", schedule=Schedule.every("1h")),
        ),
        queues=(SIM_QUEUE,),
        queue_starts=_queue_start,
        repairs=True,
        stop_signal=STOP,
        must_end=True,
    )
