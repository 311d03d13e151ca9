"""The runtime's calls that talk to runs: starts, signals, queries and updates.

They are `SqliteRuntime` methods, written here so the facade stays a short
table of its surface; the class binds each function as its method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.errors import ExecutionNotFound, InvalidSignal
from harvest_engine.runtime import queries, signals, start_calls, starts, updates
from harvest_engine.runtime import signal_with_start as signal_start
from harvest_engine.runtime import update_with_start as update_start

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from harvest_engine.runtime.runtime import SqliteRuntime
    from harvest_engine.runtime.signal_with_start import (
        SignalWithStart,
        SignalWithStartOutcome,
    )
    from harvest_engine.runtime.update_with_start import (
        UpdateWithStart,
        UpdateWithStartOutcome,
    )
    from harvest_engine.states import ExecutionId


def start_workflow(self: SqliteRuntime, name: str, input: Any = None) -> ExecutionId:
    """Start a fresh run; nothing executes until a drive."""
    return self._woken(start_calls.start_fresh(self, name, None, input))


def start_workflow_with_id(
    self: SqliteRuntime, name: str, workflow_id: str, input: Any = None
) -> ExecutionId:
    """Start with a business id, attaching to a RUNNING run of the same name and id."""
    return self._woken(start_calls.start_with_id(self, name, workflow_id, input))


def send_signal(
    self: SqliteRuntime, exec_id: str | ExecutionId, name: str, payload: Any = None
) -> None:
    """Stage a signal for a RUNNING run; the next drive appends it to history."""
    self._signal(exec_id, name, payload, None)
    self.waker.wake()


def _signal(
    self: SqliteRuntime,
    exec_id: str | ExecutionId,
    name: str,
    payload: Any,
    key: str | None,
) -> bool:
    """`signals.send_signal`; its transaction's read of the row finds an unknown run."""
    text = self._id_text(exec_id)
    try:
        return signals.send_signal(
            self._store, text, name, payload, key, self.clock.now()
        )
    except InvalidSignal:
        self._require(text)  # an unknown run is reported first, as it was
        raise


def start_workflow_with_reuse_policy(  # noqa: D417 (self is the runtime)
    self: SqliteRuntime,
    name: str,
    workflow_id: str,
    input: Any,
    policy: starts.WorkflowIdReusePolicy,
) -> starts.StartOutcome:
    """Start under a workflow-id reuse policy; whether it attached or started fresh.

    The matrix (the prior is the newest run of the name and id; a RUNNING
    one wins; a blank id always starts fresh):

    | prior | ALLOW_DUPLICATE | ALLOW_DUPLICATE_FAILED_ONLY | REJECT_DUPLICATE | TERMINATE_IF_RUNNING |
    | --- | --- | --- | --- | --- |
    | none | fresh | fresh | fresh | fresh |
    | RUNNING | attach | attach | refused | replace |
    | COMPLETED | fresh | refused | refused | fresh |
    | FAILED, TIMED_OUT, CANCELLED | fresh | fresh | refused | fresh |
    | TERMINATED | fresh | fresh | fresh | fresh |

    Args:
        name: a registered workflow name.
        workflow_id: the business id (the reuse key).
        input: the start input (checked against the payload caps first).
        policy: a `WorkflowIdReusePolicy` (or its name).

    Returns:
        `StartOutcome(exec_id, started_fresh)`. An attach discards the input.

    Raises:
        WorkflowAlreadyStarted: the policy refused; it names the prior run.
        PayloadTooLarge, PayloadTooDeep: the input is over a cap (nothing persisted).
        UnknownWorkflow: `name` is not registered.
    """
    return self._woken(
        start_calls.start_with_policy(self, name, workflow_id, input, policy)
    )


def start_workflow_with_options(
    self: SqliteRuntime, name: str, input: Any, options: starts.StartOptions
) -> starts.StartOutcome:
    """Start with `StartOptions(workflow_id=, memo=, search_attributes=, reuse_policy=)`.

    The memo and the first search attributes are stored with a fresh run;
    a start that returns an existing run leaves them as they are.
    """
    return self._woken(start_calls.start_with_options(self, name, input, options))


