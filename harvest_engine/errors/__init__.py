"""The harvest error hierarchy: one root, structured fields, picklable.

`HarvestError` is the root. `SqliteError` covers everything the store and the
runtime raise. Errors take keyword-only structured fields and build their
message from them, so a GUI or a CLI can show them in words and a test can
assert on fields rather than on text.

Control flow that user code must never swallow (`ContinueAsNew` and the
engine's internal teardown) derives from `BaseException`, as Temporal's
`ContinueAsNewError` and trio's `Cancelled` do: a workflow's
`except Exception:` cannot catch it.

The classes live in one module per family (`base`, `storage`, `inputs`,
`runs`, `handlers`, `workflow_code`); this module is where callers import
them from, and `harvest_engine` re-exports its `__all__`.
"""

from __future__ import annotations

from harvest_engine.errors.base import (
    HarvestError,
    HarvestInternalError,
    SqliteError,
)
from harvest_engine.errors.base import (
    _rebuild as _rebuild,
)
from harvest_engine.errors.base import (
    _run_id as _run_id,
)
from harvest_engine.errors.flow import (
    DuplicateEnqueue,
    InvalidFlowControl,
    InvalidFlowOption,
    QuotaExceeded,
    UnknownQueue,
)
from harvest_engine.errors.handlers import (
    QueryFailed,
    QueryNotFound,
    QueryTimedOut,
    UpdateFailed,
    UpdateHistoryCapReached,
    UpdateInputInvalid,
    UpdateRejected,
    UpdateTimedOut,
)
from harvest_engine.errors.inputs import (
    BlankWorkflowId,
    InvalidFilter,
    InvalidName,
    InvalidSearchAttribute,
    InvalidSignal,
    PayloadInvalid,
    PayloadNotJson,
    PayloadTooDeep,
    PayloadTooLarge,
    Unsupported,
    UnsupportedFeature,
)
from harvest_engine.errors.runs import (
    CommandTimedOut,
    ExecutionNotFound,
    InvalidResetPoint,
    NotResettable,
    NotServed,
    ScheduleNotFound,
    UnknownWorkflow,
    WorkflowAlreadyStarted,
    WorkflowIdNotFound,
    WorkflowNotRunning,
)
from harvest_engine.errors.runs import (
    UnknownActivity as UnknownActivity,
)
from harvest_engine.errors.shaping import CircuitOpen
from harvest_engine.errors.storage import (
    CodecRequired,
    DatabaseClosed,
    DatabaseCorrupt,
    DatabaseLocked,
    ExecutionExists,
    InvalidHistoryFile,
    NotAHarvestDatabase,
    SchemaTooNew,
    StorageError,
)
from harvest_engine.errors.workflow_code import (
    ActivityCancelled,
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    ContinueAsNew,
    ExternalWorkflowError,
    NonDeterminismDetected,
    NonDeterministicCall,
    Stuck,
    WorkflowPanicked,
)

__all__ = [
    "ActivityCancelled",
    "ActivityError",
    "ApplicationError",
    "BlankWorkflowId",
    "ChildWorkflowError",
    "CircuitOpen",
    "CodecRequired",
    "CommandTimedOut",
    "ContinueAsNew",
    "DatabaseClosed",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "DuplicateEnqueue",
    "ExecutionExists",
    "ExecutionNotFound",
    "ExternalWorkflowError",
    "HarvestError",
    "HarvestInternalError",
    "InvalidFilter",
    "InvalidFlowControl",
    "InvalidFlowOption",
    "InvalidHistoryFile",
    "InvalidName",
    "InvalidResetPoint",
    "InvalidSearchAttribute",
    "InvalidSignal",
    "NonDeterminismDetected",
    "NonDeterministicCall",
    "NotAHarvestDatabase",
    "NotResettable",
    "NotServed",
    "PayloadInvalid",
    "PayloadNotJson",
    "PayloadTooDeep",
    "PayloadTooLarge",
    "QueryFailed",
    "QueryNotFound",
    "QueryTimedOut",
    "QuotaExceeded",
    "ScheduleNotFound",
    "SchemaTooNew",
    "SqliteError",
    "StorageError",
    "Stuck",
    "UnknownQueue",
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
