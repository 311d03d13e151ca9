"""The writer window's status bar hears the serving loop: a failing run and a lost database."""

from __future__ import annotations

import logging

from harvest_engine.errors import StorageError, Stuck
from harvest_engine.runtime.serving.serving_errors import ErrorLog
from harvest_gui.session import SERVING_LOGGER, _ErrorRelay


class Recorder:
    """Stands for the Qt signal: keeps what it was sent."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def emit(self, text: str) -> None:
        self.lines.append(text)


def test_a_lost_database_and_a_failing_run_both_reach_the_status_bar() -> None:
    recorder = Recorder()
    relay = _ErrorRelay(recorder)
    serving_log = logging.getLogger(SERVING_LOGGER)
    serving_log.addHandler(relay)
    try:
        errors = ErrorLog()
        errors.report([StorageError(path="app.db", reason="disk full")])
        errors.report([Stuck(exec_id="run-1")])
    finally:
        serving_log.removeHandler(relay)
    assert len(recorder.lines) == 2
    assert "disk full" in recorder.lines[0]
    assert "retrying with backoff" in recorder.lines[0]
    assert "run-1" in recorder.lines[1]
