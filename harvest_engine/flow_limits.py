"""The flow limits a workflow or an activity declares itself (issue 26), checked at registration.

`@workflow(concurrency=, throttle=, quota=)` and `@activity(max_concurrent=,
rate_limit=, schedule_to_start=)`: each set lives in an implicit queue of its
own ("workflow:NAME", "activity:NAME") that the flow wing admits through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harvest_engine.durations import to_timedelta
from harvest_engine.errors import InvalidFlowOption
from harvest_engine.flow import Rate, positive_limit

# The flow-control options (issue 26) the admission honours (runtime/flow/).
WORKFLOW_FLOW_OPTIONS = frozenset({"concurrency", "throttle", "quota"})
ACTIVITY_FLOW_OPTIONS = frozenset({"max_concurrent", "rate_limit", "schedule_to_start"})


@dataclass(frozen=True)
class WorkflowLimits:
    """A workflow's own flow limits: `@workflow(concurrency=, throttle=, quota=)`."""

    concurrency: int | None = None
    throttle: Rate | None = None
    quota: Rate | None = None

    @property
    def queues(self) -> bool:
        """Whether its starts wait in its own queue (concurrency or throttle)."""
        return self.concurrency is not None or self.throttle is not None

    @classmethod
    def of(cls, owner: str, options: dict[str, Any]) -> WorkflowLimits | None:
        """The limits declared in `options` (checked), or None when none is."""
        if not WORKFLOW_FLOW_OPTIONS & options.keys():
            return None
        return cls(
            concurrency=positive_limit(
                options.get("concurrency"), f"{owner}: concurrency"
            ),
            throttle=Rate.coerce(options.get("throttle"), f"{owner}: throttle"),
            quota=Rate.coerce(options.get("quota"), f"{owner}: quota"),
        )


@dataclass(frozen=True)
class ActivityLimits:
    """An activity's own flow limits: `@activity(max_concurrent=, rate_limit=, schedule_to_start=)`."""

    max_concurrent: int | None = None
    rate_limit: Rate | None = None
    schedule_to_start: float | None = None

    @classmethod
    def of(cls, owner: str, options: dict[str, Any]) -> ActivityLimits | None:
        """The limits declared in `options` (checked), or None when none is."""
        if not ACTIVITY_FLOW_OPTIONS & options.keys():
            return None
        s2s = options.get("schedule_to_start")
        seconds = None
        if s2s is not None:
            try:
                seconds = to_timedelta(s2s, what="schedule_to_start").total_seconds()
            except ValueError as exc:
                raise InvalidFlowOption(
                    option=f"{owner}: schedule_to_start", why=str(exc)
                ) from None
            if seconds <= 0:
                raise InvalidFlowOption(
                    option=f"{owner}: schedule_to_start", why="must be > 0"
                )
        return cls(
            max_concurrent=positive_limit(
                options.get("max_concurrent"), f"{owner}: max_concurrent"
            ),
            rate_limit=Rate.coerce(options.get("rate_limit"), f"{owner}: rate_limit"),
            schedule_to_start=seconds,
        )
