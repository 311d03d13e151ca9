"""The demo's first seconds: rows and counts agree, no new-runs bar, a dismissable hint."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_gui.app import DEMO_APP, demo_path, open_demo
from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import async_wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.gui


@pytest.fixture
def fresh_demo() -> Iterator[Path]:
    path = demo_path()

    def remove() -> None:
        for suffix in ("", "-wal", "-shm", ".lock"):
            Path(str(path) + suffix).unlink(missing_ok=True)

    remove()
    yield path
    remove()


def test_the_demo_opens_with_rows_and_counts_agreeing_and_a_hint_to_dismiss(
    qtbot: Any, qloop: Any, settings: Any, fresh_demo: Path
) -> None:
    window = MainWindow(settings, app_module=DEMO_APP)
    qtbot.addWidget(window)
    window.show()
    assert open_demo(window)
    rl = window.run_list
    assert rl is not None
    banner = window.demo_banner
    assert banner.isVisible()
    assert "5 orders" in banner.label.text()

    def agree() -> bool:
        return rl.total.text() == f"{rl.model.rowCount()} runs"

    async def body() -> None:
        # Driving starts each order's shipping child and the first report: the file
        # soon holds more runs than the five seeded, and the list shows them all.
        await async_wait_until(lambda: rl.model.rowCount() > 5 and agree(), 30)
        assert rl.new_runs_bar.isHidden()
        qtbot.mouseClick(banner.close_button, Qt.MouseButton.LeftButton)
        assert banner.isHidden()
        window.close_session()

    qloop.run_until_complete(body())
    assert window.open_path(fresh_demo, read_only=True)
    assert not window.demo_banner.isVisible()  # dismissed for good
    window.close_session()
