"""The harvest error hierarchy: one root, structured fields, picklable.

`HarvestError` is the root. `SqliteError` covers everything the store and the
runtime raise. Errors take keyword-only structured fields and build their
message from them, so a GUI or a CLI can show them in words and a test can
assert on fields rather than on text.

Control flow that user code must never swallow (`ContinueAsNew` and the
engine's internal teardown) derives from `BaseException`, as Temporal's
`ContinueAsNewError` and trio's `Cancelled` do: a workflow's
`except Exception:` cannot catch it.
"""

from __future__ import annotations

from typing import Any

from harvest_engine.states import ExecutionId

__all__ = [
    "ActivityError",
    "ApplicationError",
    "BlankWorkflowId",
    "ChildWorkflowError",
    "CommandTimedOut",
    "ContinueAsNew",
    "DatabaseClosed",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "ExecutionExists",
    "ExecutionNotFound",
    "ExternalWorkflowError",
    "HarvestError",
    "HarvestInternalError",
    "InvalidFilter",
    "InvalidHistoryFile",
    "InvalidName",
    "InvalidSearchAttribute",
    "InvalidSignal",
    "NonDeterminismDetected",
    "NonDeterministicCall",
    "NotAHarvestDatabase",
    "PayloadNotJson",
    "PayloadTooDeep",
    "PayloadTooLarge",
    "QueryFailed",
    "QueryNotFound",
    "QueryTimedOut",
    "ScheduleNotFound",
    "SchemaTooNew",
    "SqliteError",
    "StorageError",
    "Stuck",
    "UnknownWorkflow",
    "Unsupported",
    "UnsupportedFeature",
    "UpdateFailed",
    "UpdateHistoryCapReached",
    "UpdateInputInvalid",
    "UpdateRejected",
    "UpdateTimedOut",
    "WorkflowAlreadyStarted",
    "WorkflowIdNotFound",
    "WorkflowNotRunning",
    "WorkflowPanicked",
]


class HarvestError(Exception):
    """Root of every error the engine raises.

    Subclasses declare their structured fields as keyword-only constructor
    arguments and a ``_template`` that formats them into the message.
    """

    _template = "{message}"

    def __init__(self, message: str | None = None, **fields: Any) -> None:
        self._fields = dict(fields)
        for key, value in fields.items():
            setattr(self, key, value)
        if message is None:
            message = self._template.format(**fields)
        self.message = message
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (crash demo, e2e tests): rebuild
        # from the message and the structured fields.
        return (_rebuild, (type(self), self.message, self._fields))

    def __str__(self) -> str:
        return self.message


def _rebuild(
    cls: type[HarvestError], message: str, fields: dict[str, Any]
) -> HarvestError:
    err = cls.__new__(cls)
    if "exec_id" in fields:  # JSON from another process carries the id as text
        fields = {**fields, "exec_id": _run_id(fields["exec_id"])}
    HarvestError.__init__(err, message, **fields)
    return err


def _run_id(value: Any) -> Any:
    """An error's id field: the `ExecutionId` passed or found, parsed from its text.

    So ``err.exec_id == exec_id`` holds for the id a caller has in hand.
    A value that is no id at all (blank text, a number) is kept as given.
    """
    if isinstance(value, ExecutionId):
        return value
    if isinstance(value, str) and value.strip():
        return ExecutionId.parse(value)
    return value


class HarvestInternalError(HarvestError):
    """A broken invariant inside harvest: a bug to report, never user error."""

    _template = "internal error (please report): {detail}"

    def __init__(self, detail: str) -> None:
        super().__init__(detail=detail)


class NonDeterminismDetected(HarvestError):
    """Replaying workflow code produced a command the history did not record."""

    _template = (
        "non-determinism in run {exec_id} at event {seq}: {recorded} was recorded "
        "when {expected} was expected. Check that your workflow is deterministic "
        "(no wall clock, randomness, I/O or changed code paths)."
    )

    def __init__(
        self,
        *,
        exec_id: ExecutionId | str,
        seq: int | None,
        recorded: str,
        expected: str,
    ) -> None:
        super().__init__(
            exec_id=_run_id(exec_id), seq=seq, recorded=recorded, expected=expected
        )


class NonDeterministicCall(HarvestError):
    """Workflow code called something that would break deterministic replay."""

    _template = "{call} is not allowed in workflow code: use {instead} instead"

    def __init__(self, *, call: str, instead: str) -> None:
        super().__init__(call=call, instead=instead)


