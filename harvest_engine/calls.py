"""Values of calls into runs, shared by the runtime and the client, with their checks.

A start's options and reuse policy, the requests and outcomes of
signal-with-start and update-with-start, a signal's delivery, and the checks
every one of them passes before anything persists (the input, memo and
search attribute caps; signal names and keys; workflow ids). The runtime
runs them where a call is made in process; the client runs the same checks
before it queues a command, so a bad call is refused where it is made.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harvest_engine import payloads
from harvest_engine.durations import Duration
from harvest_engine.errors import (
    BlankWorkflowId,
    InvalidFlowOption,
    InvalidSearchAttribute,
    InvalidSignal,
    UpdateRejected,
)
from harvest_engine.filters import NUL, NUL_REASON
from harvest_engine.flow import check_priority, check_start_delay
from harvest_engine.names import check_name
from harvest_engine.shaping import MAX_INPUT_BYTES_CEILING
from harvest_engine.states import ExecutionId


class WorkflowIdReusePolicy(enum.Enum):
    """What a start with a workflow id does when a run of that id exists (see the module table)."""

    ALLOW_DUPLICATE = "ALLOW_DUPLICATE"
    ALLOW_DUPLICATE_FAILED_ONLY = "ALLOW_DUPLICATE_FAILED_ONLY"
    REJECT_DUPLICATE = "REJECT_DUPLICATE"
    TERMINATE_IF_RUNNING = "TERMINATE_IF_RUNNING"

    @classmethod
    def coerce(cls, value: WorkflowIdReusePolicy | str) -> WorkflowIdReusePolicy:
        """The policy itself, or the policy named by its text (``"REJECT_DUPLICATE"``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        names = ", ".join(member.name for member in cls)
        raise ValueError(f"unknown workflow id reuse policy {value!r} (known: {names})")


@dataclass(frozen=True)
class StartOutcome:
    """What a start did: the run it returns, and whether that run is new.

    Attributes:
        exec_id: the fresh run, or the RUNNING run the call attached to.
        started_fresh: True when this call created the run.
    """

    exec_id: ExecutionId
    started_fresh: bool


@dataclass(frozen=True)
class StartOptions:
    """Options of `start_workflow_with_options`.

    Attributes:
        workflow_id: the business id (the reuse key); None or blank: the run's own id.
        memo: a JSON value stored with the run; the code may change it with
            `ctx.upsert_memo` (a memo that is not an object reads as {"value": memo}).
        search_attributes: the run's first search attributes (a JSON object).
        reuse_policy: what to do when a run of the id exists (see `WorkflowIdReusePolicy`).
        summary: a one-line label of the run (listings, describe, the GUI).
        details: a longer text about the run (describe, the GUI's Summary pane).
        queue: a registered queue: the run waits ENQUEUED until the queue admits it.
        priority: lower first (0..2**31-1); only on a queue made with ``priority=True``.
        partition_key: the queue's partition (each under ``partition_concurrency``,
            partitions admitted round robin).
        dedup_id: refused with `DuplicateEnqueue` while a run of the queue with
            this id is ENQUEUED or RUNNING.
        start_delay: the run waits ENQUEUED at least this long before admission.
    """

    workflow_id: str | None = None
    memo: Any = None
    search_attributes: Mapping[str, Any] = field(default_factory=dict)
    reuse_policy: WorkflowIdReusePolicy = WorkflowIdReusePolicy.ALLOW_DUPLICATE
    summary: str | None = None
    details: str | None = None
    queue: str | None = None
    priority: int | None = None
    partition_key: str | None = None
    dedup_id: str | None = None
    start_delay: Duration | None = None

    @property
    def flow(self) -> FlowStart | None:
        """The flow-control part of the options, checked; None when there is none.

        Raises:
            InvalidFlowOption: a priority out of range or a bad delay.
            InvalidName: a blank or over-long queue, partition or dedup id.
        """
        if (
            self.queue is None
            and self.priority is None
            and self.partition_key is None
            and self.dedup_id is None
            and self.start_delay is None
        ):
            return None
        return FlowStart.checked(
            queue=self.queue,
            priority=self.priority,
            partition_key=self.partition_key,
            dedup_id=self.dedup_id,
            start_delay=self.start_delay,
        )


@dataclass(frozen=True)
class FlowStart:
    """A start's queue options, checked (`StartOptions.flow`); the delay in seconds."""

    queue: str | None = None
    priority: int = 0
    partition_key: str | None = None
    dedup_id: str | None = None
    delay_seconds: float = 0.0

    @classmethod
    def checked(
        cls,
        *,
        queue: str | None,
        priority: int | None,
        partition_key: str | None,
        dedup_id: str | None,
        start_delay: Duration | None,
    ) -> FlowStart:
        """The options checked (raises before anything is written)."""
        for value, what in (
            (queue, "queue name"),
            (partition_key, "partition key"),
            (dedup_id, "dedup id"),
        ):
            if value is not None:
                if not isinstance(value, str) or not value.strip():
                    raise InvalidFlowOption(
                        option=f"StartOptions {what}",
                        why=f"a non-blank text, got {value!r}",
                    )
                check_name(value, what)
        delay = check_start_delay(start_delay)
        return cls(
            queue=queue,
            priority=0 if priority is None else check_priority(priority),
            partition_key=partition_key,
            dedup_id=dedup_id,
            delay_seconds=0.0 if delay is None else delay.total_seconds(),
        )

    def to_json(self) -> dict[str, Any]:
        """As a client command carries it."""
        return {
            "queue": self.queue,
            "priority": self.priority,
            "partition_key": self.partition_key,
            "dedup_id": self.dedup_id,
            "start_delay": self.delay_seconds,
        }


def checked_input(value: Any, limit_bytes: int = payloads.MAX_PAYLOAD_BYTES) -> str:
    """The start input as stored JSON; PayloadTooLarge / PayloadTooDeep before any write.

    `limit_bytes` is the workflow's cap (`@workflow(max_input_bytes=...)`);
    a client, which does not know the workflow's, checks against the ceiling
    and the serving process against the workflow's own.
    """
    return payloads.check(value, "start input", limit_bytes=limit_bytes)


def checked_label(value: Any, what: str) -> str | None:
    """A run's summary or details: None or text under the payload caps (TypeError otherwise)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"a run's {what} is text, got {type(value).__name__}")
    payloads.check(value, what)
    return value


def checked_memo(value: Any) -> str | None:
    """The memo as stored JSON (None when there is none), under the payload caps."""
    if value is None:
        return None
    return payloads.check(value, "memo")


def checked_search_attributes(value: Mapping[str, Any] | None) -> str | None:
    """The first search attributes as a stored JSON object (None when empty).

    A start does not apply the `upsert_search_attrs` key rules and
    search attributes have no size cap of their own; they must be a JSON
    object with text keys, within the nesting cap.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidSearchAttribute(
            key="(all)",
            reason=f"search attributes are a mapping, got {type(value).__name__}",
        )
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidSearchAttribute(key=repr(key), reason="keys are text")
        check_name(key, "search attribute key")
        if isinstance(item, str) and NUL in item:
            raise InvalidSearchAttribute(key=key, reason=NUL_REASON)
    if not value:
        return None
    return payloads.dumps(payloads.to_json(dict(value), "search attributes"))


RESERVED_KEY_PREFIX = "harvest.promise:"


@dataclass(frozen=True)
class SignalDelivery:
    """Where `send_signal_by_workflow_id` put the signal.

    Attributes:
        exec_id: the run that holds the signal (or already held its key).
        delivered: True when this call staged it; False when the key was
            already held by a run of the workflow id.
    """

    exec_id: ExecutionId
    delivered: bool


def check_signal(name: Any, key: str | None) -> str | None:
    """Refuse a blank name or a reserved key; an empty key is no key."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidSignal(
            reason=f"a signal name is non-empty text, got {_shown(name)}"
        )
    check_name(name, "signal name")
    if key is None or key == "":
        return None
    if not isinstance(key, str):
        raise InvalidSignal(reason=f"an idempotency key is text, got {_shown(key)}")
    check_name(key, "idempotency key")
    if key.startswith(RESERVED_KEY_PREFIX):
        raise InvalidSignal(
            reason=f"keys starting with {RESERVED_KEY_PREFIX!r} are reserved"
        )
    return key


def check_workflow_id(workflow_id: Any) -> str:
    """A workflow id that addresses runs: text that is not blank."""
    if workflow_id is None:
        raise BlankWorkflowId(workflow_id="None")
    text = check_name(workflow_id, "workflow id")
    if not text.strip():
        raise BlankWorkflowId(workflow_id=text)
    return text


def _shown(value: Any) -> str:
    """A bad value in a message: its repr, cut short (a name may be megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def encoded_payload(payload: Any) -> str:
    """The signal payload as stored JSON, under the payload caps."""
    return payloads.check(payload, "signal payload")


@dataclass(frozen=True)
class SignalWithStart:
    """A signal-with-start request.

    Attributes:
        workflow_name: the registered workflow to start (when a start happens).
        workflow_id: the business id (required, not blank).
        input: the start input; checked and used only when the call starts a run.
        reuse_policy: the start matrix to apply (see `WorkflowIdReusePolicy`).
        signal_name: the signal to stage (required, not blank).
        signal_payload: its JSON payload.
        idempotency_key: a key deduped across every run of the workflow id;
            None or "" for no key.
    """

    workflow_name: str
    workflow_id: str
    input: Any = None
    reuse_policy: WorkflowIdReusePolicy = WorkflowIdReusePolicy.ALLOW_DUPLICATE
    signal_name: str = ""
    signal_payload: Any = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class SignalWithStartOutcome:
    """What a signal-with-start did.

    Attributes:
        exec_id: the run that holds the signal (or its key).
        started_fresh: True when this call started that run.
        signal_delivered: True when this call staged the signal; False when a
            run of the workflow id already held its key.
    """

    exec_id: ExecutionId
    started_fresh: bool
    signal_delivered: bool


@dataclass(frozen=True)
class UpdateWithStart:
    """An update-with-start request.

    Attributes:
        workflow_name: the registered workflow to start (when a start happens).
        workflow_id: the business id (required, not blank): the run to attach to.
        input: the start input; checked and used only when the call starts a run.
        update_name: the update handler to run (required, not blank).
        update_arg: its JSON argument.
        reuse_policy: the start matrix to apply (see `WorkflowIdReusePolicy`).
    """

    workflow_name: str
    workflow_id: str
    input: Any = None
    update_name: str = ""
    update_arg: Any = None
    reuse_policy: WorkflowIdReusePolicy = WorkflowIdReusePolicy.ALLOW_DUPLICATE


@dataclass(frozen=True)
class UpdateWithStartOutcome:
    """What an update-with-start did.

    Attributes:
        exec_id: the run the update ran against.
        started_fresh: True when this call started that run.
        result: the update handler's JSON result.
    """

    exec_id: ExecutionId
    started_fresh: bool
    result: Any


def check_request(request: Any) -> UpdateWithStart:
    """Refuse a malformed request before anything is written (also in a client)."""
    if not isinstance(request, UpdateWithStart):
        raise TypeError(f"update_with_start needs an UpdateWithStart, got {request!r}")
    WorkflowIdReusePolicy.coerce(request.reuse_policy)
    check_name(request.workflow_name, "workflow name")
    check_workflow_id(request.workflow_id)
    name = request.update_name
    if not isinstance(name, str) or not name.strip():
        raise UpdateRejected(
            name=repr(name)[:80], reason="an update name is non-empty text"
        )
    check_name(name, "update name")
    checked_input(request.input, MAX_INPUT_BYTES_CEILING)
    payloads.check(request.update_arg, "update input")
    return request
