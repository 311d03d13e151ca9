"""The serving loop's error policy: a run's own failure is an error, a lost database a warning.

A storage failure (a restarting server, a dropped connection) is logged at
warning and retried at most STORAGE_BACKOFF_CAP apart, so a worker resumes
within seconds of the database coming back; a run that keeps failing backs
off up to ERROR_BACKOFF_CAP.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from harvest_engine.errors import StorageError, Stuck
from harvest_engine.runtime.serving.serving_errors import (
    ERROR_BACKOFF_CAP,
    STORAGE_BACKOFF_CAP,
    ErrorLog,
)

if TYPE_CHECKING:
    import pytest

LOST = StorageError(path="postgresql://app@db/h", reason="server closed the connection")


def test_a_lost_database_is_a_warning_and_its_backoff_stops_at_the_storage_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors = ErrorLog()
    with caplog.at_level(logging.DEBUG, logger="harvest_engine.serving"):
        for _ in range(30):
            errors.report([LOST])
    assert errors.backoff() == STORAGE_BACKOFF_CAP
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1  # once, not once a round
    assert "retrying with backoff" in warned[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

    errors.report([])
    assert errors.backoff() == 0
    assert "answers again" in caplog.records[-1].getMessage()


def test_a_run_that_keeps_failing_is_an_error_and_backs_off_to_the_long_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors = ErrorLog()
    with caplog.at_level(logging.WARNING, logger="harvest_engine.serving"):
        for _ in range(30):
            errors.report([Stuck(exec_id="run-1")])
    assert errors.backoff() == ERROR_BACKOFF_CAP
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
