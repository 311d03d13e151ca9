"""History tools without Qt: diff, state as of an event, filter and pages, export, replay check, storage."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import SqliteReader, SqliteRuntime, WorkflowReplayer
from harvest_gui.inspect.export import (
    FORMAT,
    export_history,
    history_document,
    load_history_file,
)
from harvest_gui.inspect.history_as_of import state_as_of
from harvest_gui.inspect.history_diff import CHANGED, LEFT_ONLY, SAME, diff_histories
from harvest_gui.inspect.history_filter import (
    HistoryQuery,
    check_pattern,
    event_name,
    filter_history,
    page,
    page_count,
    page_of_seq,
)
from harvest_gui.inspect.replay_check import check_determinism
from harvest_gui.inspect.storage_report import purge_preview, storage_report, suggest
from tests.gui.history_app import step, steps_v1, steps_v2

if TYPE_CHECKING:
    from pathlib import Path


def _drive(rt: SqliteRuntime, coro: Any) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


@pytest.fixture
def steps_file(tmp_path: Path) -> tuple[Path, list[str]]:
    """Runs of `steps`: 1 and 2 done (go=a / go=b), 3 waiting for go."""
    path = tmp_path / "steps.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(steps_v1)
        rt.register_activity(step)
        ids = [str(rt.start_workflow("steps", n)) for n in (1, 1, 5)]
        _drive(rt, rt.run_until_idle())
        rt.send_signal(ids[0], "go", "a")
        rt.send_signal(ids[1], "go", "b")
        _drive(rt, rt.run_until_idle())
    return path, ids


def histories(path: Path, ids: list[str]) -> list[list[Any]]:
    with SqliteReader.open(path) as reader:
        return [reader.load_history(i) for i in ids]


def test_diff_marks_the_first_difference_and_ignores_run_ids(steps_file: Any) -> None:
    h1, h2, h3 = histories(*steps_file)
    same = diff_histories(h1, h1)
    assert same.identical
    assert same.summary().startswith("The histories match")
    d = diff_histories(h1, h2)
    kinds = [r.kind for r in d.rows]
    assert kinds.count(SAME) == len(h1) - 2  # the signal payload and the output differ
    first = d.rows[d.first_difference]
    assert first.kind == CHANGED
    assert first.left.type == "SignalReceived"
    assert first.keys == ("payload",)
    assert "First difference at event" in d.summary()
    d13 = diff_histories(h1, h3)
    assert d13.rows[d13.first_difference].left.type == "WorkflowStarted"  # input 1 vs 5
    assert diff_histories(h1, h1[:4]).rows[-1].kind == LEFT_ONLY


def test_state_as_of_each_event(steps_file: Any) -> None:
    h1 = histories(*steps_file)[0]
    types = [e.type for e in h1]
    first_scheduled = types.index("ActivityScheduled") + 1
    s = state_as_of(h1, first_scheduled)
    assert s.state == "RUNNING"
    assert s.input == 1
    assert [(p.kind, p.name) for p in s.pending] == [("activity", "step")]
    after_two = state_as_of(h1, types.index("SignalReceived"))
    assert after_two.pending == []
    assert [r[2] for r in after_two.results] == [2, 4]
    end = state_as_of(h1, 10_000)
    assert end.state == "COMPLETED"
    assert end.output == [2, 4, "a", 8]
    assert end.seq == h1[-1].seq
    assert end.signals == [(types.index("SignalReceived") + 1, "go", "a")]
    assert state_as_of([], 3).state == "EMPTY"


def test_filter_by_type_and_name_text_or_regex_and_pages(steps_file: Any) -> None:
    h1 = histories(*steps_file)[0]
    assert event_name(h1[2]) == "step"
    only = filter_history(h1, HistoryQuery(types=frozenset({"ActivityCompleted"})))
    assert len(only) == 3
    assert {e.type for e in only} == {"ActivityCompleted"}
    assert [e.type for e in filter_history(h1, HistoryQuery(name="GO"))] == [
        "SignalReceived"
    ]
    # "steps" (the workflow) and "step" (six activity events) match ^st
    assert len(filter_history(h1, HistoryQuery(name="^st", regex=True))) == 7
    assert filter_history(h1, HistoryQuery(name="^ST", regex=True)) == []
    assert check_pattern("(") is not None
    assert check_pattern("a+") is None
    with pytest.raises(re.error):
        filter_history(h1, HistoryQuery(name="(", regex=True))
    assert page_count(0) == 1
    assert page_count(2500, 1000) == 3
    assert [e.seq for e in page(h1, 1, 4)] == [5, 6, 7, 8]
    assert page(h1, 99, 4)[-1].seq == h1[-1].seq
    assert page_of_seq(h1, 6, 4) == 1
    assert page_of_seq(only, 1, 4) is None


def test_export_loads_in_the_replayer_and_back(steps_file: Any, tmp_path: Path) -> None:
    h1 = histories(*steps_file)[0]
    out = export_history(tmp_path / "run.json", h1, exec_id=str(h1[0].attrs["exec_id"]))
    doc = json.loads(out.read_text())
    assert doc["format"] == FORMAT
    assert len(doc["events"]) == len(h1)
    assert WorkflowReplayer([steps_v1]).replay(out.read_text()).closed
    assert load_history_file(out) == h1
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        load_history_file(tmp_path / "bad.json")
    assert json.loads(history_document([]))["events"] == []


def test_replay_check_clean_and_divergent(steps_file: Any) -> None:
    h1, _, h3 = histories(*steps_file)
    ok = check_determinism([steps_v1.info], h1)
    assert ok.clean
    assert ok.text.startswith("Replays cleanly: steps replayed")
    running = check_determinism([steps_v1], h3)
    assert running.clean
    assert "still running" in running.text
    bad = check_determinism([steps_v2], h1)
    assert not bad.clean
    assert bad.seq is not None
    assert "ActivityScheduled" in bad.recorded
    assert "Timer" in bad.expected
    assert bad.event is not None
    assert bad.event.seq == bad.seq
    assert check_determinism([], h1).text.startswith("Cannot replay:")


def test_storage_report_and_purge_preview(steps_file: Any) -> None:
    path, _ids = steps_file
    with SqliteReader.open(path) as reader:
        report = storage_report(path, reader)
        future = storage_report(
            path, reader, now=datetime.now(UTC) + timedelta(days=40)
        )
        soon = purge_preview(reader, datetime.now(UTC) + timedelta(seconds=5))
        never = purge_preview(reader, datetime.now(UTC) - timedelta(days=1))
    assert report.file_bytes > 0
    assert report.total_runs == 3
    assert not report.partial
    assert {k: v for k, v in report.runs_by_state.items() if v} == {
        "COMPLETED": 2,
        "RUNNING": 1,
    }
    assert report.events_by_state["COMPLETED"] > report.events_by_state["RUNNING"] > 0
    assert report.oldest_terminal is not None
    assert "closed within the last day" in report.suggestion
    assert "older than 30 days: 2 of 2" in future.suggestion
    assert (soon.count, soon.complete) == (2, True)
    assert never.count == 0
    assert suggest([], 0).startswith("Nothing to purge")
