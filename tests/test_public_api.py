"""The public surface is a contract: `harvest_engine.__all__` is API.md's names plus a listed few."""

from __future__ import annotations

import inspect

import harvest_engine

# Copied from ../shared/API.md (every name it documents at the top level).
API_MD_NAMES = {
    "Batch",  # third wave, flow control
    "CircuitBreaker",
    "CircuitOpen",
    "ActivityAttempt",
    "ActivityContext",
    "ActivityError",
    "ActivityInfo",
    "ActivitySpec",
    "ApplicationError",
    "BlankWorkflowId",
    "ChildWorkflowError",
    "CommandTimedOut",
    "ContinueAsNew",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "DuplicateEnqueue",
    "ErrorInfo",
    "ExecutionDetail",
    "ExecutionFilter",
    "ExecutionId",
    "ExecutionNotFound",
    "ExecutionOutcome",
    "ExecutionPage",
    "ExecutionSummary",
    "ExternalWorkflowError",
    "HarvestClient",
    "HarvestError",
    "HarvestInternalError",
    "HistoryCaps",
    "HistoryEvent",
    "InvalidFilter",
    "InvalidSearchAttribute",
    "InvalidSignal",
    "LedgerRow",
    "LlmCall",
    "LogLine",
    "NonDeterminismDetected",
    "NonDeterministicCall",
    "NotAHarvestDatabase",
    "NotServed",
    "ParentClosePolicy",
    "PayloadInvalid",
    "PayloadTooDeep",
    "PayloadTooLarge",
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
    "RunState",
    "Schedule",
    "SchemaTooNew",
    "SignalDelivery",
    "SignalWithStart",
    "SignalWithStartOutcome",
    "SqliteError",
    "SqliteReader",
    "SqliteRuntime",
    "StartOptions",
    "StartOutcome",
    "StorageError",
    "Stored",
    "Stuck",
    "TimerHandle",
    "TimerOutcome",
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
    "activity",
    "errors",
    "next_fire_times",
    "query",
    "update",
    "workflow",
}

# Exported beyond API.md, each for a reason: the values the documented calls
# return or take (rows of the reads, the run's wait, the coroutine stack), the
# errors of the second wave's hardening (InvalidName, PayloadNotJson,
# ScheduleNotFound, DatabaseClosed, ExecutionExists, InvalidHistoryFile; flow
# control's InvalidFlowOption, its former name InvalidFlowControl (an alias of
# the same class) and UnknownQueue), the
# clocks the tests and the `*_as_of` drivers use, the package version, and
# `Runtime`, the facade both openers subclass (the type users annotate); the
# rows of `held_starts()` and `circuit_breakers()` (issue 26); and
# `Interceptor` (API.md's harvest_engine.interceptors.Interceptor, also here).
EXTRA_NAMES = {
    "BreakerInfo",
    "HeldStart",
    "InvalidFlowOption",
    "ActivityRunInfo",
    "Clock",
    "CodecRequired",
    "CoroutineStack",
    "DatabaseClosed",
    "ExecutionExists",
    "HandlerInfo",
    "InvalidFlowControl",
    "Interceptor",
    "InvalidHistoryFile",
    "InvalidName",
    "InvalidResetPoint",  # a reset / fork point the history refuses (issue 27)
    "LedgerTotals",
    "ManualClock",
    "MutexRow",
    "NotResettable",  # a run never decided (issue 27)
    "Overlap",
    "PayloadNotJson",
    "PendingTask",
    "RunInfo",
    "RunWait",
    "Runtime",
    "reset_points",  # the event seqs a reset accepts, for tools that offer them
    "ScheduleNotFound",
    "ScheduleRow",
    "StackFrame",
    "StagedSignal",
    "SystemClock",
    "TimerRow",
    "UnknownQueue",
    "__version__",
}
# The third wave's names (API.md "Repairing and steering runs").
API_MD_NAMES |= {"ActivityCancelled", "ActivityCancellationType", "ActivityHandle"}


def test_all_is_exactly_the_api_md_names_and_the_listed_extras() -> None:
    exported = set(harvest_engine.__all__)
    assert API_MD_NAMES - exported == set(), "API.md names missing from __all__"
    assert exported - API_MD_NAMES - EXTRA_NAMES == set(), "unlisted public names"
    assert EXTRA_NAMES - exported == set(), "listed extras no longer exported"
    assert len(harvest_engine.__all__) == len(exported), "a name is listed twice"


def test_every_exported_name_resolves() -> None:
    for name in harvest_engine.__all__:
        assert hasattr(harvest_engine, name), name


def test_every_exported_class_and_function_has_a_docstring() -> None:
    undocumented = [
        name
        for name in harvest_engine.__all__
        if (
            inspect.isclass(obj := getattr(harvest_engine, name))
            or inspect.isfunction(obj)
        )
        and not (inspect.getdoc(obj) or "").strip()
    ]
    assert undocumented == []


def test_every_public_method_of_the_runtime_and_client_has_a_docstring() -> None:
    classes = [
        harvest_engine.SqliteRuntime,
        harvest_engine.PostgresRuntime,
        harvest_engine.HarvestClient,
        harvest_engine.SqliteReader,
        harvest_engine.PostgresReader,
        harvest_engine.WorkflowContext,
        harvest_engine.ActivityContext,
        harvest_engine.WorkflowReplayer,
    ]
    undocumented = [
        f"{cls.__name__}.{name}"
        for cls in classes
        for name, member in vars(cls).items()
        if not name.startswith("_")
        and callable(member)
        and not (inspect.getdoc(member) or "").strip()
    ]
    assert undocumented == []
