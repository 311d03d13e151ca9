"""harvest_engine: durable workflows inside a Python program, on one SQLite file.

Everything public is re-exported here; import from this package.
"""

from harvest_engine import authoring as _authoring
from harvest_engine import errors
from harvest_engine.activity import ActivityContext, ActivityRunInfo
from harvest_engine.authoring import (
    ActivityInfo,
    HandlerInfo,
    RetryPolicy,
    WorkflowInfo,
    query,
    update,
)
from harvest_engine.calls import (
    SignalDelivery,
    SignalWithStart,
    SignalWithStartOutcome,
    StartOptions,
    StartOutcome,
    UpdateWithStart,
    UpdateWithStartOutcome,
    WorkflowIdReusePolicy,
)
from harvest_engine.client import HarvestClient
from harvest_engine.clock import Clock, ManualClock, SystemClock
from harvest_engine.errors import (
    ActivityCancelled,
    ActivityError,
    ApplicationError,
    BlankWorkflowId,
    ChildWorkflowError,
    CircuitOpen,
    CodecRequired,
    CommandTimedOut,
    ContinueAsNew,
    DatabaseClosed,
    DatabaseCorrupt,
    DatabaseLocked,
    DuplicateEnqueue,
    ExecutionExists,
    ExecutionNotFound,
    ExternalWorkflowError,
    HarvestError,
    HarvestInternalError,
    InvalidFilter,
    InvalidFlowControl,
    InvalidFlowOption,
    InvalidHistoryFile,
    InvalidName,
    InvalidResetPoint,
    InvalidSearchAttribute,
    InvalidSignal,
    NonDeterminismDetected,
    NonDeterministicCall,
    NotAHarvestDatabase,
    NotResettable,
    NotServed,
    PayloadInvalid,
    PayloadNotJson,
    PayloadTooDeep,
    PayloadTooLarge,
    QueryFailed,
    QueryNotFound,
    QueryTimedOut,
    QuotaExceeded,
    ScheduleNotFound,
    SchemaTooNew,
    SqliteError,
    StorageError,
    Stuck,
    UnknownQueue,
    UnknownWorkflow,
    Unsupported,
    UnsupportedFeature,
    UpdateFailed,
    UpdateHistoryCapReached,
    UpdateInputInvalid,
    UpdateRejected,
    UpdateTimedOut,
    WorkflowAlreadyStarted,
    WorkflowIdNotFound,
    WorkflowNotRunning,
    WorkflowPanicked,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.filters import ExecutionFilter
from harvest_engine.flow import Queue, QueueInfo, Rate
from harvest_engine.interceptors import Interceptor
from harvest_engine.ledger import LlmCall
from harvest_engine.runtime.postgres_runtime import PostgresRuntime
from harvest_engine.runtime.registry import ActivitySpec
from harvest_engine.runtime.repairing.points import reset_points
from harvest_engine.runtime.runtime import Runtime
from harvest_engine.runtime.settings import HistoryCaps, WorkflowLogPolicy
from harvest_engine.runtime.sqlite_runtime import SqliteRuntime
from harvest_engine.schedules import (
    Overlap,
    Schedule,
    WorkflowSchedule,
    next_fire_times,
)
from harvest_engine.shaping import Batch, BreakerInfo, CircuitBreaker, HeldStart
from harvest_engine.states import ErrorInfo, ExecutionId, ExecutionOutcome, RunState
from harvest_engine.store.operations import LedgerTotals, ScheduleRow
from harvest_engine.store.postgres.reader import PostgresReader
from harvest_engine.store.records import (
    ActivityAttempt,
    ExecutionDetail,
    ExecutionPage,
    ExecutionSummary,
    LedgerRow,
    LogLine,
    MutexRow,
    PendingTask,
    StagedSignal,
    Stored,
    TimerRow,
)
from harvest_engine.store.sqlite.reader import SqliteReader
from harvest_engine.workflow.activity_handles import (
    ActivityCancellationType,
    ActivityHandle,
)
from harvest_engine.workflow.context import WorkflowContext
from harvest_engine.workflow.parent_close import ParentClosePolicy
from harvest_engine.workflow.replay import WorkflowReplayer
from harvest_engine.workflow.run_info import RunInfo
from harvest_engine.workflow.stack import CoroutineStack, StackFrame
from harvest_engine.workflow.timers import TimerHandle, TimerOutcome
from harvest_engine.workflow.waits import RunWait

# Importing the `activity` module and the `workflow` package binds those
# names on this package after the imports above: the decorators must win.
activity = _authoring.activity
workflow = _authoring.workflow

__version__ = "0.1.0"

__all__ = [
    "ActivityAttempt",
    "ActivityCancellationType",
    "ActivityCancelled",
    "ActivityContext",
    "ActivityError",
    "ActivityHandle",
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
    "CodecRequired",
    "CommandTimedOut",
    "ContinueAsNew",
    "CoroutineStack",
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
    "InvalidFlowControl",
    "InvalidFlowOption",
    "InvalidHistoryFile",
    "InvalidName",
    "InvalidResetPoint",
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
    "NotResettable",
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
    "Runtime",
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
    "reset_points",
    "update",
    "workflow",
]
