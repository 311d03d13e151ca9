"""Start shaping and breaker values: Batch, CircuitBreaker, the input-cap ceiling, and their reads.

`@workflow(debounce=..., batch=Batch(...), max_input_bytes=...)` and
`@activity(circuit_breaker=CircuitBreaker(...))` take these (guide §5); the
registry parses them with `workflow_shaping` / `activity_breaker`, so a bad
value is an `InvalidFlowOption` at registration and nothing is registered.
`HeldStart` and `BreakerInfo` are what `rt.held_starts()` and
`rt.circuit_breakers()` return.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import InvalidFlowOption
from harvest_engine.payloads import MAX_PAYLOAD_BYTES

MAX_INPUT_BYTES_CEILING = 32 * 1024 * 1024
"""The largest `max_input_bytes` a workflow may declare (32 MiB): one start
input is one row and one event, written and read whole, and its event must
leave room under the default history byte cap (50 MiB) for the rest of the
run; at 64 MiB an accepted input failed its run at the first decision."""

WORKFLOW_OPTIONS = frozenset({"debounce", "batch", "max_input_bytes"})
"""The workflow options this module parses (the others are refused or parsed elsewhere)."""

ACTIVITY_OPTIONS = frozenset({"circuit_breaker"})
"""The activity options this module parses."""


def _positive(value: Duration, owner: str, option: str) -> timedelta:
    try:
        delta = to_timedelta(value, what=option)
    except ValueError as exc:
        raise InvalidFlowOption(owner=owner, option=option, why=str(exc)) from None
    if delta <= timedelta(0):
        raise InvalidFlowOption(
            owner=owner,
            option=option,
            why=f"must be a positive duration, got {value!r}",
        )
    return delta


def _count(value: Any, owner: str, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidFlowOption(
            owner=owner,
            option=option,
            why=f"must be a whole number >= 1, got {value!r}",
        )
    return value


@dataclass(frozen=True)
class Batch:
    """Starts of a workflow collect into one run whose input is the list of their inputs.

    The run starts when `max_size` inputs arrived, or `max_wait` after the
    first one, whichever comes first. Inputs keep their arrival order.

    Raises:
        InvalidFlowOption: `max_size` below 1 or `max_wait` not positive.
    """

    max_size: int
    max_wait: Duration

    def __post_init__(self) -> None:
        _count(self.max_size, "Batch", "max_size")
        _positive(self.max_wait, "Batch", "max_wait")

    @property
    def wait(self) -> timedelta:
        """`max_wait` as a timedelta."""
        return to_timedelta(self.max_wait)


@dataclass(frozen=True)
class CircuitBreaker:
    """After `failures` failed attempts of one activity within `window`, fail fast for `cooldown`.

    While open, an attempt fails at once with `CircuitOpen` (retryable,
    recorded like a failed attempt; the body does not run). After the
    cooldown one probe attempt runs: success closes the breaker, failure
    opens it for another cooldown.

    Raises:
        InvalidFlowOption: `failures` below 1, or a window or cooldown not positive.
    """

    failures: int
    window: Duration
    cooldown: Duration

    def __post_init__(self) -> None:
        _count(self.failures, "CircuitBreaker", "failures")
        _positive(self.window, "CircuitBreaker", "window")
        _positive(self.cooldown, "CircuitBreaker", "cooldown")

    @property
    def window_delta(self) -> timedelta:
        """`window` as a timedelta."""
        return to_timedelta(self.window)

    @property
    def cooldown_delta(self) -> timedelta:
        """`cooldown` as a timedelta."""
        return to_timedelta(self.cooldown)


@dataclass(frozen=True)
class WorkflowShaping:
    """A workflow's parsed shaping options (the registry keeps one per workflow)."""

    debounce: timedelta | None = None
    batch: Batch | None = None
    max_input_bytes: int = MAX_PAYLOAD_BYTES

    @property
    def holds_starts(self) -> bool:
        """Whether a start waits in the held-start table instead of starting a run."""
        return self.debounce is not None or self.batch is not None


def workflow_shaping(owner: str, options: dict[str, Any]) -> WorkflowShaping:
    """Parse `debounce`, `batch` and `max_input_bytes` out of a workflow's options.

    Raises:
        InvalidFlowOption: a bad value, or debounce and batch together.
    """
    debounce = None
    if "debounce" in options:
        debounce = _positive(options["debounce"], owner, "debounce")
    batch = options.get("batch")
    if batch is not None and not isinstance(batch, Batch):
        raise InvalidFlowOption(
            owner=owner, option="batch", why=f"must be a Batch(...), got {batch!r}"
        )
    if debounce is not None and batch is not None:
        raise InvalidFlowOption(
            owner=owner,
            option="debounce",
            why="cannot be combined with batch (both shape one workflow's starts)",
        )
    cap = options.get("max_input_bytes", MAX_PAYLOAD_BYTES)
    _count(cap, owner, "max_input_bytes")
    if cap > MAX_INPUT_BYTES_CEILING:
        raise InvalidFlowOption(
            owner=owner,
            option="max_input_bytes",
            why=f"{cap} is over the ceiling of {MAX_INPUT_BYTES_CEILING} bytes",
        )
    return WorkflowShaping(debounce=debounce, batch=batch, max_input_bytes=cap)


def activity_breaker(owner: str, options: dict[str, Any]) -> CircuitBreaker | None:
    """The `circuit_breaker` option of an activity, checked.

    Raises:
        InvalidFlowOption: it is not a CircuitBreaker.
    """
    breaker = options.get("circuit_breaker")
    if breaker is not None and not isinstance(breaker, CircuitBreaker):
        raise InvalidFlowOption(
            owner=owner,
            option="circuit_breaker",
            why=f"must be a CircuitBreaker(...), got {breaker!r}",
        )
    return breaker


@dataclass(frozen=True)
class HeldStart:
    """Starts waiting for their debounce or batch window: the run to be, not started yet.

    Attributes:
        exec_id: the id the run will have (every collected start returned it).
        workflow_name: the workflow.
        workflow_id: the key the starts collected under ("" for starts without one).
        kind: "debounce" or "batch".
        inputs: how many inputs are held (debounce keeps only the last).
        opened_at: when the first start arrived.
        due_at: when the run starts unless more starts change it.
    """

    exec_id: str
    workflow_name: str
    workflow_id: str
    kind: str
    inputs: int
    opened_at: datetime
    due_at: datetime


@dataclass(frozen=True)
class BreakerInfo:
    """One activity's circuit breaker as stored.

    Attributes:
        activity: the activity name.
        state: "CLOSED", "OPEN" (failing fast until `open_until`) or
            "HALF_OPEN" (the cooldown passed: the next attempt probes).
        recent_failures: failures kept for the window (at most `failures`).
        open_until: the end of the cooldown of an open breaker.
    """

    activity: str
    state: str
    recent_failures: int
    open_until: datetime | None
