"""GUI fixtures: offscreen Qt, a qasync loop per test, Qt warnings fail, no leaked windows."""

from __future__ import annotations

import asyncio
import os

# Before any QApplication exists (pytest-qt creates it lazily in `qapp`).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyside6")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

from typing import TYPE_CHECKING

import pytest
import qasync
from PySide6.QtCore import QSettings, QStandardPaths, QtMsgType
from PySide6.QtWidgets import QApplication

from harvest_gui import async_bridge
from harvest_gui.settings import Settings
from tests.gui.helpers import make_runs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

# Qt messages that are not problems of ours.
IGNORED_QT_MESSAGES = (
    "This plugin does not support propagateSizeHints()",  # offscreen plugin (QT-NOTES §1)
    "This plugin does not support raise()",  # offscreen plugin, when a tooltip is shown
)


@pytest.fixture(scope="session", autouse=True)
def _isolated_qt_paths(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep QSettings and QStandardPaths away from the user's files."""
    root = tmp_path_factory.mktemp("qt-user")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(root))
    QStandardPaths.setTestModeEnabled(True)


@pytest.fixture(autouse=True)
def _qt_warnings_fail(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test on any Qt warning or worse (qutebrowser's LogFailHandler)."""
    if "qtbot" not in request.fixturenames and "qapp" not in request.fixturenames:
        yield
        return
    qtlog = request.getfixturevalue("qtlog")
    yield
    bad = [
        rec
        for rec in qtlog.records
        if rec.type
        in (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg)
        and not any(ignored in rec.message for ignored in IGNORED_QT_MESSAGES)
    ]
    if bad:
        pytest.fail(
            "Qt warnings: " + "; ".join(rec.message for rec in bad), pytrace=False
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """After every fixture is gone, no top-level window may still be visible (napari)."""
    yield
    app = QApplication.instance()
    if app is None:
        return
    leaked = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
    for w in leaked:
        w.close()
        w.deleteLater()
    if leaked:
        names = ", ".join(f"{type(w).__name__}({w.objectName()})" for w in leaked)
        pytest.fail(f"{item.nodeid} left windows open: {names}", pytrace=False)


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    """A fresh qasync loop; run async test bodies with `run_until_complete` (QT-NOTES §2.1 A)."""
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    async_bridge.set_error_presenter(None)
    yield loop
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in pending:
        t.cancel()
    if pending:  # bounded: a task wedged by re-entrancy never finishes (pitfall 4)
        loop.run_until_complete(asyncio.wait(pending, timeout=1))
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings in a file of this test's own."""
    return Settings(
        QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    )


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    """A harvest file with 5 runs, 2 of them completed."""
    path = tmp_path / "runs.db"
    make_runs(path, 5, finish=2)
    return path
