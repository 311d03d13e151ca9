"""A postgresql:// URL opens in the window like a file: writer, client and read-only mode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from harvest_engine import PostgresRuntime
from harvest_gui.__main__ import parse_args
from harvest_gui.client_session import ClientSession
from harvest_gui.session import ReaderSession, WriterSession
from harvest_gui.target import display_name
from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import async_wait_until, quick, waits_for_go

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.gui


@pytest.fixture
def seeded(pg_dsn: str) -> str:
    """A Postgres database with one run waiting for "go"."""
    with PostgresRuntime.connect(pg_dsn) as rt:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(quick)
        return str(rt.start_workflow_with_id("waits_for_go", "wf-pg", 1))


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()


def test_the_command_line_keeps_a_postgres_url_as_a_url() -> None:
    args = parse_args(["postgresql://app@db/harvest", "--read-only"])
    assert args.path == "postgresql://app@db/harvest"
    assert parse_args(["postgresql://app@db/harvest", "--client"]).client
    assert display_name("postgresql://app:secret@db:5433/h") == (
        "postgresql://app:***@db:5433/h"
    )


def test_a_postgres_url_serves_in_the_window_takes_client_commands_and_reads_live(
    qtbot: Any,
    qloop: Any,
    settings: Any,
    window: MainWindow,
    pg_dsn: str,
    seeded: str,
) -> None:
    assert window.open_path(pg_dsn)
    writer = window.session
    assert isinstance(writer, WriterSession)
    assert isinstance(writer.runtime, PostgresRuntime)
    assert window.windowTitle().startswith(pg_dsn)
    assert "Postgres worker" in window.status.lock.text()
    assert window.run_list.model.rowCount() == 1

    other = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(other)
    assert other.open_path(pg_dsn, client=True)
    client = other.session
    assert isinstance(client, ClientSession)
    assert other.status.mode.text() == "client"
    reader = ReaderSession.open(pg_dsn)
    try:

        async def body() -> None:
            await async_wait_until(lambda: writer.driving)
            await client.client.send_signal(seeded, "go", "from a client")
            await async_wait_until(
                lambda: reader.describe(seeded).state == "COMPLETED", seconds=10
            )
            started = await client.client.start_workflow("quick", 7)
            await async_wait_until(
                lambda: reader.describe(started).state == "COMPLETED", seconds=10
            )

        qloop.run_until_complete(body())
        assert reader.describe(seeded).output.value == "from a client"
        assert reader.counts_by_state()["COMPLETED"] == 2
        assert [e.type for e in reader.load_history(seeded)][-1] == "WorkflowCompleted"
    finally:
        other.close()
        reader.close()


def test_a_postgres_url_opens_read_only_and_a_wrong_one_is_explained(
    qtbot: Any, window: MainWindow, pg_dsn: str, seeded: str
) -> None:
    assert window.open_path(pg_dsn, read_only=True)
    session = window.session
    assert isinstance(session, ReaderSession)
    assert not session.can_write
    assert session.describe(seeded).state == "RUNNING"
    assert window.run_list.model.rowCount() == 1

    parts = urlsplit(pg_dsn)
    missing = urlunsplit(parts._replace(path=parts.path + "_missing"))
    assert not window.open_path(missing, read_only=True)
    assert "not a harvest database" in window.welcome.message.text()
    box = window.last_dialog
    assert box is not None
    assert box.text().endswith("is not a harvest database.")
    box.accept()
