"""Value types: durations, retry backoff, history event JSON, payload codec, ids and errors."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import harvest_engine
from harvest_engine import ExecutionId, HistoryEvent, RetryPolicy, errors
from harvest_engine.durations import format_duration, to_timedelta
from harvest_engine.events import history_from_json, history_to_json
from harvest_engine.payloads import (
    MAX_PAYLOAD_DEPTH,
    PayloadTooDeep,
    check,
    dumps,
    loads,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("250ms", 0.25),
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1d", 86400),
        ("1h30m", 5400),
        (" 2s ", 2),
        (1.5, 1.5),
        (timedelta(minutes=2), 120),
    ],
)
def test_durations_accept_text_numbers_and_timedeltas(
    text: Any, seconds: float
) -> None:
    assert to_timedelta(text).total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "soon",
        "5 parsecs",
        -1,
        "1x",
        None,
        True,
        "inf",
        "nan",
        "1e400s",
        "99999999999d",
        float("inf"),
        float("nan"),
        1e300,
    ],
)
def test_bad_durations_are_a_value_error_naming_what(bad: Any) -> None:
    with pytest.raises(ValueError, match="timer"):
        to_timedelta(bad, what="timer")


@given(st.integers(0, 10**7))
def test_formatted_durations_parse_back(millis: int) -> None:
    delta = timedelta(milliseconds=millis)
    assert to_timedelta(format_duration(delta)) == delta


def test_retry_backoff_grows_by_the_coefficient_up_to_the_maximum() -> None:
    policy = RetryPolicy(
        max_attempts=10,
        initial_interval="1s",
        backoff_coefficient=2,
        maximum_interval="5s",
    )
    assert [policy.backoff(n).total_seconds() for n in range(1, 6)] == [1, 2, 4, 5, 5]
    assert policy.retries(1, "Boom", non_retryable=False)
    assert not policy.retries(10, "Boom", non_retryable=False)
    assert RetryPolicy.from_json(policy.to_json()) == RetryPolicy(
        max_attempts=10,
        initial_interval=1.0,
        backoff_coefficient=2,
        maximum_interval=5.0,
    )


def test_retry_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="max_attempts must be >= 0"):
        RetryPolicy(max_attempts=-1)
    with pytest.raises(ValueError, match="backoff_coefficient must be >= 1"):
        RetryPolicy(backoff_coefficient=0.5)


@given(
    seq=st.integers(1, 10**6),
    type_=st.sampled_from(["WorkflowStarted", "ActivityCompleted", "SignalReceived"]),
    micros=st.integers(0, 2**45),
    attrs=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
)
def test_history_events_round_trip_through_their_json(
    seq: int, type_: str, micros: int, attrs: dict[str, Any]
) -> None:
    at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)
    event = HistoryEvent(seq=seq, type=type_, at=at, attrs=attrs)
    again = HistoryEvent.from_json(event.to_json())
    assert again == event
    assert again.to_json() == event.to_json()  # canonical: byte-stable
    assert history_from_json(history_to_json([event, again])) == [event, event]


@given(json_values)
def test_payload_encoding_is_canonical(value: Any) -> None:
    assert dumps(value) == dumps(value)
    if isinstance(value, dict):
        assert dumps(value) == dumps(dict(reversed(list(value.items()))))


@given(json_values)
def test_a_payload_reads_back_as_the_value_that_was_written(value: Any) -> None:
    assert loads(dumps(value)) == value


@pytest.mark.parametrize("big", [2**64, -(2**63) - 1, {"n": [10**30]}])
def test_an_integer_past_64_bits_is_refused_not_turned_into_a_float(big: Any) -> None:
    with pytest.raises(
        TypeError, match="start input is not JSON: an integer beyond the 64-bit range"
    ):
        check(big, "start input")
    assert loads(dumps(2**64 - 1)) == 2**64 - 1
    assert loads(dumps(-(2**63))) == -(2**63)


def test_payload_depth_cap_is_exact() -> None:
    value: Any = 0
    for _ in range(MAX_PAYLOAD_DEPTH - 1):
        value = [value]
    check(value, "ok")
    with pytest.raises(PayloadTooDeep):
        check([[value]], "too deep")


@given(st.uuids())
def test_execution_ids_print_and_parse_back(raw: Any) -> None:
    exec_id = ExecutionId(str(raw))
    assert ExecutionId.parse(str(exec_id)) == exec_id
    assert ExecutionId.parse(f"  {exec_id} ") == exec_id


def test_execution_id_refuses_blank_text() -> None:
    with pytest.raises(ValueError, match="execution id is non-empty text"):
        ExecutionId.parse("  ")


def test_every_error_is_exported_subclasses_harvest_error_and_pickles() -> None:
    for name in errors.__all__:
        cls = getattr(harvest_engine, name)
        assert cls is getattr(errors, name)
        if name == "ContinueAsNew":
            continue
        assert issubclass(cls, errors.HarvestError)
    sample = errors.ExecutionNotFound(exec_id="abc")
    again = pickle.loads(pickle.dumps(sample))
    assert type(again) is errors.ExecutionNotFound
    assert again.exec_id == ExecutionId("abc")
    assert "abc" in str(again)
    for cls in (
        errors.DatabaseLocked,
        errors.StorageError,
        errors.DatabaseCorrupt,
        errors.SchemaTooNew,
        errors.Stuck,
        errors.UnknownWorkflow,
    ):
        assert issubclass(cls, errors.SqliteError)


def test_api_names_exist_at_the_top_level() -> None:
    for name in [
        "workflow",
        "activity",
        "query",
        "update",
        "RetryPolicy",
        "WorkflowContext",
        "ActivityContext",
        "SqliteRuntime",
        "RunState",
        "ExecutionOutcome",
        "HistoryEvent",
        "ExecutionId",
        "ErrorInfo",
        "WorkflowReplayer",
        "HistoryCaps",
        "WorkflowLogPolicy",
        "LlmCall",
        "ActivitySpec",
        "Stored",
        "TimerOutcome",
        "RunWait",
        "StackFrame",
        "CoroutineStack",
        "HarvestClient",
        "CommandTimedOut",
        "UpdateWithStart",
        "UpdateWithStartOutcome",
        "StorageError",
        "DatabaseCorrupt",
    ]:
        assert hasattr(harvest_engine, name), name
    assert callable(harvest_engine.workflow)
    assert callable(harvest_engine.activity)


def test_llm_call_with_latency_returns_a_copy() -> None:
    call = harvest_engine.LlmCall("model-x", 10, 20)
    timed = call.with_latency(1.5)
    assert timed.latency == 1.5
    assert call.latency is None
    with pytest.raises(ValueError, match="input_tokens must be an int >= 0"):
        harvest_engine.LlmCall("model-x", -1, 0)


def test_every_error_id_field_is_the_execution_id_passed_or_found(
    tmp_path: Any,
) -> None:
    import asyncio

    from harvest_engine import (
        SqliteRuntime,
        WorkflowAlreadyStarted,
        WorkflowContext,
        WorkflowIdReusePolicy,
        WorkflowNotRunning,
        workflow,
    )

    @workflow
    async def quick(ctx: WorkflowContext, _: Any) -> str:
        return "ok"

    missing = ExecutionId.new()
    with SqliteRuntime.open(tmp_path / "ids.db") as rt:
        rt.register_workflow(quick)
        with pytest.raises(errors.ExecutionNotFound) as not_found:
            rt.describe(missing)
        assert not_found.value.exec_id == missing  # type: ignore[attr-defined]
        exec_id = rt.start_workflow_with_id("quick", "order-1")
        asyncio.run(rt.run_until_blocked(exec_id))
        with pytest.raises(WorkflowAlreadyStarted) as started:
            rt.start_workflow_with_reuse_policy(
                "quick", "order-1", None, WorkflowIdReusePolicy.REJECT_DUPLICATE
            )
        assert started.value.exec_id == exec_id  # type: ignore[attr-defined]
        with pytest.raises(WorkflowNotRunning) as closed:
            rt.send_signal(exec_id, "go")
        assert closed.value.exec_id == exec_id  # type: ignore[attr-defined]
        with pytest.raises(errors.QueryNotFound) as no_query:
            asyncio.run(rt.query(exec_id, "nothing"))
        assert no_query.value.exec_id == exec_id  # type: ignore[attr-defined]
    again = pickle.loads(pickle.dumps(started.value))
    assert again.exec_id == exec_id
    assert str(exec_id) in str(again)