class ApplicationError(HarvestError):
    """A typed failure raised by activity or workflow code.

    Args:
        message: the human-readable text.
        type: an error type name; defaults to the class name.
        non_retryable: when true, no retry policy retries it.
        details: any JSON value to carry along.
    """

    type: str
    non_retryable: bool
    details: Any

    def __init__(
        self,
        message: str = "",
        *,
        type: str | None = None,
        non_retryable: bool = False,
        details: Any = None,
    ) -> None:
        super().__init__(
            message,
            type=type or self.__class__.__name__,
            non_retryable=non_retryable,
            details=details,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self._fields))


class ActivityError(ApplicationError):
    """An activity failed for good (its retries, if any, are used up)."""


class ChildWorkflowError(ApplicationError):
    """A child workflow failed, was cancelled or was terminated."""


class ExternalWorkflowError(ApplicationError):
    """A command to another run failed (`target_unknown`, `target_terminated`)."""


class SqliteError(HarvestError):
    """Everything the store and the runtime raise."""


class DatabaseLocked(SqliteError):
    """Another runtime (in this or another process) holds the writer lock."""

    _template = (
        "{path} is held by another writer{held_by} (lock file {lock_path}); open it "
        "read-only with SqliteReader, or stop the other process"
    )

    def __init__(
        self, *, path: str, lock_path: str, holder_pid: int | None = None
    ) -> None:
        super().__init__(
            path=path,
            lock_path=lock_path,
            holder_pid=holder_pid,
            held_by="" if holder_pid is None else f" (process {holder_pid})",
        )


class SchemaTooNew(SqliteError):
    """The file was written by a newer harvest; it is left untouched."""

    _template = (
        "{path} has schema version {found}, newer than this harvest supports "
        "({supported}); upgrade harvest to open it"
    )

    def __init__(self, *, path: str, found: int, supported: int) -> None:
        super().__init__(path=path, found=found, supported=supported)


class NotAHarvestDatabase(SqliteError):
    """The file is not a harvest database (or is not SQLite at all)."""

    _template = "{path} is not a harvest database: {reason}"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)


class DatabaseClosed(SqliteError):
    """The runtime or reader was closed; open the file again to use it."""

    _template = "{path} is closed: open it again to use it"

    def __init__(self, *, path: str) -> None:
        super().__init__(path=path)


class StorageError(SqliteError):
    """The file could not be written or read: disk full, I/O error, read-only, permission.

    The operating system's error (or the driver's) is the ``__cause__``. Nothing
    half-done stays: the transaction that met it is rolled back, the runtime
    stays usable, and the same call succeeds once the cause is gone.
    """

    _template = "{path}: storage failed ({reason})"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)


class DatabaseCorrupt(SqliteError):
    """A read met a damaged file or row that `Stored.Unreadable` cannot stand for.

    A single-run read (describe, history, outcome) of a damaged run raises it;
    a listing flags the row (`ExecutionSummary.damaged`) instead, so one bad
    row never fails a page.
    """

    _template = "{path} is damaged: {reason}"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)


class ExecutionNotFound(SqliteError):
    """No execution has this id."""

    _template = "no execution with id {exec_id}"

    def __init__(self, *, exec_id: ExecutionId | str) -> None:
        super().__init__(exec_id=_run_id(exec_id))


class WorkflowNotRunning(SqliteError):
    """The execution is terminal, so it cannot take this call."""

    _template = "execution {exec_id} is not running (state {state})"

    def __init__(self, *, exec_id: ExecutionId | str, state: str) -> None:
        super().__init__(exec_id=_run_id(exec_id), state=state)


class WorkflowAlreadyStarted(SqliteError):
    """The reuse policy refused a start because a prior run holds the id."""

    _template = (
        "workflow {workflow_name!r} with id {workflow_id!r} already has run "
        "{exec_id} ({state}); the reuse policy {policy} refuses a new start"
    )

    def __init__(
        self,
        *,
        workflow_name: str,
        workflow_id: str,
        exec_id: ExecutionId | str,
        state: str,
        policy: str,
    ) -> None:
        super().__init__(
            workflow_name=workflow_name,
            workflow_id=workflow_id,
            exec_id=_run_id(exec_id),
            state=state,
            policy=policy,
        )


