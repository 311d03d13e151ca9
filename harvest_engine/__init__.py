"""harvest_engine: durable workflows inside a Python program, on one SQLite file.

Everything public is re-exported here (see API.md); import from this package.
"""

from harvest_engine import errors
from harvest_engine.activity import ActivityContext, ActivityRunInfo
from harvest_engine.authoring import ActivityInfo, HandlerInfo, RetryPolicy, WorkflowInfo
from harvest_engine.clock import Clock, ManualClock, SystemClock
from harvest_engine.errors import *  # noqa: F403 - every error is public at the top level
from harvest_engine.errors import __all__ as _error_names
from harvest_engine.events import HistoryEvent
from harvest_engine.ledger import LlmCall
from harvest_engine.runtime.registry import ActivitySpec
from harvest_engine.runtime.runtime import SqliteRuntime
from harvest_engine.runtime.settings import HistoryCaps, WorkflowLogPolicy
from harvest_engine.states import ErrorInfo, ExecutionId, ExecutionOutcome, RunState
from harvest_engine.store.records import (
    ActivityAttempt,
    ExecutionDetail,
    ExecutionPage,
    ExecutionSummary,
    LedgerRow,
    LogLine,
    PendingTask,
    StagedSignal,
    Stored,
    TimerRow,
)
from harvest_engine.workflow.context import RunInfo, TimerHandle, TimerOutcome, WorkflowContext
from harvest_engine.workflow.replay import WorkflowReplayer

# Last, because importing the `activity` module and the `workflow` package
# binds those names on this package: the decorators must win.
from harvest_engine.authoring import activity, query, update, workflow  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "ActivityAttempt",
    "ActivityContext",
    "ActivityInfo",
    "ActivityRunInfo",
    "ActivitySpec",
    "Clock",
    "ErrorInfo",
    "ExecutionDetail",
    "ExecutionId",
    "ExecutionOutcome",
    "ExecutionPage",
    "ExecutionSummary",
    "HandlerInfo",
    "HistoryCaps",
    "HistoryEvent",
    "LedgerRow",
    "LlmCall",
    "LogLine",
    "ManualClock",
    "PendingTask",
    "RetryPolicy",
    "RunInfo",
    "RunState",
    "SqliteRuntime",
    "StagedSignal",
    "Stored",
    "SystemClock",
    "TimerHandle",
    "TimerOutcome",
    "TimerRow",
    "WorkflowContext",
    "WorkflowInfo",
    "WorkflowLogPolicy",
    "WorkflowReplayer",
    "__version__",
    "activity",
    "errors",
    "query",
    "update",
    "workflow",
    *_error_names,
]
