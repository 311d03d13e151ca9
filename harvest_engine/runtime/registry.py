"""Registry: the workflows, activities and handlers of this process, with the backend-feature audit.

Registrations live in memory, not in the file, so every runtime (also a
reopened one) registers again. A declared option this backend cannot honour
is refused here, by name, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harvest_engine.authoring import (
    ActivityInfo,
    HandlerInfo,
    RetryPolicy,
    WorkflowInfo,
    info_of,
)
from harvest_engine.errors import (
    UnknownActivity,
    UnknownQueue,
    UnknownWorkflow,
    UnsupportedFeature,
)
from harvest_engine.flow import (
    QUEUE_ACTIVITY_PREFIX,
    QUEUE_WORKFLOW_PREFIX,
    Queue,
)
from harvest_engine.flow_limits import (
    ACTIVITY_FLOW_OPTIONS,
    WORKFLOW_FLOW_OPTIONS,
    ActivityLimits,
    WorkflowLimits,
)
from harvest_engine.interceptors import Interceptors
from harvest_engine.names import check_name
from harvest_engine.runtime.header_memory import HeaderMemory
from harvest_engine.shaping import (
    ACTIVITY_OPTIONS,
    WORKFLOW_OPTIONS,
    CircuitBreaker,
    WorkflowShaping,
    activity_breaker,
    workflow_shaping,
)

_ACTIVITY_REFUSED = {
    "heartbeat_timeout": "no scanner times out a silent attempt in a single process",
    "rate_limit_per_second": "declare rate_limit=Rate(n, '1s') instead",
}


@dataclass(frozen=True)
class ActivitySpec:
    """A hand-made activity for `register_activity_raw`: attempts and a sync JSON body."""

    max_attempts: int
    body: Callable[[Any], Any]

    def __post_init__(self) -> None:
        if self.max_attempts < 0:
            raise ValueError("ActivitySpec.max_attempts must be >= 0 (0 = unlimited)")
        if not callable(self.body):
            raise TypeError("ActivitySpec.body must be callable")


@dataclass(frozen=True)
class RegisteredActivity:
    """An activity as the task runner needs it.

    `mode` says how the body is called: "context" ``fn(ctx, input)``,
    "body" ``fn(input)``, "ledger" ``fn(input) -> (output, calls)``.
    """

    name: str
    body: Callable[..., Any]
    mode: str
    retry: RetryPolicy | None
    max_attempts: int
    start_to_close: float | None
    schedule_to_close: float | None
    queue: str
    local: bool
    input_type: Any = None
    heartbeat_timeout: float | None = None
    circuit_breaker: CircuitBreaker | None = None
    limits: ActivityLimits | None = None

    @property
    def own_queue(self) -> str | None:
        """The implicit queue of its own limits ("activity:NAME"), or None."""
        return None if self.limits is None else QUEUE_ACTIVITY_PREFIX + self.name


class Registry:
    """What this process can run."""

    def __init__(self) -> None:
        self.heartbeat_timeouts = False
        """Whether this backend times out a silent attempt (Postgres leases do)."""
        self.workflows: dict[str, WorkflowInfo] = {}
        self.shaping: dict[str, WorkflowShaping] = {}
        """Each workflow's debounce, batch and input cap (shaping.py)."""
        self.activities: dict[str, RegisteredActivity] = {}
        self.queries: dict[tuple[str, str], HandlerInfo] = {}
        self.updates: dict[tuple[str, str], HandlerInfo] = {}
        self.queues: dict[str, Queue] = {}
        """Queues registered in this process (`register_queue`), by name."""
        self.workflow_limits: dict[str, WorkflowLimits] = {}
        """The flow limits a registered workflow declares, by workflow name."""
        self.activity_limits_declared = False
        """Whether an activity registered here declared limits of its own (flow's gate)."""
        self.interceptors = Interceptors()
        """The hooks given at open (`interceptors=[...]`): code this process runs around calls."""
        self.header_memory = HeaderMemory()
        """Stored headers the hooks' calls need, known here without a read."""

    # -- workflows -------------------------------------------------------------

    def add_workflow(self, fn: Any) -> WorkflowInfo:
        """Register a @workflow function; options this backend cannot honour are refused here.

        Raises:
            UnsupportedFeature: the declaration carries another backend's option.
            InvalidFlowOption: a debounce, batch or input cap with a bad value.
        """
        info: WorkflowInfo = info_of(fn, WorkflowInfo)
        check_name(info.name, "workflow name")
        shaping = workflow_shaping(f"workflow {info.name!r}", info.options)
        for option in info.options:
            if option in WORKFLOW_OPTIONS or option in WORKFLOW_FLOW_OPTIONS:
                continue
            raise UnsupportedFeature(
                owner=f"workflow {info.name!r}",
                feature=option,
                why="this backend does not know the option",
            )
        limits = WorkflowLimits.of(f"workflow {info.name!r}", info.options)
        self.workflows[info.name] = info
        if limits is None:
            self.workflow_limits.pop(info.name, None)
        else:
            self.workflow_limits[info.name] = limits
        self.shaping[info.name] = shaping
        return info

    def workflow_queue(self, name: str) -> str | None:
        """The implicit queue of the workflow's own limits ("workflow:NAME"), or None."""
        limits = self.workflow_limits.get(name)
        return QUEUE_WORKFLOW_PREFIX + name if limits and limits.queues else None

    def add_queue(self, queue: Queue) -> None:
        """Remember a registered queue (its row is written by the flow wing)."""
        if not isinstance(queue, Queue):
            raise TypeError(f"register_queue needs a Queue, got {queue!r}")
        self.queues[queue.name] = queue

    def queue(self, name: str) -> Queue:
        """The registered queue `name`.

        Raises:
            UnknownQueue: no `register_queue` declared it in this process.
        """
        found = self.queues.get(name)
        if found is None:
            raise UnknownQueue(queue=name)
        return found

    def gated(self, activity_name: str) -> bool:
        """Whether attempts of the activity wait for a slot (cheap: two lookups)."""
        activity = self.activities.get(activity_name)
        return activity is not None and self.gate(activity) is not None

    def gate(self, activity: RegisteredActivity) -> str | None:
        """The queue an attempt of `activity` waits in for a slot (None: it never waits).

        Its own limits ("activity:NAME") come first; else the registered queue
        its `queue=` names.
        """
        own = activity.own_queue
        if own is not None:
            return own
        return activity.queue if activity.queue in self.queues else None

    def shaping_of(self, name: str) -> WorkflowShaping:
        """The shaping options of registered workflow `name` (defaults when it has none)."""
        found = self.shaping.get(name)
        return found if found is not None else WorkflowShaping()

    def workflow(self, name: str) -> WorkflowInfo:
        """The registered workflow `name`, as a run's row names it.

        Raises:
            UnknownWorkflow: this process does not have that workflow's code.
        """
        info = self.workflows.get(name)
        if info is None:
            raise UnknownWorkflow(name=name, registered=self.workflows)
        return info

    # -- activities ------------------------------------------------------------

    def add_activity(
        self, fn: Any, body: Callable[..., Any] | None = None, mode: str = "context"
    ) -> RegisteredActivity:
        """Register an @activity; `body` and `mode` let the caller swap in another callable.

        Raises:
            UnsupportedFeature: the declaration asks for what this backend refuses.
            TypeError: there is no callable body to run.
        """
        info: ActivityInfo = info_of(fn, ActivityInfo)
        check_name(info.name, "activity name")
        _audit_activity(info, heartbeat_timeouts=self.heartbeat_timeouts)
        limits = ActivityLimits.of(f"activity {info.name!r}", info.options)
        self.activity_limits_declared |= limits is not None
        target = body if body is not None else info.fn
        if target is None or not callable(target):
            raise TypeError(f"activity {info.name!r} has no body to run")
        self.activities[info.name] = RegisteredActivity(
            name=info.name,
            body=target,
            mode=mode,
            retry=info.retry,
            max_attempts=info.max_attempts,
            start_to_close=None
            if info.start_to_close is None
            else info.start_to_close.total_seconds(),
            schedule_to_close=None
            if info.schedule_to_close is None
            else info.schedule_to_close.total_seconds(),
            queue=info.queue,
            local=info.local,
            input_type=info.input_type if mode == "context" else None,
            heartbeat_timeout=None
            if info.heartbeat_timeout is None
            else info.heartbeat_timeout.total_seconds(),
            circuit_breaker=activity_breaker(f"activity {info.name!r}", info.options),
            limits=limits,
        )
        return self.activities[info.name]

    def add_raw_activity(self, name: str, spec: ActivitySpec) -> None:
        """Register an activity by name without a decorator (register_activity_raw).

        Raises:
            ValueError: the name is empty.
            TypeError: `spec` is not an ActivitySpec.
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError("an activity name is non-empty text")
        check_name(name, "activity name")
        if not isinstance(spec, ActivitySpec):
            raise TypeError(
                f"register_activity_raw needs an ActivitySpec, got {spec!r}"
            )
        retry = (
            RetryPolicy(max_attempts=spec.max_attempts)
            if spec.max_attempts != 1
            else None
        )
        self.activities[name] = RegisteredActivity(
            name=name,
            body=spec.body,
            mode="body",
            retry=retry,
            max_attempts=spec.max_attempts,
            start_to_close=None,
            schedule_to_close=None,
            queue="default",
            local=False,
        )

    def activity(self, name: str) -> RegisteredActivity:
        """The registered activity `name`, as a task row names it.

        Raises:
            UnknownActivity: this process does not have that activity's code.
        """
        found = self.activities.get(name)
        if found is None:
            raise UnknownActivity(name=name, registered=self.activities)
        return found

    # -- declarative handlers ----------------------------------------------------

    def add_handler(self, fn: Any, kind: str) -> HandlerInfo:
        """Register a declarative @query or @update handler under (workflow, name).

        Raises:
            TypeError: `fn` was declared as the other kind of handler.
        """
        info: HandlerInfo = info_of(fn, HandlerInfo)
        check_name(info.name, f"{kind} name")
        check_name(info.workflow, "workflow name")
        if info.kind != kind:
            raise TypeError(f"{fn!r} is an @{info.kind} handler, not an @{kind}")
        table = self.queries if kind == "query" else self.updates
        table[(info.workflow, info.name)] = info
        return info


def _audit_activity(info: ActivityInfo, *, heartbeat_timeouts: bool) -> None:
    owner = f"activity {info.name!r}"
    if info.heartbeat_timeout is not None and info.local:
        raise UnsupportedFeature(
            owner=owner,
            feature="heartbeat_timeout",
            why="a local activity runs inside its workflow's decision, not under a lease",
        )
    if info.heartbeat_timeout is not None and not heartbeat_timeouts:
        raise UnsupportedFeature(
            owner=owner,
            feature="heartbeat_timeout",
            why=_ACTIVITY_REFUSED["heartbeat_timeout"],
        )
    for option in info.options:
        if option in ACTIVITY_OPTIONS:
            continue
        if option in ACTIVITY_FLOW_OPTIONS and not info.local:
            continue
        if option in ACTIVITY_FLOW_OPTIONS:
            raise UnsupportedFeature(
                owner=owner,
                feature=option,
                why="a local activity runs inside its workflow's decision, not in a queue",
            )
        raise UnsupportedFeature(
            owner=owner,
            feature=option,
            why=_ACTIVITY_REFUSED.get(option, "this backend does not know the option"),
        )
    if info.local and info.schedule_to_close is not None:
        raise UnsupportedFeature(
            owner=owner,
            feature="schedule_to_close",
            why="a local activity cannot declare schedule_to_close (as on Postgres)",
        )
