"""What a payload may hold: refused with a typed error naming the path, never silently changed."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvest_engine import (
    ActivityContext,
    ExecutionFilter,
    PayloadNotJson,
    PayloadTooDeep,
    RunState,
    Schedule,
    SignalWithStart,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    WorkflowPanicked,
    WorkflowSchedule,
    activity,
    workflow,
)
from harvest_engine.payloads import check, loads, to_json

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]

# `make test` runs the property at a lower count (HARVEST_PAYLOAD_EXAMPLES);
# run alone (pytest -m slow) it takes its full 10,000 examples.
PAYLOAD_EXAMPLES = int(os.environ.get("HARVEST_PAYLOAD_EXAMPLES", "10000"))

NOT_JSON: list[tuple[Any, str, str]] = [
    (math.nan, "$", "nan is not a JSON number"),
    ({"a": [1, math.inf]}, "$.a[1]", "inf is not a JSON number"),
    ({"items": [{}, {}, {}, {"price": -math.inf}]}, "$.items[3].price", "-inf"),
    ({1: "a"}, "$", "the key 1 (int) is not text"),
    ({None: 1}, "$", "the key None (NoneType)"),
    ({True: 1}, "$", "the key True (bool)"),
    ({1: "a", "1": "b"}, "$", "the key 1 (int)"),
    ({"a b": {2.5: 0}}, '$["a b"]', "the key 2.5 (float)"),
    ({"when": datetime(2024, 1, 1, tzinfo=UTC)}, "$.when", "a datetime is not"),
    ([{1, 2}], "$[0]", "a set is not a JSON value"),
    (b"raw", "$", "a bytes is not a JSON value"),
    ({"x": object()}, "$.x", "a object is not a JSON value"),
    ({"d": Decimal("1.5")}, "$.d", "a Decimal is not a JSON value"),
    ({"n": [2**64]}, "$.n[0]", "an integer beyond the 64-bit range"),
    ({"t": "ok\ud800"}, "$.t", "lone surrogate (U+D800)"),
    ({"k\udfff": 1}, "$", "a key holds a lone surrogate (U+DFFF)"),
]


@pytest.mark.parametrize(("value", "path", "reason"), NOT_JSON)
def test_a_value_json_cannot_keep_is_refused_naming_its_path(
    value: Any, path: str, reason: str
) -> None:
    with pytest.raises(PayloadNotJson) as caught:
        check(value, "start input")
    err = caught.value
    assert err.path == path  # type: ignore[attr-defined]
    assert err.what == "start input"  # type: ignore[attr-defined]
    assert reason in str(err)
    assert str(err).startswith("start input is not JSON: ")
    assert isinstance(err, TypeError)  # what such values raised before


@pytest.mark.parametrize("depth", [101, 1_000, 100_000])
@pytest.mark.parametrize("shape", ["list", "dict"])
def test_nesting_at_any_depth_is_payload_too_deep_not_a_recursion_error(
    depth: int, shape: str
) -> None:
    value: Any = 0
    for _ in range(depth):
        value = [value] if shape == "list" else {"k": value}
    with pytest.raises(PayloadTooDeep):
        check(value, "start input")


def test_a_payload_that_holds_itself_is_too_deep() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(PayloadTooDeep):
        check(loop, "signal payload")


@dataclass
class Line:
    sku: str
    qty: int


def test_dataclasses_and_tuples_are_the_documented_conversions() -> None:
    text = check({"lines": (Line("a", 2),)}, "start input")
    assert loads(text) == {"lines": [{"qty": 2, "sku": "a"}]}


# -- the property: accepted values read back equal, refused ones are typed ---------


def exact_json(value: Any, depth: int = 0) -> bool:
    """An independent oracle: does `value` survive JSON exactly (within the depth cap)?"""
    if depth > 100:
        return False
    if value is None or isinstance(value, (bool, str)):
        return not isinstance(value, str) or _storable(value)
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return depth < 100 and all(exact_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return depth < 100 and all(
            isinstance(k, str) and _storable(k) and exact_json(v, depth + 1)
            for k, v in value.items()
        )
    return False


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


text_with_surrogates = st.text(
    alphabet=st.characters(codec=None, exclude_categories=())
    | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    max_size=6,
)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**65), 2**65)
    | st.floats()
    | st.text(max_size=8)
    | text_with_surrogates
    | st.datetimes()
    | st.binary(max_size=4)
    | st.frozensets(st.integers(0, 3), max_size=2)
    | st.decimals(allow_nan=False, places=2)
)
keys = (
    st.text(max_size=6)
    | text_with_surrogates
    | st.integers(-3, 3)
    | st.none()
    | st.booleans()
    | st.floats(allow_nan=False)
)
payload_values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4)
    ),
    max_leaves=16,
)


@pytest.mark.slow
# 10,000 examples take about 30 s alone, minutes on a loaded machine.
@pytest.mark.timeout(900)
# Hypothesis warns when it would print this strategy's (45 kB) repr in a note
# on an example it gave up drawing; that is its internal control flow, not ours.
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(
    max_examples=PAYLOAD_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(payload_values)
def test_every_accepted_payload_reads_back_equal_and_every_other_is_refused_typed(
    value: Any,
) -> None:
    try:
        text = check(value, "payload")
    except (PayloadNotJson, PayloadTooDeep):
        assert not exact_json(value)
        return
    assert exact_json(value)
    assert loads(text) == value
    assert to_json(value) == value


# -- every ingress refuses before anything is written ---------------------------------


@workflow
async def echo(ctx: WorkflowContext, value: Any) -> Any:
    await ctx.wait_for_signal("go")
    return value


@activity
async def gives_nan(ctx: ActivityContext, _: Any) -> Any:
    return {"price": math.nan}


@workflow
async def calls_nan_activity(ctx: WorkflowContext, _: Any) -> Any:
    try:
        await ctx.execute_activity(gives_nan, None)
    except Exception as exc:  # noqa: BLE001 - the test reads what reached the body
        return str(exc)
    return "no error"


@workflow
async def sends_a_datetime(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(gives_nan, {"at": [ctx.now()]})


@workflow
async def returns_nan(ctx: WorkflowContext, _: Any) -> Any:
    return {"total": math.nan}


@workflow
async def upserts_nan(ctx: WorkflowContext, _: Any) -> Any:
    ctx.upsert_search_attrs({"score": math.nan})


def fresh(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for fn in (echo, calls_nan_activity, sends_a_datetime, returns_nan, upserts_nan):
        rt.register_workflow(fn)
    rt.register_activity(gives_nan)
    return rt


BAD = {"items": [{}, {"price": math.nan}]}


async def test_client_calls_refuse_a_payload_json_cannot_keep_and_write_nothing(
    open_rt: Open, db_path: Path
) -> None:
    rt = fresh(open_rt)
    refusals: list[Callable[[], Any]] = [
        lambda: rt.start_workflow("echo", BAD),
        lambda: rt.start_workflow_with_id("echo", "w1", {1: "a", "1": "b"}),
        lambda: rt.start_workflow_with_options(
            "echo", None, StartOptions(memo={"at": datetime.now(UTC)})
        ),
        lambda: rt.start_workflow_with_options(
            "echo", None, StartOptions(search_attributes={"score": math.inf})
        ),
        lambda: rt.signal_with_start(
            SignalWithStart(
                workflow_name="echo",
                workflow_id="w2",
                input=None,
                signal_name="go",
                signal_payload={None: 1},
            )
        ),
        lambda: rt.upsert_schedule(
            WorkflowSchedule("echo", Schedule.every("1h"), input={"s": {1, 2}})
        ),
    ]
    for call in refusals:
        with pytest.raises(PayloadNotJson):
            call()
    assert sum(rt.counts_by_state().values()) == 0
    assert rt.list_schedules() == []

    exec_id = rt.start_workflow("echo", "fine")
    for bad in (math.nan, {True: 1}, b"x", "\ud800"):
        with pytest.raises(PayloadNotJson):
            rt.send_signal(exec_id, "go", bad)
    with pytest.raises(PayloadNotJson, match=r"at \$\.items\[1\]\.price"):
        await rt.update(exec_id, "anything", BAD)
    with pytest.raises(PayloadNotJson, match="query argument"):
        await rt.query(exec_id, "anything", {"x": math.nan})
    with pytest.raises(PayloadNotJson):
        rt.list_executions(ExecutionFilter().search_attribute("k", "\udc00"))
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    rt.send_signal(exec_id, "go", None)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="fine")


async def test_an_activity_result_json_cannot_keep_fails_the_attempt_naming_the_path(
    open_rt: Open,
) -> None:
    rt = fresh(open_rt)
    exec_id = rt.start_workflow("calls_nan_activity")
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Completed)
    assert "activity result is not JSON: nan is not a JSON number" in state.output
    assert "$.price" in state.output


async def test_workflow_code_passing_a_datetime_is_a_panic_caused_by_the_typed_error(
    open_rt: Open,
) -> None:
    rt = fresh(open_rt)
    exec_id = rt.start_workflow("sends_a_datetime")
    with pytest.raises(WorkflowPanicked) as caught:
        await rt.run_until_blocked(exec_id)
    cause = caught.value.__cause__
    assert isinstance(cause, PayloadNotJson)
    assert cause.path == "$.at[0]"  # type: ignore[attr-defined]
    assert cause.what == "activity input"  # type: ignore[attr-defined]
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]


@pytest.mark.parametrize(
    ("name", "what"),
    [("returns_nan", "workflow result"), ("upserts_nan", "search attribute 'score'")],
)
async def test_workflow_values_json_cannot_keep_are_refused_not_stored_as_null(
    open_rt: Open, name: str, what: str
) -> None:
    rt = fresh(open_rt)
    exec_id = rt.start_workflow(name)
    with pytest.raises(WorkflowPanicked) as caught:
        await rt.run_until_blocked(exec_id)
    assert isinstance(caught.value.__cause__, PayloadNotJson)
    assert what in str(caught.value.__cause__)
    assert rt.describe(exec_id).state == "RUNNING"


def test_an_object_keeps_its_key_order() -> None:
    value = {"order": "ORD-7", "old": {"z": 1, "a": 2}, "new": 120}
    converted = to_json(value)
    assert list(converted) == ["order", "old", "new"]
    assert list(converted["old"]) == ["z", "a"]
