"""Form logic without Qt: JSON checks, dataclass fields, error words, schedule specs, names."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from harvest_engine import (
    ExecutionNotFound,
    HarvestInternalError,
    HistoryEvent,
    WorkflowAlreadyStarted,
    WorkflowContext,
)
from harvest_gui.forms.error_text import describe_error, error_title
from harvest_gui.forms.payload_input import (
    KIND_BOOL,
    KIND_FLOAT,
    KIND_INT,
    KIND_JSON,
    KIND_TEXT,
    fields_to_json,
    form_fields,
    json_to_fields,
    parse_json,
    parse_typed,
    skeleton,
    type_problem,
)
from harvest_gui.forms.schedule_spec import CRON, INTERVAL, interval_text, read_spec
from harvest_gui.inspect.signal_names import (
    queries_in_code,
    suggest_signals,
    updates_in_code,
)

NOW = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Item:
    sku: str
    qty: int = 1


@dataclass
class Order:
    id: str
    qty: int
    price: float = 2.5
    gift: bool = False
    note: str | None = None
    colour: Colour = Colour.RED
    items: list[Item] = field(default_factory=list)


def test_parse_json_names_line_and_column() -> None:
    assert parse_json('{"a": 1}').value == {"a": 1}
    assert parse_json("   ").ok
    assert parse_json("   ").value is None
    bad = parse_json('{\n  "a": 1,\n}')
    assert not bad.ok
    assert bad.error.startswith("not JSON: line 3, column 1")


def test_dataclass_becomes_one_field_per_attribute_with_kinds_and_defaults() -> None:
    specs = form_fields(Order)
    assert [(s.name, s.kind, s.required) for s in specs] == [
        ("id", KIND_TEXT, True),
        ("qty", KIND_INT, True),
        ("price", KIND_FLOAT, False),
        ("gift", KIND_BOOL, False),
        ("note", KIND_TEXT, False),
        ("colour", KIND_JSON, False),
        ("items", KIND_JSON, False),
    ]
    assert specs[2].default == 2.5
    assert specs[5].default == "red"
    assert specs[6].default == []
    assert specs[4].optional
    assert specs[4].label == "note (str | None)"


def test_fields_round_trip_through_json() -> None:
    specs = form_fields(Order)
    texts = json_to_fields(
        specs, {"id": "A", "qty": 3, "items": [{"sku": "x", "qty": 2}]}
    )
    assert texts["qty"] == "3"
    assert texts["price"] == "2.5"
    assert texts["gift"] == "false"
    value = fields_to_json(specs, texts).value
    assert value == {
        "id": "A",
        "qty": 3,
        "price": 2.5,
        "gift": False,
        "note": None,
        "colour": "red",
        "items": [{"sku": "x", "qty": 2}],
    }
    texts["qty"] = "three"
    assert (
        fields_to_json(specs, texts).error == "qty must be a whole number, got 'three'"
    )
    texts["qty"] = "3"
    texts["items"] = '[{"sku": 5}]'
    assert fields_to_json(specs, texts).error == "items[0].sku must be text, got 5"


def test_type_problems_are_said_in_words() -> None:
    assert type_problem({"id": "A", "qty": 1}, Order) is None
    assert type_problem({"qty": 1}, Order) == "input: Order.id is required"
    assert (
        type_problem({"id": "A", "qty": 1, "x": 0}, Order)
        == "input: Order has no field 'x'"
    )
    assert type_problem({"id": "A", "qty": True}, Order) == (
        "input.qty must be a whole number, got True"
    )
    assert "one of ['red', 'blue']" in type_problem(
        {"id": "A", "qty": 1, "colour": "g"}, Order
    )
    assert type_problem(None, int | None) is None
    assert type_problem(None, int) == "input must not be null"
    assert (
        type_problem([1, "a"], list[int]) == "input[1] must be a whole number, got 'a'"
    )
    assert type_problem({"a": 1}, dict[str, str]) == "input.a must be text, got 1"
    assert type_problem("anything", Any) is None
    assert parse_typed("[1]", dict).error == "input must be a JSON object, got [1]"


def test_skeleton_lists_the_fields() -> None:
    assert parse_json(skeleton(Item)).value == {"sku": "", "qty": 1}
    assert skeleton(int) == ""


def test_errors_in_words_never_a_traceback() -> None:
    exc = WorkflowAlreadyStarted(
        workflow_name="w",
        workflow_id="i",
        exec_id="e",
        state="COMPLETED",
        policy="REJECT_DUPLICATE",
    )
    assert error_title(exc) == "Workflow already started"
    assert describe_error(exc).startswith("Workflow already started: ")
    assert describe_error(ExecutionNotFound(exec_id="x")).startswith(
        "Execution not found: "
    )
    assert describe_error(HarvestInternalError("broken")).startswith(
        "Internal error — please"
    )
    assert describe_error(ValueError("bad value")) == "bad value"


def test_schedule_spec_validates_and_previews_five_fires() -> None:
    every = read_spec(INTERVAL, "", "UTC", "15m", NOW)
    assert every.error is None
    assert len(every.next_fires) == 5
    assert every.next_fires[0] == datetime(2026, 1, 1, 12, 15, tzinfo=UTC)
    assert interval_text(every.schedule) == "15m"
    cron = read_spec(CRON, "0 3 * * *", "UTC", "", NOW)
    assert cron.next_fires[0] == datetime(2026, 1, 2, 3, 0, tzinfo=UTC)
    berlin = read_spec(CRON, "0 3 * * *", "Europe/Berlin", "", NOW)
    assert berlin.next_fires[0] == datetime(2026, 1, 2, 2, 0, tzinfo=UTC)
    assert "five fields" in read_spec(CRON, "0 3 * *", "UTC", "", NOW).error
    assert "not valid" in read_spec(CRON, "99 3 * * *", "UTC", "", NOW).error
    assert read_spec(CRON, "0 3 * * *", "Mars/Base", "", NOW).schedule is None
    assert (
        "whole number of seconds" in read_spec(INTERVAL, "", "UTC", "1.5s", NOW).error
    )
    assert read_spec(INTERVAL, "", "UTC", "", NOW).error.startswith("type an interval")
    assert read_spec(INTERVAL, "", "UTC", "90", NOW).next_fires[0].second in (0, 30)


async def waits(ctx: WorkflowContext, _: Any) -> Any:
    ctx.register_query("stage", lambda: 1)
    ctx.register_update_handler("bump", None, None)
    first = await ctx.wait_for_signal("approve")
    rest = ctx.drain_signals("extra")
    return first, rest


def test_signal_names_come_from_the_code_then_staged_then_received() -> None:
    history = [
        HistoryEvent(1, "WorkflowStarted", NOW, {}),
        HistoryEvent(2, "SignalReceived", NOW, {"name": "poke"}),
    ]
    assert suggest_signals(waits, history, ["later"]) == [
        "approve",
        "extra",
        "later",
        "poke",
    ]
    assert suggest_signals(None, history) == ["poke"]
    assert queries_in_code(waits) == ["stage"]
    assert updates_in_code(waits) == ["bump"]