class WorkflowIdNotFound(SqliteError):
    """No run of this workflow name has this workflow id."""

    _template = "no run of {workflow_name!r} has workflow id {workflow_id!r}"

    def __init__(self, *, workflow_name: str, workflow_id: str) -> None:
        super().__init__(workflow_name=workflow_name, workflow_id=workflow_id)


class BlankWorkflowId(SqliteError):
    """A workflow id that is empty or only white space where one is required."""

    _template = "a workflow id is required here, got {workflow_id!r}"

    def __init__(self, *, workflow_id: str) -> None:
        super().__init__(workflow_id=workflow_id)


class PayloadTooLarge(SqliteError):
    """A payload's JSON encoding is over the size cap."""

    _template = "{what} is {size} bytes, over the {limit}-byte cap"

    def __init__(self, *, what: str, size: int, limit: int) -> None:
        super().__init__(what=what, size=size, limit=limit)


class PayloadTooDeep(SqliteError):
    """A payload nests deeper than `MAX_PAYLOAD_DEPTH`."""

    _template = "{what} nests deeper than {limit} levels"

    def __init__(self, *, what: str, limit: int) -> None:
        super().__init__(what=what, limit=limit)


class InvalidName(SqliteError, TypeError, ValueError):
    """A name or id that is not text, is over the length cap, or cannot be stored.

    Workflow names and ids, signal, query and update names, search-attribute
    keys, idempotency and mutex keys are text of at most 1,000 characters
    with no lone surrogates. A `TypeError` and a `ValueError` too, the errors
    such calls raised before.
    """

    _template = "invalid {what}: {reason}"

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(what=what, reason=reason)


class PayloadNotJson(SqliteError, TypeError):
    """A payload holds a value JSON cannot keep exactly; nothing was written.

    NaN or an infinity, a non-text object key, an integer past 64 bits, a
    lone surrogate in text, or a value of another type (a datetime, a set,
    bytes, an object). `path` names where (`$.items[3].price`). A
    `TypeError` too, as these payloads were refused (or silently changed)
    with a plain `TypeError` before.
    """

    _template = "{what} is not JSON: {reason} at {path}"

    def __init__(self, *, what: str, path: str, reason: str) -> None:
        super().__init__(what=what, path=path, reason=reason)


class UnsupportedFeature(SqliteError):
    """A declared option this backend cannot honour, refused at register time."""

    _template = "{owner}: {feature} is not supported by the SQLite backend ({why})"

    def __init__(self, *, owner: str, feature: str, why: str) -> None:
        super().__init__(owner=owner, feature=feature, why=why)


class Unsupported(SqliteError):
    """A command or field reached at run time that this backend rejects."""

    _template = "{feature} — {why}"

    def __init__(self, *, feature: str, why: str) -> None:
        super().__init__(feature=feature, why=why)


class UnknownWorkflow(SqliteError):
    """No workflow of this name is registered in this runtime."""

    _template = "workflow {name!r} is not registered (register it before driving)"

    def __init__(self, *, name: str) -> None:
        super().__init__(name=name)


class ScheduleNotFound(SqliteError):
    """No schedule is stored for this workflow name (trigger and backfill need one)."""

    _template = "no schedule is stored for workflow {workflow_name!r}"

    def __init__(self, *, workflow_name: str) -> None:
        super().__init__(workflow_name=workflow_name)


class UnknownActivity(SqliteError):
    """No activity of this name is registered in this runtime."""

    _template = "activity {name!r} is not registered (register it before driving)"

    def __init__(self, *, name: str) -> None:
        super().__init__(name=name)


class Stuck(SqliteError):
    """The run waits on nothing a drive can provide (e.g. `await_condition`)."""

    _template = (
        "run {exec_id} is blocked on a condition with no pending work; send a "
        "signal or update that changes it, then drive again"
    )

    def __init__(self, *, exec_id: ExecutionId | str) -> None:
        super().__init__(exec_id=_run_id(exec_id))


class WorkflowPanicked(SqliteError):
    """Workflow code raised a non-application exception (a bug in the code).

    The cycle rolled back and the run stays RUNNING, until the third
    consecutive panic fails it with error type ``Panic``. `details` holds
    the user-code traceback (`traceback`: file, line, function, source per
    frame); `retry_at` is when `poll_once`, `run_until_idle` and `serve`
    try the run again (1 s, then 2 s, ... after each panic).
    """

    _template = (
        "workflow code of run {exec_id} raised {error} (panic {count} of {budget}"
        "{retry})"
    )

    def __init__(
        self,
        *,
        exec_id: ExecutionId | str,
        error: str,
        count: int,
        budget: int,
        details: Any = None,
        retry_at: Any = None,
    ) -> None:
        super().__init__(
            exec_id=_run_id(exec_id),
            error=error,
            count=count,
            budget=budget,
            details=details,
            retry_at=retry_at,
            retry="" if retry_at is None else f"; a pass retries it from {retry_at}",
        )