def signal_with_start(
    self: SqliteRuntime, request: SignalWithStart
) -> SignalWithStartOutcome:
    """Signal the RUNNING run of the id, or start one and signal it, in one transaction.

    A key held by any run of the id stages nothing and starts nothing
    (`signal_delivered=False`). A RUNNING run with a pending cancel counts
    as CANCELLED; a fresh start over a closed prior seals it
    CONTINUED_AS_NEW. Blank id: BlankWorkflowId; a refused start:
    WorkflowAlreadyStarted; the input cap applies only when a run starts.
    """
    return self._woken(signal_start.signal_with_start(self, request))


def send_signal_idempotent(
    self: SqliteRuntime,
    exec_id: str | ExecutionId,
    name: str,
    payload: Any,
    key: str | None,
) -> bool:
    """Stage a keyed signal; False when this run already holds `key` (also after it ended).

    An empty or None key is no key. A key starting with ``harvest.promise:``
    is InvalidSignal.
    """
    return self._woken(self._signal(exec_id, name, payload, key))


def send_signal_by_workflow_id(
    self: SqliteRuntime,
    workflow_name: str,
    workflow_id: str,
    name: str,
    payload: Any = None,
    key: str | None = None,
) -> signals.SignalDelivery:
    """Signal the RUNNING run of (workflow_name, workflow_id); where it went.

    Raises BlankWorkflowId, InvalidSignal, WorkflowIdNotFound (no run at
    all) or WorkflowNotRunning (the newest run is closed), in that order
    after the key probe: a key any run of the id holds returns
    ``SignalDelivery(holder, delivered=False)``.
    """
    return self._woken(
        signals.send_signal_by_workflow_id(
            self._store,
            workflow_name,
            workflow_id,
            name,
            payload,
            key,
            self.clock.now(),
        )
    )


def query(
    self: SqliteRuntime, exec_id: str | ExecutionId, name: str, arg: Any = None
) -> Coroutine[Any, Any, Any]:
    """Await the answer of query handler `name` at the run's frontier; writes nothing.

    The run's rows are read when this is called; awaiting replays them.
    A body handler (``ctx.register_query``) wins over an ``@query`` one.

    Raises (when awaited):
        ExecutionNotFound, QueryNotFound, QueryFailed, QueryTimedOut,
        NonDeterminismDetected.
    """
    try:
        text = self._require(exec_id)
    except ExecutionNotFound as exc:
        return queries.failing(exc)
    return queries.query(self, text, name, arg)


async def update(
    self: SqliteRuntime, exec_id: str | ExecutionId, name: str, arg: Any = None
) -> Any:
    """Run update `name(arg)`: validated, then recorded with its result in one transaction.

    The update does not drive the run; drive it afterwards.

    Raises:
        ExecutionNotFound, WorkflowNotRunning, UpdateInputInvalid,
        UpdateRejected (no event), UpdateFailed (an UpdateFailed event),
        UpdateTimedOut (no event), UpdateHistoryCapReached (the run failed
        at the cap), PayloadTooLarge / PayloadTooDeep for the input.
    """
    return self._woken(await updates.update(self, self._require(exec_id), name, arg))


async def update_with_start(
    self: SqliteRuntime, request: UpdateWithStart
) -> UpdateWithStartOutcome:
    """Start (or attach to) the run of the id and run an update on it, in one transaction.

    The start, a fresh run's first decision and the update's events land
    together; an update that is rejected, invalid or fails still leaves
    the started run, and its typed error is raised.

    Raises:
        BlankWorkflowId, WorkflowAlreadyStarted, UnknownWorkflow,
        PayloadTooLarge / PayloadTooDeep (nothing written), then the
        update's errors as `update` raises them.
    """
    return self._woken(update_start.update_with_start(self, request))
