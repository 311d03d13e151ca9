"""The Summary pane and the run list show a run's summary, details and current details."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import ExecutionDetail, ExecutionId, SqliteRuntime, StartOptions
from harvest_gui.models.run_list import RunListModel
from harvest_gui.session import ReaderSession
from harvest_gui.views.summary import SummaryView
from tests.gui.helpers import waits_for_go

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.gui


def detail(**labels: str | None) -> ExecutionDetail:
    return ExecutionDetail(
        exec_id=ExecutionId("e1"),
        workflow_name="report",
        workflow_id="r-1",
        state="RUNNING",
        started_at=datetime(2030, 1, 1, tzinfo=UTC),
        closed_at=None,
        attempt=1,
        **labels,  # type: ignore[arg-type]
    )


def test_the_summary_pane_shows_the_runs_own_words_and_hides_what_it_lacks(
    qtbot: Any,
) -> None:
    view = SummaryView()
    qtbot.addWidget(view)
    view.show_run(
        detail(summary="nightly import", details=None, current_details="step 3 of 5"),
        [],
    )
    assert view.labels["summary"].text() == "nightly import"
    assert view.labels["current_details"].text() == "step 3 of 5"
    form = view._form
    assert form.isRowVisible(view.labels["summary"])
    assert not form.isRowVisible(view.labels["details"])
    view.show_run(detail(), [])
    assert not form.isRowVisible(view.labels["summary"])


def test_the_run_list_tooltip_carries_the_summary(tmp_path: Path, qapp: object) -> None:
    path = tmp_path / "labelled.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.start_workflow_with_options(
            "waits_for_go", None, StartOptions(summary="nightly import")
        )
    session = ReaderSession.open(path)
    try:
        model = RunListModel(session)
        tip = model.data(model.index(0, 0), Qt.ItemDataRole.ToolTipRole)
        column = model.COLUMNS.index("Summary")
        cell = model.data(model.index(0, column))
    finally:
        session.close()
    assert "Summary: nightly import" in str(tip)
    assert cell == "nightly import"  # its own column, sortable and in view
