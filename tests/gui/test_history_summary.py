"""The History tab's summary column: its whole text is readable (tooltip, event JSON), the column gets the room."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import HistoryEvent
from harvest_gui.models.history import COL_SUMMARY, COL_TYPE
from harvest_gui.views.history import HistoryView

pytestmark = pytest.mark.gui

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
MESSAGE = (
    "card declined by the issuer after three retries; the customer was told "
    "to call their bank, the order stays on hold until "
    + "someone confirms the address, " * 6
    + "END-OF-MESSAGE"
)


def test_a_long_summary_is_whole_in_its_tooltip_and_the_event_json(qtbot: Any) -> None:
    view = HistoryView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    events = [
        HistoryEvent(1, "WorkflowStarted", NOW, {"input": {"order": "A-1"}}),
        HistoryEvent(
            2,
            "ActivityTaskFailed",
            NOW,
            {"name": "charge_card", "error": {"type": "Declined", "message": MESSAGE}},
        ),
    ]
    view.show_events(events)
    model = view.model
    cell = model.index(1, COL_SUMMARY)
    assert (
        model.data(cell) == f"charge_card {MESSAGE}"
    )  # the engine's one-liner cuts at 80
    tip = model.data(cell, Qt.ItemDataRole.ToolTipRole)
    assert "END-OF-MESSAGE" in tip
    assert "charge_card" in tip
    view.table.setCurrentIndex(cell)
    shown = json.loads(view.event_json.full_text)
    assert shown["attrs"]["error"]["message"] == MESSAGE


def test_seq_time_and_type_fit_their_text_and_the_summary_gets_the_rest(
    qtbot: Any,
) -> None:
    view = HistoryView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    qtbot.waitExposed(view)
    view.show_events(
        [
            HistoryEvent(1, "WorkflowStarted", NOW, {}),
            HistoryEvent(2, "ChildWorkflowExecutionCompleted", NOW, {"name": "x" * 50}),
        ]
    )
    table, header = view.table, view.table.horizontalHeader()
    type_width = table.fontMetrics().horizontalAdvance(
        "ChildWorkflowExecutionCompleted"
    )
    assert header.sectionSize(COL_TYPE) >= type_width  # the type is not cut
    assert header.sectionSize(0) < 60  # seq no longer takes a fixed 60 px
    used = sum(header.sectionSize(c) for c in range(COL_SUMMARY + 1))
    assert used <= table.viewport().width() + 1  # within the window, no sideways scroll
    assert header.sectionSize(COL_SUMMARY) >= table.viewport().width() - (
        used - header.sectionSize(COL_SUMMARY)
    )
