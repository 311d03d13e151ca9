"""ActivityCalls: the activity calls of a WorkflowContext (execute, start with a handle, local).

The base class of `WorkflowContext` (context.py), on `ProgressCalls`;
each call records one ActivityScheduled (or LocalActivityScheduled) on the
run's `Machine` and waits for its answer, or hands back an `ActivityHandle`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.durations import to_timedelta
from harvest_engine.workflow.activity_handles import (
    ActivityCancellationType,
    ActivityHandle,
    activity_attrs,
)
from harvest_engine.workflow.context_progress import ProgressCalls
from harvest_engine.workflow.defaults import LOCAL_ACTIVITY_BUDGET_SECONDS
from harvest_engine.workflow.progress import step_summary
from harvest_engine.workflow.targets import activity_target, checked_value

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.authoring import ActivityInfo, RetryPolicy
    from harvest_engine.durations import Duration


class ActivityCalls(ProgressCalls):
    """Activities: awaited at once, started with a handle, or run locally."""

    async def execute_activity(
        self,
        activity: Callable[..., Any] | ActivityInfo | str,
        input: Any = None,
        *,
        queue: str | None = None,
        retry: RetryPolicy | None = None,
        start_to_close: Duration | None = None,
        schedule_to_close: Duration | None = None,
        summary: str | None = None,
    ) -> Any:
        """Schedule an activity and wait for its result (ActivityError when it fails for good).

        `summary` labels the step (stored with its ActivityScheduled event).
        """
        name, result_type = activity_target(activity)
        attrs = activity_attrs(
            name,
            input,
            queue=queue,
            retry=retry,
            start_to_close=start_to_close,
            schedule_to_close=schedule_to_close,
        )
        if summary is not None:
            attrs["summary"] = step_summary(summary)
        result = await self._machine.commands.schedule_activity(attrs)
        return payloads.from_json(result, result_type)

    def start_activity(
        self,
        activity: Callable[..., Any] | ActivityInfo | str,
        input: Any = None,
        *,
        queue: str | None = None,
        retry: RetryPolicy | None = None,
        start_to_close: Duration | None = None,
        schedule_to_close: Duration | None = None,
        cancellation_type: ActivityCancellationType
        | str = ActivityCancellationType.TRY_CANCEL,
    ) -> ActivityHandle:
        """Schedule an activity now; a handle to await (its result) or to `cancel()`.

        `cancellation_type` says what a cancel does (`ActivityCancellationType`):
        TRY_CANCEL (the default) cancels the attempt and ends the handle at
        once with ActivityCancelled; WAIT_CANCELLATION_COMPLETED ends it once
        the body stopped and its attempt was recorded; ABANDON lets the body
        run on and ends the handle at once.
        """
        name, result_type = activity_target(activity)
        attrs = activity_attrs(
            name,
            input,
            queue=queue,
            retry=retry,
            start_to_close=start_to_close,
            schedule_to_close=schedule_to_close,
        )
        return ActivityHandle(self._machine, attrs, result_type, cancellation_type)

    async def execute_activity_raw(
        self, name: str, input: Any, queue: str = "default"
    ) -> Any:
        """Schedule an activity by name on a queue; the JSON result, untyped."""
        return await self.execute_activity(name, input, queue=queue)

    async def execute_local_activity(
        self,
        activity: Callable[..., Any] | ActivityInfo | str,
        input: Any = None,
        *,
        retry: RetryPolicy | None = None,
        start_to_close: Duration | None = None,
    ) -> Any:
        """Run an activity inline after the decision commits (LocalActivity* events).

        Each attempt's budget is `start_to_close`, capped at 60 s. It must be
        the only awaitable of its batch (a solo rule).
        """
        name, result_type = activity_target(activity)
        attrs: dict[str, Any] = {
            "name": name,
            "input": checked_value(input, "activity input"),
        }
        if retry is not None:
            attrs["retry"] = retry.to_json()
        if start_to_close is not None:
            attrs["start_to_close"] = min(
                to_timedelta(start_to_close).total_seconds(),
                LOCAL_ACTIVITY_BUDGET_SECONDS,
            )
        result = await self._machine.commands.schedule_local_activity(attrs)
        return payloads.from_json(result, result_type)

    async def execute_external_activity(self, name: str, input: Any = None) -> Any:
        """An external (task-token) activity: rejected by this backend."""
        del input
        raise self._machine.reject(
            "ExternalActivity",
            f"external / task-token activities ({name!r}) are not supported by the SQLite backend",
        )

    async def create_session(self, *args: Any, **kwargs: Any) -> Any:
        """A worker session: rejected by this backend."""
        del args, kwargs
        raise self._machine.reject(
            "CreateSession", "worker sessions are not supported by the SQLite backend"
        )