class InvalidSignal(SqliteError):
    """A signal call that breaks a signal rule (e.g. a reserved key prefix)."""

    _template = "invalid signal: {reason}"

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason=reason)


class InvalidFilter(SqliteError):
    """An execution filter outside the documented limits."""

    _template = "invalid filter: {reason}"

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason=reason)


class InvalidSearchAttribute(SqliteError):
    """A search attribute key or value that cannot be stored or compared."""

    _template = "invalid search attribute {key!r}: {reason}"

    def __init__(self, *, key: str, reason: str) -> None:
        super().__init__(key=key, reason=reason)


class QueryNotFound(SqliteError):
    """The run has no query handler of this name."""

    _template = "run {exec_id} has no query handler {name!r} (known: {known})"

    def __init__(
        self, *, exec_id: ExecutionId | str, name: str, known: str = "none"
    ) -> None:
        super().__init__(exec_id=_run_id(exec_id), name=name, known=known)


class QueryFailed(SqliteError):
    """The query handler raised."""

    _template = "query {name!r} of run {exec_id} failed: {error}"

    def __init__(self, *, exec_id: ExecutionId | str, name: str, error: str) -> None:
        super().__init__(exec_id=_run_id(exec_id), name=name, error=error)


class QueryTimedOut(SqliteError):
    """The query's replay did not finish within the query timeout."""

    _template = "query {name!r} of run {exec_id} timed out after {seconds}s"

    def __init__(
        self, *, exec_id: ExecutionId | str, name: str, seconds: float
    ) -> None:
        super().__init__(exec_id=_run_id(exec_id), name=name, seconds=seconds)


class UpdateInputInvalid(SqliteError):
    """The update's input does not match the handler's declared type."""

    _template = "update {name!r} input is invalid: {reason}"

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name, reason=reason)


class UpdateRejected(SqliteError):
    """The update's validator refused it; no event was written."""

    _template = "update {name!r} rejected: {reason}"

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name, reason=reason)


class UpdateFailed(SqliteError):
    """The update handler raised; an `UpdateFailed` event records it."""

    _template = "update {name!r} failed: {error}"

    def __init__(self, *, name: str, error: str) -> None:
        super().__init__(name=name, error=error)


class UpdateTimedOut(SqliteError):
    """The update handler ran past its limit or awaited a durable command."""

    _template = "update {name!r} timed out: {reason}"

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name, reason=reason)


class UpdateHistoryCapReached(SqliteError):
    """The update's events would reach a history cap; the run failed at it."""

    _template = "update {name!r} would reach the history cap of run {exec_id}"

    def __init__(self, *, name: str, exec_id: ExecutionId | str) -> None:
        super().__init__(name=name, exec_id=_run_id(exec_id))


class CommandTimedOut(SqliteError):
    """No serving process answered a client command in time; it stays queued and applies later."""

    _template = (
        "command {command_id} ({kind}) got no reply within {seconds}s: no process "
        "serves {path} (start one with `await rt.serve()`); the command stays queued "
        "and is applied when one does"
    )

    def __init__(
        self, *, command_id: str, kind: str = "", seconds: float = 0.0, path: str = ""
    ) -> None:
        super().__init__(command_id=command_id, kind=kind, seconds=seconds, path=path)


class ContinueAsNew(BaseException):
    """Raised by `ctx.continue_as_new(input)`; ends the run and starts its successor.

    A `BaseException`, so a workflow's ``except Exception:`` cannot swallow it.
    """

    def __init__(self, input: Any) -> None:
        super().__init__("continue as new")
        self.input = input


class ExecutionExists(SqliteError):
    """An imported history names a run this database already holds; nothing was written."""

    _template = "execution {exec_id} already exists in {target}; nothing was imported"

    def __init__(self, *, exec_id: ExecutionId | str, target: str = "") -> None:
        super().__init__(exec_id=_run_id(exec_id), target=target)


class InvalidHistoryFile(SqliteError, ValueError):
    """A history file to import is not one closed run's history; nothing was written."""

    _template = "{path} cannot be imported: {reason}"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)
