"""The Attempts tab: number, start, end, outcome and error of every attempt; the traceback."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import ActivityAttempt, ErrorInfo
from harvest_gui.views.attempts import AttemptsView
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.run_detail import TAB_ATTEMPTS
from tests.gui.test_window_layout import demo_runs

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.gui
__all__ = ["demo_runs"]  # the module fixture, shared with the layout tests


def cells(view: AttemptsView, row: int) -> list[str]:
    m = view.model
    return [str(m.data(m.index(row, c))) for c in range(m.columnCount())]


def test_the_attempts_tab_lists_each_attempt_with_its_outcome_and_error(
    qtbot: Any, settings: Any, demo_runs: tuple[Path, str, str]
) -> None:
    path, _done, failed = demo_runs
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.open_path(path, read_only=True)
        assert window.run_list is not None
        detail = window.detail
        assert detail is not None
        assert window.run_list.select_exec_id(failed)
        detail.tabs.setCurrentIndex(TAB_ATTEMPTS)
        assert detail.tabs.tabText(TAB_ATTEMPTS) == "&Attempts"
        view = detail.attempts
        titles = [
            view.model.headerData(c, Qt.Orientation.Horizontal)
            for c in range(view.model.columnCount())
        ]
        assert titles[:7] == [
            "Activity",
            "#",
            "Started",
            "Ended",
            "Took",
            "Outcome",
            "Error",
        ]
        rows = [cells(view, r) for r in range(view.model.rowCount())]
        charge = next(r for r in rows if r[0] == "charge_card")
        assert charge[1] == "1"
        assert charge[2]
        assert charge[3]
        assert charge[5] == "FAILED"
        assert charge[6] == "CardDeclined: card declined by the bank"
        assert view.note.text() == f"{len(rows)} attempts, 1 with an error"
        view.table.selectRow(rows.index(charge))
        assert view.detail.toPlainText().startswith(
            "CardDeclined: card declined by the bank"
        )
    finally:
        window.close_session()


@dataclass(frozen=True)
class TracedError(ErrorInfo):
    """ErrorInfo as the repair issue extends it (stack_trace on every failure)."""

    stack_trace: str | None = None


def test_a_recorded_traceback_shows_under_the_attempt(qtbot: Any) -> None:
    view = AttemptsView()
    qtbot.addWidget(view)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    trace = (
        'Traceback (most recent call last):\n  File "app.py", line 7, in pay\nKeyError'
    )
    view.show_attempts(
        [
            ActivityAttempt(
                1,
                "pay",
                1,
                at,
                at + timedelta(seconds=1),
                "FAILED",
                TracedError("KeyError", "'card'", stack_trace=trace),
            ),
            ActivityAttempt(1, "pay", 2, at + timedelta(seconds=2), None, "", None),
        ]
    )
    assert cells(view, 0)[7] == "yes"
    assert cells(view, 1)[5] == "RUNNING"
    view.table.selectRow(0)
    assert 'File "app.py", line 7' in view.detail.toPlainText()


def test_a_real_failed_run_shows_its_tracebacks_in_attempts_and_summary(
    qtbot: Any, settings: Any, demo_runs: tuple[Path, str, str]
) -> None:
    path, _done, failed = demo_runs
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.open_path(path, read_only=True)
        assert window.run_list is not None
        detail = window.detail
        assert detail is not None
        assert window.run_list.select_exec_id(failed)
        trace = detail.summary.failure_trace
        assert trace.isVisibleTo(detail.summary)
        assert "demo/workflows.py" in trace.toPlainText()
        detail.tabs.setCurrentIndex(TAB_ATTEMPTS)
        view = detail.attempts
        rows = [cells(view, r) for r in range(view.model.rowCount())]
        charge = next(r for r in rows if r[0] == "charge_card")
        assert charge[7] == "yes"
        view.table.selectRow(rows.index(charge))
        shown = view.detail.toPlainText()
        assert "demo/workflows.py" in shown
        assert "harvest_engine/runtime" not in shown
    finally:
        window.close_session()
