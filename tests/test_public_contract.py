"""The public surface is a contract: names and signatures a refactor may not drop silently.

STYLE §2: `harvest_engine.__all__` and the public signatures (as
`inspect.signature` text) of the runtimes, the client and the workflow
context are checked against lists kept here, taken from `main` before the
third wave's layout move (with what main added meanwhile: NotServed,
HarvestClient.command_applied, withdraw and served_ago). A change to one of them is a change to API.md:
edit the list on purpose, in the same commit.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

import harvest_engine

ALL = [
    "ActivityAttempt",
    "ActivityContext",
    "ActivityError",
    "ActivityInfo",
    "ActivityRunInfo",
    "ActivitySpec",
    "ApplicationError",
    "Batch",
    "BlankWorkflowId",
    "BreakerInfo",
    "ChildWorkflowError",
    "CircuitBreaker",
    "CircuitOpen",
    "Clock",
    "CommandTimedOut",
    "ContinueAsNew",
    "CoroutineStack",
    "CodecRequired",
    "DatabaseClosed",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "DuplicateEnqueue",
    "ErrorInfo",
    "ExecutionDetail",
    "ExecutionExists",
    "ExecutionFilter",
    "ExecutionId",
    "ExecutionNotFound",
    "ExecutionOutcome",
    "ExecutionPage",
    "ExecutionSummary",
    "ExternalWorkflowError",
    "HandlerInfo",
    "HarvestClient",
    "HarvestError",
    "HarvestInternalError",
    "HeldStart",
    "HistoryCaps",
    "HistoryEvent",
    "Interceptor",
    "InvalidFilter",
    "InvalidFlowOption",
    "InvalidFlowControl",  # InvalidFlowOption's former name: the same class
    "InvalidHistoryFile",
    "InvalidName",
    "InvalidSearchAttribute",
    "InvalidSignal",
    "LedgerRow",
    "LedgerTotals",
    "LlmCall",
    "LogLine",
    "ManualClock",
    "MutexRow",
    "NonDeterminismDetected",
    "NonDeterministicCall",
    "NotAHarvestDatabase",
    "NotServed",
    "Overlap",
    "ParentClosePolicy",
    "PayloadInvalid",
    "PayloadNotJson",
    "PayloadTooDeep",
    "PayloadTooLarge",
    "PendingTask",
    "PostgresReader",
    "PostgresRuntime",
    "QueryFailed",
    "QueryNotFound",
    "QueryTimedOut",
    "Queue",
    "QueueInfo",
    "QuotaExceeded",
    "Rate",
    "RetryPolicy",
    "RunInfo",
    "RunState",
    "RunWait",
    "Schedule",
    "ScheduleNotFound",
    "ScheduleRow",
    "SchemaTooNew",
    "SignalDelivery",
    "SignalWithStart",
    "SignalWithStartOutcome",
    "SqliteError",
    "SqliteReader",
    "SqliteRuntime",
    "StackFrame",
    "StagedSignal",
    "StartOptions",
    "StartOutcome",
    "StorageError",
    "Stored",
    "Stuck",
    "SystemClock",
    "TimerHandle",
    "TimerOutcome",
    "TimerRow",
    "UnknownQueue",
    "UnknownWorkflow",
    "Unsupported",
    "UnsupportedFeature",
    "UpdateFailed",
    "UpdateHistoryCapReached",
    "UpdateInputInvalid",
    "UpdateRejected",
    "UpdateTimedOut",
    "UpdateWithStart",
    "UpdateWithStartOutcome",
    "WorkflowAlreadyStarted",
    "WorkflowContext",
    "WorkflowIdNotFound",
    "WorkflowIdReusePolicy",
    "WorkflowInfo",
    "WorkflowLogPolicy",
    "WorkflowNotRunning",
    "WorkflowPanicked",
    "WorkflowReplayer",
    "WorkflowSchedule",
    "__version__",
    "activity",
    "errors",
    "next_fire_times",
    "query",
    "update",
    "workflow",
]
SQLITERUNTIME = {
    "__enter__": "(self) -> 'SqliteRuntime'",
    "__exit__": "(self, exc_type: 'type[BaseException] | None', exc: 'BaseException | None', tb: "
    "'TracebackType | None') -> 'None'",
    "__init__": "(self, store: 'DurableStore', *, clock: 'Clock | None' = None, interceptors: "
    "'Iterable[Interceptor]' = ()) -> 'None'",
    "activity_attempts": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', name: 'str | "
    "None' = None) -> 'list[ActivityAttempt]'",
    "backfill_schedule": "(self: 'SqliteRuntime', workflow_name: 'str', start: 'datetime', end: "
    "'datetime') -> 'list[ExecutionId]'",
    "cancel": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', reason: 'str' = '') -> "
    "'None'",
    "close": "(self) -> 'None'",
    "circuit_breakers": "(self: 'SqliteRuntime') -> 'list[BreakerInfo]'",
    "counts_by_state": "(self: 'SqliteRuntime') -> 'dict[str, int]'",
    "delete_schedule": "(self: 'SqliteRuntime', workflow_name: 'str') -> 'bool'",
    "describe": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'ExecutionDetail'",
    "events": "(self, exec_id: 'str | ExecutionId') -> 'dict[str, Any]'",
    "get_event": "(self, exec_id: 'str | ExecutionId', key: 'str', timeout: 'Duration | None' = "
    "None) -> 'Any'",
    "read_stream": "(self, exec_id: 'str | ExecutionId', key: 'str', *, offset: 'int' = 0) -> "
    "'AsyncIterator[tuple[int, Any]]'",
    "list_executions": "(self: 'SqliteRuntime', flt: 'ExecutionFilter | None' = None) -> "
    "'ExecutionPage'",
    "held_starts": "(self: 'SqliteRuntime') -> 'list[HeldStart]'",
    "list_schedules": "(self: 'SqliteRuntime') -> 'list[ScheduleRow]'",
    "llm_ledger": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'list[LedgerRow]'",
    "llm_totals": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'LedgerTotals'",
    "load_history": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> "
    "'list[HistoryEvent]'",
    "next_wakeup": "(self: 'SqliteRuntime') -> 'datetime | None'",
    "open": "(path: 'str | Path', *, clock: 'Clock | None' = None, interceptors: "
    "'Iterable[Interceptor]' = (), codec: 'PayloadCodec | None' = None) -> 'SqliteRuntime'",
    "open_in_memory": "(*, clock: 'Clock | None' = None, uri: 'str | None' = None, "
    "interceptors: 'Iterable[Interceptor]' = (), codec: 'PayloadCodec | None' = None) -> "
    "'SqliteRuntime'",
    "outcome": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'ExecutionOutcome'",
    "parent_execution": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'ExecutionId | "
    "None'",
    "pause_schedule": "(self: 'SqliteRuntime', workflow_name: 'str') -> 'bool'",
    "poll_once": "(self: 'SqliteRuntime') -> 'bool'",
    "poll_once_as_of": "(self: 'SqliteRuntime', when: 'datetime') -> 'bool'",
    "purge_terminal": "(self: 'SqliteRuntime', older_than: 'Duration') -> 'int'",
    "queues": "(self) -> 'list[QueueInfo]'",
    "query": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', name: 'str', arg: 'Any' = "
    "None) -> 'Coroutine[Any, Any, Any]'",
    "register_activity": "(self, fn: 'Callable[..., Any] | ActivityInfo') -> 'None'",
    "register_activity_raw": "(self, name: 'str', spec: 'ActivitySpec') -> 'None'",
    "register_activity_with_body": "(self, fn: 'Callable[..., Any] | ActivityInfo', body: "
    "'Callable[[Any], Any]') -> 'None'",
    "register_activity_with_ledger": "(self, fn: 'Callable[..., Any] | ActivityInfo', body: "
    "'Callable[[Any], Any]') -> 'None'",
    "register_query": "(self, fn: 'Callable[..., Any]') -> 'None'",
    "register_queue": "(self, queue: 'Queue') -> 'None'",
    "register_update": "(self, fn: 'Callable[..., Any]') -> 'None'",
    "register_workflow": "(self, fn: 'Callable[..., Any] | WorkflowInfo') -> 'None'",
    "resume_schedule": "(self: 'SqliteRuntime', workflow_name: 'str') -> 'bool'",
    "run_until_blocked": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'RunState'",
    "run_until_blocked_as_of": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', when: "
    "'datetime') -> 'RunState'",
    "run_until_idle": "(self: 'SqliteRuntime') -> 'None'",
    "send_signal": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', name: 'str', payload: "
    "'Any' = None) -> 'None'",
    "send_signal_by_workflow_id": "(self: 'SqliteRuntime', workflow_name: 'str', workflow_id: "
    "'str', name: 'str', payload: 'Any' = None, key: 'str | None' "
    "= None) -> 'signals.SignalDelivery'",
    "send_signal_idempotent": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', name: "
    "'str', payload: 'Any', key: 'str | None') -> 'bool'",
    "serve": "(self: 'SqliteRuntime', stop: 'asyncio.Event | None' = None, *, poll_interval: "
    "'Duration' = '20ms', grace: 'Duration' = '5s') -> 'None'",
    "set_history_caps": "(self, caps: 'HistoryCaps') -> 'None'",
    "set_query_timeout": "(self, timeout: 'Duration') -> 'None'",
    "set_workflow_log_policy": "(self, policy: 'WorkflowLogPolicy | None') -> 'None'",
    "signal_with_start": "(self: 'SqliteRuntime', request: 'SignalWithStart') -> "
    "'SignalWithStartOutcome'",
    "stack": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'tuple[CoroutineStack, "
    "...]'",
    "start_workflow": "(self: 'SqliteRuntime', name: 'str', input: 'Any' = None) -> "
    "'ExecutionId'",
    "start_workflow_with_id": "(self: 'SqliteRuntime', name: 'str', workflow_id: 'str', input: "
    "'Any' = None) -> 'ExecutionId'",
    "start_workflow_with_options": "(self: 'SqliteRuntime', name: 'str', input: 'Any', options: "
    "'starts.StartOptions') -> 'starts.StartOutcome'",
    "start_workflow_with_reuse_policy": "(self: 'SqliteRuntime', name: 'str', workflow_id: "
    "'str', input: 'Any', policy: "
    "'starts.WorkflowIdReusePolicy') -> "
    "'starts.StartOutcome'",
    "store": "property",
    "store_closed": "property",
    "successor": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'ExecutionId | None'",
    "terminate": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', reason: 'str' = '') -> "
    "'None'",
    "trigger_schedule": "(self: 'SqliteRuntime', workflow_name: 'str') -> 'ExecutionId | None'",
    "update": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId', name: 'str', arg: 'Any' = "
    "None) -> 'Any'",
    "update_with_start": "(self: 'SqliteRuntime', request: 'UpdateWithStart') -> "
    "'UpdateWithStartOutcome'",
    "upsert_schedule": "(self: 'SqliteRuntime', schedule: 'WorkflowSchedule') -> 'ScheduleRow'",
    "visit_executions": "(self: 'SqliteRuntime', flt: 'ExecutionFilter | None', fn: "
    "'Callable[[ExecutionDetail], object]') -> 'int | None'",
    "where_waiting": "(self: 'SqliteRuntime', exec_id: 'str | ExecutionId') -> 'tuple[RunWait, "
    "...]'",
}
# PostgresRuntime as main had it: SqliteRuntime's surface (its refused
# open / open_in_memory included) plus what only a worker on Postgres has.
POSTGRESRUNTIME = {
    **SQLITERUNTIME,
    "__enter__": "(self) -> 'PostgresRuntime'",
    "connect": "(dsn: 'str', *, worker_id: 'str | None' = None, clock: 'Clock | None' = "
    "None, lease: 'Duration | None' = None, interceptors: 'Iterable[Interceptor]' = (), "
    "codec: 'PayloadCodec | None' = None) -> 'PostgresRuntime'",
    "worker_id": "property",
}


HARVESTCLIENT = {
    "__enter__": "(self) -> 'HarvestClient'",
    "__exit__": "(self, exc_type: 'type[BaseException] | None', exc: 'BaseException | None', tb: "
    "'TracebackType | None') -> 'None'",
    "__init__": "(self, path: 'str', reader: 'SqliteReader | PostgresReader', queue: "
    "'CommandQueue | PostgresCommandQueue', interceptors: 'Iterable[Interceptor]' = ()) -> "
    "'None'",
    "cancel": "(self, exec_id: 'str | ExecutionId', reason: 'str' = '', *, timeout: 'Duration' = "
    "'10s', command_id: 'str | None' = None) -> 'None'",
    "close": "(self) -> 'None'",
    "command_applied": "(self, command_id: 'str') -> 'bool | None'",
    "connect": "(dsn: 'str', *, interceptors: 'Iterable[Interceptor]' = (), codec: "
    "'PayloadCodec | None' = None) -> 'HarvestClient'",
    "data_version": "(self) -> 'int'",
    "describe": "(self, exec_id: 'str | ExecutionId') -> 'ExecutionDetail'",
    "events": "(self, exec_id: 'str | ExecutionId') -> 'dict[str, Any]'",
    "get_event": "(self, exec_id: 'str | ExecutionId', key: 'str', timeout: 'Duration | None' = "
    "None) -> 'Any'",
    "read_stream": "(self, exec_id: 'str | ExecutionId', key: 'str', *, offset: 'int' = 0) -> "
    "'AsyncIterator[tuple[int, Any]]'",
    "list_executions": "(self, flt: 'ExecutionFilter | None' = None) -> 'ExecutionPage'",
    "load_history": "(self, exec_id: 'str | ExecutionId') -> 'list[HistoryEvent]'",
    "open": "(path: 'str | Path', *, interceptors: 'Iterable[Interceptor]' = (), codec: "
    "'PayloadCodec | None' = None) -> 'HarvestClient'",
    "outcome": "(self, exec_id: 'str | ExecutionId') -> 'ExecutionOutcome'",
    "queues": "(self) -> 'list[QueueInfo]'",
    "query": "(self, exec_id: 'str | ExecutionId', name: 'str', arg: 'Any' = None, *, timeout: "
    "'Duration' = '10s', command_id: 'str | None' = None) -> 'Any'",
    "result": "(self, exec_id: 'str | ExecutionId', *, timeout: 'Duration | None' = None) -> "
    "'ExecutionOutcome'",
    "served_ago": "(self) -> 'float | None'",
    "send_signal": "(self, exec_id: 'str | ExecutionId', name: 'str', payload: 'Any' = None, *, "
    "timeout: 'Duration' = '10s', command_id: 'str | None' = None) -> 'None'",
    "send_signal_by_workflow_id": "(self, workflow_name: 'str', workflow_id: 'str', name: 'str', "
    "payload: 'Any' = None, key: 'str | None' = None, *, timeout: "
    "'Duration' = '10s', command_id: 'str | None' = None) -> "
    "'SignalDelivery'",
    "send_signal_idempotent": "(self, exec_id: 'str | ExecutionId', name: 'str', payload: 'Any', "
    "key: 'str | None', *, timeout: 'Duration' = '10s', command_id: "
    "'str | None' = None) -> 'bool'",
    "signal_with_start": "(self, request: 'SignalWithStart', *, timeout: 'Duration' = '10s', "
    "command_id: 'str | None' = None) -> 'SignalWithStartOutcome'",
    "start_workflow": "(self, name: 'str', input: 'Any' = None, *, timeout: 'Duration' = '10s', "
    "command_id: 'str | None' = None) -> 'ExecutionId'",
    "start_workflow_with_id": "(self, name: 'str', workflow_id: 'str', input: 'Any' = None, *, "
    "timeout: 'Duration' = '10s', command_id: 'str | None' = None) -> "
    "'ExecutionId'",
    "start_workflow_with_options": "(self, name: 'str', input: 'Any', options: 'StartOptions', "
    "*, timeout: 'Duration' = '10s', command_id: 'str | None' = "
    "None) -> 'StartOutcome'",
    "start_workflow_with_reuse_policy": "(self, name: 'str', workflow_id: 'str', input: 'Any', "
    "policy: 'WorkflowIdReusePolicy | str', *, timeout: "
    "'Duration' = '10s', command_id: 'str | None' = None) -> "
    "'StartOutcome'",
    "terminate": "(self, exec_id: 'str | ExecutionId', reason: 'str' = '', *, timeout: "
    "'Duration' = '10s', command_id: 'str | None' = None) -> 'None'",
    "update": "(self, exec_id: 'str | ExecutionId', name: 'str', arg: 'Any' = None, *, timeout: "
    "'Duration' = '10s', command_id: 'str | None' = None) -> 'Any'",
    "update_with_start": "(self, request: 'UpdateWithStart', *, timeout: 'Duration' = '10s', "
    "command_id: 'str | None' = None) -> 'UpdateWithStartOutcome'",
    "withdraw": "(self, command_id: 'str') -> 'bool'",
}
WORKFLOWCONTEXT = {
    "as_completed": "(self, aws: 'Iterable[Awaitable[Any]]') -> 'Iterator[Awaitable[Any]]'",
    "await_condition": "(self, predicate: 'Callable[[], bool]') -> 'None'",
    "await_external_workflow": "(self, exec_id: 'ExecutionId | str') -> 'Any'",
    "cancellation_reason": "(self) -> 'str | None'",
    "continue_as_new": "(self, input: 'Any' = None, *, workflow_type: 'str | None' = None) -> "
    "'typing.NoReturn'",
    "create_session": "(self, *args: 'Any', **kwargs: 'Any') -> 'Any'",
    "deadline": "(self) -> 'datetime | None'",
    "deprecate_patch": "(self, patch_id: 'str') -> 'None'",
    "drain_signals": "(self, name: 'str') -> 'list[Any]'",
    "execute_activity": "(self, activity: 'Callable[..., Any] | ActivityInfo | str', input: "
    "'Any' = None, *, queue: 'str | None' = None, retry: 'RetryPolicy | "
    "None' = None, start_to_close: 'Duration | None' = None, "
    "schedule_to_close: 'Duration | None' = None, summary: 'str | None' = None) -> 'Any'",
    "execute_activity_raw": "(self, name: 'str', input: 'Any', queue: 'str' = 'default') -> "
    "'Any'",
    "execute_external_activity": "(self, name: 'str', input: 'Any' = None) -> 'Any'",
    "execute_local_activity": "(self, activity: 'Callable[..., Any] | ActivityInfo | str', "
    "input: 'Any' = None, *, retry: 'RetryPolicy | None' = None, "
    "start_to_close: 'Duration | None' = None) -> 'Any'",
    "history_length": "(self) -> 'int'",
    "info": "(self) -> 'RunInfo'",
    "is_cancelled": "(self) -> 'bool'",
    "log": "(self, message: 'str') -> 'None'",
    "memo": "(self) -> 'dict[str, Any]'",
    "mutex": "(self, key: 'str') -> 'WorkflowMutex'",
    "now": "(self) -> 'datetime'",
    "patched": "(self, patch_id: 'str') -> 'bool'",
    "random": "(self) -> 'float'",
    "receive_signal": "(self, name: 'str', type: 'Any' = None) -> 'Any'",
    "receive_signal_timeout": "(self, name: 'str', duration: 'Duration', type: 'Any' = None) -> "
    "'Any'",
    "register_query": "(self, name: 'str', fn: 'Callable[..., Any]') -> 'None'",
    "register_signal_handler": "(self, name: 'str', fn: 'Callable[[Any], Any]') -> 'None'",
    "register_update_handler": "(self, name: 'str', validator: 'Callable[[Any], Any] | None', "
    "handler: 'Callable[[Any], Awaitable[Any]]') -> 'None'",
    "request_cancel_external_workflow": "(self, exec_id: 'ExecutionId | str') -> 'None'",
    "search_attributes": "(self) -> 'dict[str, Any]'",
    "set_current_details": "(self, text: 'str') -> 'None'",
    "should_continue_as_new": "(self) -> 'bool'",
    "side_effect": "(self, fn: 'Callable[[], Any]') -> 'Any'",
    "signal_external_workflow": "(self, exec_id: 'ExecutionId | str', name: 'str', payload: "
    "'Any' = None) -> 'None'",
    "sleep": "(self, duration: 'Duration', *, summary: 'str | None' = None) -> 'None'",
    "set_event": "(self, key: 'str', value: 'Any') -> 'None'",
    "write_stream": "(self, key: 'str', value: 'Any') -> 'None'",
    "close_stream": "(self, key: 'str') -> 'None'",
    "spawn_child_workflow": "(self, workflow: 'Callable[..., Any] | WorkflowInfo | str', input: "
    "'Any' = None, timeout: 'Duration | None' = None, *, workflow_id: "
    "'str | None' = None, retry: 'RetryPolicy | None' = None, "
    "execution_timeout: 'Duration | None' = None, parent_close_policy: "
    "'ParentClosePolicy | str | None' = None, queue: 'str | None' = None, priority: 'int | None' = None, "
    "partition_key: 'str | None' = None, dedup_id: 'str | None' = None, "
    "start_delay: 'Duration | None' = None) -> 'Any'",
    "spawn_child_workflow_detached": "(self, workflow: 'Callable[..., Any] | WorkflowInfo | "
    "str', input: 'Any' = None, parent_close_policy: "
    "'ParentClosePolicy | str' = "
    "<ParentClosePolicy.REQUEST_CANCEL: 'request_cancel'>, *, "
    "workflow_id: 'str | None' = None, retry: 'RetryPolicy | "
    "None' = None, execution_timeout: 'Duration | None' = None, "
    "queue: 'str | None' = None, priority: 'int | None' = None, "
    "partition_key: 'str | None' = None, dedup_id: 'str | None' = None, "
    "start_delay: 'Duration | None' = None) "
    "-> 'ExecutionId'",
    "start_timer": "(self, timer_id: 'str', duration: 'Duration') -> 'TimerHandle'",
    "system_now": "(self) -> 'datetime'",
    "timer": "(self, seconds: 'Duration', *, summary: 'str | None' = None) -> 'None'",
    "try_receive_signal": "(self, name: 'str') -> 'Any'",
    "upsert_memo": "(self, patch: 'Mapping[str, Any]') -> 'None'",
    "upsert_search_attrs": "(self, attributes: 'Mapping[str, Any]') -> 'None'",
    "uuid4": "(self) -> 'uuid.UUID'",
    "wait": "(self, aws: 'Iterable[Awaitable[Any]]', *, return_when: 'str' = 'ALL_COMPLETED') -> "
    "'tuple[list[asyncio.Future[Any]], list[asyncio.Future[Any]]]'",
    "wait_for_signal": "(self, name: 'str') -> 'Any'",
    "wait_for_signal_timeout": "(self, name: 'str', duration: 'Duration') -> 'Any'",
}


# The third wave's deliberate changes, each written out: `Runtime` (the facade
# the openers subclass) joins the API; `PostgresRuntime` only connects (it is
# no `SqliteRuntime`, so it has no refused `open` / `open_in_memory`).
ALL = sorted([*ALL, "Runtime"])
# Cancellation that stops work (issue 27): the typed error a cancelled attempt raises.
ALL = sorted([*ALL, "ActivityCancelled", "ActivityCancellationType", "ActivityHandle"])
# The reset points a tool may offer (the inspector's slider): the engine's own rule.
ALL = sorted([*ALL, "reset_points"])
OPENERS = ("open", "open_in_memory")
POSTGRESRUNTIME = {k: v for k, v in POSTGRESRUNTIME.items() if k not in OPENERS}
RUNTIME = {k: v for k, v in SQLITERUNTIME.items() if k not in OPENERS}
RUNTIME["__enter__"] = "(self) -> 'Runtime'"

# Third wave, repairing and steering runs (API.md): reset, fork, pause and
# the bulk calls on every runtime and the client, and their two errors.
ALL = sorted([*ALL, "InvalidResetPoint", "NotResettable"])
_FILTER = "flt: 'ExecutionFilter'"
REPAIRING = {
    "reset": "(self, exec_id: 'str | ExecutionId', *, to_event: 'int | None' = None, "
    "reason: 'str') -> 'ExecutionId'",
    "fork": "(self, exec_id: 'str | ExecutionId', *, from_step: 'int', workflow_id: "
    "'str | None' = None) -> 'ExecutionId'",
    "pause": "(self, exec_id: 'str | ExecutionId', reason: 'str') -> 'None'",
    "unpause": "(self, exec_id: 'str | ExecutionId') -> 'None'",
    "cancel_many": f"(self, {_FILTER}, reason: 'str') -> 'int'",
    "terminate_many": f"(self, {_FILTER}, reason: 'str') -> 'int'",
    "signal_many": f"(self, {_FILTER}, name: 'str', payload: 'Any' = None) -> 'int'",
    "reset_many": f"(self, {_FILTER}, *, reason: 'str') -> 'int'",
    "pause_many": f"(self, {_FILTER}, reason: 'str') -> 'int'",
    "unpause_many": f"(self, {_FILTER}) -> 'int'",
}
for _table in (SQLITERUNTIME, POSTGRESRUNTIME, RUNTIME):
    _table.update(REPAIRING)
_ONE = "timeout: 'Duration' = '10s', command_id: 'str | None' = None"
_BULK = "timeout: 'Duration' = '60s', command_id: 'str | None' = None"
HARVESTCLIENT.update(
    {
        "reset": "(self, exec_id: 'str | ExecutionId', *, to_event: 'int | None' = None, "
        f"reason: 'str', {_ONE}) -> 'ExecutionId'",
        "fork": "(self, exec_id: 'str | ExecutionId', *, from_step: 'int', workflow_id: "
        f"'str | None' = None, {_ONE}) -> 'ExecutionId'",
        "pause": f"(self, exec_id: 'str | ExecutionId', reason: 'str' = '', *, {_ONE}) -> 'None'",
        "unpause": f"(self, exec_id: 'str | ExecutionId', *, {_ONE}) -> 'None'",
        "cancel_many": f"(self, {_FILTER}, reason: 'str' = '', *, {_BULK}) -> 'int'",
        "terminate_many": f"(self, {_FILTER}, reason: 'str' = '', *, {_BULK}) -> 'int'",
        "signal_many": f"(self, {_FILTER}, name: 'str', payload: 'Any' = None, *, {_BULK}) -> 'int'",
        "reset_many": f"(self, {_FILTER}, *, reason: 'str', {_BULK}) -> 'int'",
        "pause_many": f"(self, {_FILTER}, reason: 'str' = '', *, {_BULK}) -> 'int'",
        "unpause_many": f"(self, {_FILTER}, *, {_BULK}) -> 'int'",
    }
)


def normal(signature: str) -> str:
    """The signature without what only spells it: the `self` annotation, module prefixes."""
    signature = re.sub(r"\(self: '[^']*'", "(self", signature)
    return re.sub(r"\b[a-z_]+\.(?=[A-Z])", "", signature)


def surface(cls: type[Any]) -> dict[str, str]:
    """Every public member of `cls` (and its constructor, context protocol) with its signature text."""
    out: dict[str, str] = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") and name not in ("__init__", "__enter__", "__exit__"):
            continue
        if isinstance(inspect.getattr_static(cls, name), property):
            out[name] = "property"
            continue
        member = getattr(cls, name)
        out[name] = str(inspect.signature(member)) if callable(member) else "attribute"
    return {name: normal(text) for name, text in out.items()}


def test_all_lists_exactly_the_contracted_names() -> None:
    assert sorted(harvest_engine.__all__) == ALL


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Runtime", RUNTIME),
        ("SqliteRuntime", SQLITERUNTIME),
        ("PostgresRuntime", POSTGRESRUNTIME),
        ("HarvestClient", HARVESTCLIENT),
    ],
)
def test_public_signatures_are_the_contracted_ones(
    name: str, expected: dict[str, str]
) -> None:
    assert surface(getattr(harvest_engine, name)) == {
        member: normal(text) for member, text in expected.items()
    }


def test_workflow_context_public_signatures_are_the_contracted_ones() -> None:
    got = surface(harvest_engine.WorkflowContext)
    got.pop("__init__")  # built by the engine, never by users
    assert got == {member: normal(text) for member, text in WORKFLOWCONTEXT.items()}


SIMULATION_ALL = [
    "FaultPlan",
    "PostgresDatabase",
    "SimulatedCrash",
    "SimulatedStore",
    "Simulation",
    "SimulationResult",
    "SqliteFile",
    "Workload",
    "default_workload",
]
SIMULATION = {
    "__init__": "(self, workload: 'Workload', seed: 'int', *, steps: 'int' = 60, "
    "clients: 'int' = 3, faults: 'bool' = True, backend: 'Backend | None' = None, "
    "make_plan: 'Callable[[random.Random], FaultPlan] | None' = None) -> 'None'",
    "run": "(self) -> 'SimulationResult'",
    "run_async": "(self) -> 'SimulationResult'",
}


def test_the_simulation_kit_keeps_its_names_and_signatures() -> None:
    from harvest_engine.testing import simulation  # noqa: PLC0415

    assert sorted(simulation.__all__) == SIMULATION_ALL
    got = surface(simulation.Simulation)
    assert {name: got[name] for name in SIMULATION} == {
        name: normal(text) for name, text in SIMULATION.items()
    }


# Issue 27, the client's reach: every call naming a run also takes workflow_id=
# (so the exec id and the names after it have defaults), and the schedule calls.
_RUN = "exec_id: 'str | ExecutionId | None' = None"
_CALL = "timeout: 'Duration' = '10s', command_id: 'str | None' = None"
_SCHEDULE_CALL = f"*, {_CALL}"
HARVESTCLIENT.update(
    {
        "cancel": f"(self, {_RUN}, reason: 'str' = '', *, workflow_id: 'str | None' = None, "
        f"{_CALL}) -> 'None'",
        "terminate": f"(self, {_RUN}, reason: 'str' = '', *, workflow_id: 'str | None' = "
        f"None, {_CALL}) -> 'None'",
        "send_signal": f"(self, {_RUN}, name: 'str' = '', payload: 'Any' = None, *, "
        f"workflow_id: 'str | None' = None, {_CALL}) -> 'None'",
        "send_signal_idempotent": f"(self, {_RUN}, name: 'str' = '', payload: 'Any' = None, "
        f"key: 'str | None' = None, *, workflow_id: 'str | None' = None, {_CALL}) -> 'bool'",
        "query": f"(self, {_RUN}, name: 'str' = '', arg: 'Any' = None, *, workflow_id: "
        f"'str | None' = None, {_CALL}) -> 'Any'",
        "update": f"(self, {_RUN}, name: 'str' = '', arg: 'Any' = None, *, workflow_id: "
        f"'str | None' = None, {_CALL}) -> 'Any'",
        "outcome": f"(self, {_RUN}, *, workflow_id: 'str | None' = None) -> "
        "'ExecutionOutcome'",
        "describe": f"(self, {_RUN}, *, workflow_id: 'str | None' = None) -> "
        "'ExecutionDetail'",
        "load_history": f"(self, {_RUN}, *, workflow_id: 'str | None' = None) -> "
        "'list[HistoryEvent]'",
        "result": f"(self, {_RUN}, *, workflow_id: 'str | None' = None, timeout: "
        "'Duration | None' = None) -> 'ExecutionOutcome'",
        "upsert_schedule": f"(self, schedule: 'WorkflowSchedule', {_SCHEDULE_CALL}) -> "
        "'ScheduleRow'",
        "pause_schedule": f"(self, workflow_name: 'str', {_SCHEDULE_CALL}) -> 'bool'",
        "resume_schedule": f"(self, workflow_name: 'str', {_SCHEDULE_CALL}) -> 'bool'",
        "delete_schedule": f"(self, workflow_name: 'str', {_SCHEDULE_CALL}) -> 'bool'",
        "trigger_schedule": f"(self, workflow_name: 'str', {_SCHEDULE_CALL}) -> "
        "'ExecutionId | None'",
        "backfill_schedule": f"(self, workflow_name: 'str', start: 'datetime', end: "
        f"'datetime', {_SCHEDULE_CALL}) -> 'list[ExecutionId]'",
        "list_schedules": "(self) -> 'list[ScheduleRow]'",
    }
)
WORKFLOWCONTEXT["start_activity"] = (
    "(self, activity: 'Callable[..., Any] | ActivityInfo | str', input: 'Any' = None, *, "
    "queue: 'str | None' = None, retry: 'RetryPolicy | None' = None, start_to_close: "
    "'Duration | None' = None, schedule_to_close: 'Duration | None' = None, "
    "cancellation_type: 'ActivityCancellationType | str' = "
    "<ActivityCancellationType.TRY_CANCEL: 'try_cancel'>) -> 'ActivityHandle'"
)


# Third wave: the management HTTP API (API.md "Progress and the HTTP API"),
# `create_app(target, *, token=None, read_only=False)`, plus the hook for
# routes served beside it (a metrics exporter's /metrics).
CREATE_APP = (
    "(target: 'Runtime | str | Path', *, token: 'str | None' = None, "
    "read_only: 'bool' = False, extra_routes: 'Sequence[BaseRoute]' = (), "
    "codec: 'PayloadCodec | None' = None) -> 'Starlette'"
)


def test_create_app_keeps_its_contracted_signature() -> None:
    from harvest_engine.http import __all__ as http_all
    from harvest_engine.http import create_app  # noqa: PLC0415

    assert http_all == ["create_app"]
    assert normal(str(inspect.signature(create_app))) == normal(CREATE_APP)


# Issue 29's hooks. `run_closed` came after them: a notice (no `proceed`) with a
# default no-op, so an interceptor written before it is unchanged.
INTERCEPTOR = {
    "__init__": "(self, /, *args, **kwargs)",
    "activity": "(self, call: 'ActivityCall', proceed: "
    "'Callable[[ActivityCall], Awaitable[AttemptResult]]') -> 'AttemptResult'",
    "client_command": "(self, call: 'ClientCommandCall', proceed: "
    "'Callable[[ClientCommandCall], Awaitable[R]]') -> 'R'",
    "decision": "(self, call: 'DecisionCall', proceed: "
    "'Callable[[DecisionCall], DecisionResult]') -> 'DecisionResult'",
    "query": "(self, call: 'QueryCall', proceed: 'Callable[[QueryCall], R]') -> 'R'",
    "run_closed": "(self, call: 'RunClosedCall') -> 'None'",
    "signal": "(self, call: 'SignalCall', proceed: 'Callable[[SignalCall], R]') -> 'R'",
    "start": "(self, call: 'StartCall', proceed: 'Callable[[StartCall], R]') -> 'R'",
    "update": "(self, call: 'UpdateCall', proceed: 'Callable[[UpdateCall], R]') -> 'R'",
}


def test_the_interceptor_hooks_keep_their_signatures() -> None:
    from harvest_engine.interceptors import Interceptor  # noqa: PLC0415

    assert harvest_engine.Interceptor is Interceptor
    assert surface(Interceptor) == {
        name: normal(text) for name, text in INTERCEPTOR.items()
    }
