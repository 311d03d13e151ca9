"""StateCounter: runs per state, counted off the UI thread once counting gets slow.

Counting a million runs takes tens of milliseconds, which would stall the
window each time another process commits (issue 6: no stall over 50 ms).
Small files are counted at once, so the labels are right the moment a view
asks; once one count takes longer than `SLOW_S`, later counts run on a
worker thread with its own read-only connection and arrive as a signal.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal

from harvest_gui.target import Target, open_reader

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine import PostgresReader, SqliteReader

log = logging.getLogger(__name__)

SLOW_S = 0.015
"""A count slower than this moves later counts to the worker thread."""


class StateCounter(QObject):
    """Counts runs per state for one file; `counted(dict)` carries each result.

    Signals:
        counted(dict[str, int]): a fresh count, always on the UI thread.
    """

    counted = Signal(object)
    _finished = Signal(object)

    def __init__(self, path: Target, count_here: Callable[[], dict[str, int]]) -> None:
        super().__init__()
        self.path = path
        self._count_here = count_here
        self.last_seconds = 0.0
        self.in_background = False
        self._executor: ThreadPoolExecutor | None = None
        self._worker_reader: SqliteReader | PostgresReader | None = None
        self._busy = False
        self._again = False
        self._closed = False
        self._finished.connect(self._on_finished, Qt.ConnectionType.QueuedConnection)

    def request(self) -> None:
        """Count now if counting is quick, else on the worker (coalescing repeats)."""
        if self._closed:
            return
        if not self.in_background:
            started = time.perf_counter()
            counts = self._count_here()
            self.last_seconds = time.perf_counter() - started
            self.in_background = self.last_seconds > SLOW_S
            self.counted.emit(counts)
            return
        if self._busy:
            self._again = True
            return
        self._busy = True
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="harvest-counts"
            )
        self._executor.submit(self._count_in_worker).add_done_callback(
            self._finished.emit
        )

    def close(self) -> None:
        """Stop counting; waits for a count in flight and closes the worker's connection."""
        self._closed = True
        if self._executor is not None:
            self._executor.submit(self._close_worker_reader)
            self._executor.shutdown(wait=True)
            self._executor = None

    # -- the worker thread ---------------------------------------------------------------

    def _count_in_worker(self) -> dict[str, int]:
        if self._worker_reader is None:
            self._worker_reader = open_reader(self.path)
        started = time.perf_counter()
        counts = self._worker_reader.counts_by_state()
        self.last_seconds = time.perf_counter() - started
        return counts

    def _close_worker_reader(self) -> None:
        if self._worker_reader is not None:
            self._worker_reader.close()
            self._worker_reader = None

    # -- back on the UI thread --------------------------------------------------------------

    def _on_finished(self, future: Future[dict[str, int]]) -> None:
        self._busy = False
        if self._closed:
            return
        try:
            counts = future.result()
        except Exception as exc:  # noqa: BLE001 - the worker's boundary
            # A count that fails (file moved, damaged, busy) keeps the last labels;
            # the views' own reads on the UI thread report the problem.
            log.warning("counting runs per state failed: %s", exc)
        else:
            self.counted.emit(counts)
        if self._again:
            self._again = False
            self.request()
