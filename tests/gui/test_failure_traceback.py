"""A failed run's traceback, as the engine records it, names the user's file and line in the window.

At the top of the Summary (the run's error) and in the Attempts tab (the
failing attempt's error), in writer mode and in client mode.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    RetryPolicy,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_gui.client_session import ClientSession
from harvest_gui.session import WriterSession
from harvest_gui.views.run_detail import TAB_ATTEMPTS, RunDetailView

if TYPE_CHECKING:
    from harvest_gui.session_base import Session

pytestmark = pytest.mark.gui
HERE = Path(__file__).name


@activity(retry=RetryPolicy(max_attempts=1))
async def weigh_parcel(ctx: ActivityContext, grams: int) -> int:
    """Refuses a negative weight (the line the traceback must name)."""
    if grams < 0:
        raise ValueError(f"a parcel cannot weigh {grams} g")
    return grams


RAISE_LINE = inspect.getsourcelines(weigh_parcel)[1] + 4


@workflow
async def ship(ctx: WorkflowContext, grams: int) -> int:
    """Fails with the activity's error."""
    weight: int = await ctx.execute_activity(weigh_parcel, grams)
    return weight


def failed_run(path: Path) -> str:
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(ship)
        rt.register_activity(weigh_parcel)
        exec_id = str(rt.start_workflow("ship", -5))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
        assert rt.describe(exec_id).state == "FAILED"
    return exec_id


def check_window(qtbot: Any, session: Session, exec_id: str) -> None:
    view = RunDetailView(session)
    qtbot.addWidget(view)
    view.show()
    view.show_run(exec_id)
    summary = view.summary
    assert summary.failure.isVisibleTo(view)
    assert summary.failure_reason.text().startswith("FAILED: ")
    assert "a parcel cannot weigh -5 g" in summary.failure_reason.text()
    trace = summary.failure_trace.toPlainText()
    assert summary.failure_trace.isVisibleTo(view)
    assert f'{HERE}", line {RAISE_LINE}' in trace
    view.tabs.setCurrentIndex(TAB_ATTEMPTS)
    attempts = view.attempts
    m = attempts.model
    (row,) = [[str(m.data(m.index(0, c))) for c in range(m.columnCount())]]
    assert row[0] == "weigh_parcel"
    assert row[5] == "FAILED"
    assert row[7] == "yes"  # a traceback was recorded
    attempts.table.selectRow(0)
    detail = attempts.detail.toPlainText()
    assert detail.startswith("ValueError: a parcel cannot weigh -5 g")
    assert f'{HERE}", line {RAISE_LINE}' in detail
    assert "raise ValueError" in detail


def test_a_writer_window_shows_where_the_users_code_failed(
    qtbot: Any, tmp_path: Path
) -> None:
    exec_id = failed_run(tmp_path / "failed.db")
    session = WriterSession.open(tmp_path / "failed.db")
    try:
        check_window(qtbot, session, exec_id)
    finally:
        session.close()


def test_a_client_window_shows_where_the_users_code_failed(
    qtbot: Any, tmp_path: Path
) -> None:
    exec_id = failed_run(tmp_path / "failed.db")
    session = ClientSession.open(tmp_path / "failed.db")
    try:
        check_window(qtbot, session, exec_id)
    finally:
        session.close()
