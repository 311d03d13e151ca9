"""A pass's plain (sync) activity bodies: in threads, their outcomes read by callbacks, no task each.

A coroutine that awaits a plain body's thread costs an `asyncio` task per
attempt (its creation, a step to start, a step to wake, done callbacks
for `asyncio.wait`): about a hundred Python calls a run of a 3-step queue.
A plain body with no activity interceptor needs none of it: the attempt
is prepared as `TaskRunner.execute` prepares it, the body goes to the
loop's thread pool, and the thread schedules one callback that reads the
outcome as `run_attempt` reads it (`activity.plain_outcome`) and settles
the future the pass waits on. Cancelling that future (the pass gave up:
its commit failed, it was cancelled) drops a body not yet started and
finishes the attempt, as cancelling its task did.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any

from harvest_engine import body_threads
from harvest_engine.activity import cancelled_result, is_coroutine_body, plain_outcome
from harvest_engine.clock import monotonic
from harvest_engine.runtime.serving.tasks import Finished

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.serving.tasks import Clock, Prepared, TaskRunner
    from harvest_engine.store.rows import TaskRecord


def start(
    runner: TaskRunner,
    task: TaskRecord,
    clock: Clock,
    on_end: Callable[[], None] | None = None,
) -> asyncio.Future[Finished] | None:
    """Start the attempt of a plain body in a thread; None for the others (`execute` runs them).

    The others: an unknown activity, a coroutine body, a local activity, an
    attempt through interceptors' hooks, a loop whose default executor is
    not a thread pool. Raises what `TaskRunner.prepare` raises. `on_end` is
    called at once when the outcome is set (the pass's `BodyEnds`).
    """
    registry = runner.registry
    activity = registry.activities.get(task.activity_name)
    if (
        activity is None
        or task.local
        or registry.interceptors.activity
        or is_coroutine_body(activity.body)
    ):
        return None
    loop = asyncio.get_running_loop()
    executor = body_threads.executor_of(loop)
    if executor is None:
        return None
    prepared = runner.prepare(task, clock)
    if isinstance(prepared, Finished):  # the body does not run (no budget, a breaker)
        ready: asyncio.Future[Finished] = loop.create_future()
        ready.set_result(prepared)
        return ready
    done = _Attempt(runner, prepared, loop)
    done.on_end = on_end
    cancel = done.prepared.cancel
    early = done.prepared.early
    if early is None and cancel.reason is not None:
        early = cancelled_result(cancel.reason)  # cancelled before it began
    if early is not None:
        done.end(early, clock)
        return done
    budget = done.prepared.budget
    if budget is not None:
        done.timer = loop.call_later(budget, cancel.time_out, budget)
    began = monotonic()

    def then(value: Any, error: BaseException | None) -> None:
        if done.done():
            return  # given up on while the body ran: finished then
        try:
            result = plain_outcome(value, error, monotonic() - began, budget, cancel)
        except BaseException as exc:  # noqa: BLE001 - raised where the pass reads it
            done.fail(exc)
            return
        done.end(result, clock)

    body = functools.partial(activity.body, *done.prepared.args)
    try:
        done.submitted = body_threads.submit(executor, loop, body, then)
    except Exception as exc:  # noqa: BLE001 - no thread took it (a pool shut down): a failed attempt
        done.end(plain_outcome(None, exc, 0.0, budget, cancel), clock)
    return done


class _Attempt(asyncio.Future[Finished]):
    """The future of one plain attempt; cancelling it gives the attempt up."""

    def __init__(
        self, runner: TaskRunner, prepared: Prepared, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(loop=loop)
        self.runner = runner
        self.prepared = prepared
        self.timer: asyncio.TimerHandle | None = None
        self.submitted: body_threads.Submitted | None = None
        self.on_end: Callable[[], None] | None = None
        """Told at once when the attempt's outcome is set (the pass's `BodyEnds`)."""

    def stop(self) -> None:
        """The body ended or is given up: its timer goes, the attempt is finished."""
        if self.timer is not None:
            self.timer.cancel()
        self.runner.attempts.finish(self.prepared.claimed)

    def end(self, result: Any, clock: Clock) -> None:
        """The attempt's outcome: finished as `TaskRunner.execute` finishes it."""
        self.stop()
        try:
            finished = self.runner.conclude(self.prepared, result, clock)
        except BaseException as exc:  # noqa: BLE001 - raised where the pass reads it
            self.set_exception(exc)
        else:
            self.set_result(finished)
        if self.on_end is not None:
            self.on_end()

    def fail(self, exc: BaseException) -> None:
        """The outcome could not be read: raised where the pass reads it."""
        self.stop()
        if isinstance(exc, asyncio.CancelledError):
            super().cancel()
        else:
            self.set_exception(exc)
        if self.on_end is not None:
            self.on_end()

    def cancel(self, msg: Any | None = None) -> bool:
        """Give the attempt up: a body not started yet never runs (one running ends unread)."""
        if not self.done():
            if self.submitted is not None:
                self.submitted.dropped = True
            self.stop()
        return super().cancel(msg)
