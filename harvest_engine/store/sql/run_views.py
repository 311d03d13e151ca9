"""RunViews: what a read-only reader shows of runs, written once for SqliteReader and PostgresReader.

A reader subclasses it and says only what is its own: the connection a read
runs on, how a run's id is checked, the snapshot a visit holds, and the
single-run reads it checks its own way (describe, load_history). Each
per-run read first checks that the run exists (`ExecutionNotFound`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import closing
from typing import TYPE_CHECKING, Any, Self

from harvest_engine.errors import InvalidFilter
from harvest_engine.filters import ExecutionFilter
from harvest_engine.store.sql import listing
from harvest_engine.store.sql.flow_reads import FlowReads
from harvest_engine.store.sql.flow_sql import flow_sql
from harvest_engine.store.sql.progress import ProgressSql

if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from contextlib import AbstractContextManager
    from types import TracebackType

    from harvest_engine.states import ExecutionId
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
        LogLine,
        MutexRow,
        PendingTask,
        StagedSignal,
        StreamItem,
        TimerRow,
    )
    from harvest_engine.store.sql.dialect import Dialect
    from harvest_engine.store.sql.executes import Executes
    from harvest_engine.store.sql.reads import Reads
    from harvest_engine.store.sql.schedules import Schedules


def checked_filter(flt: ExecutionFilter | None) -> ExecutionFilter:
    """`flt`, or the empty filter for None; InvalidFilter for anything else."""
    if flt is None:
        return ExecutionFilter()
    if not isinstance(flt, ExecutionFilter):
        raise InvalidFilter(
            reason=f"expected an ExecutionFilter, got {type(flt).__name__}"
        )
    return flt


class RunViews(ABC):
    """The reads a reader shares with the other store's reader."""

    def __init__(
        self,
        dialect: Dialect,
        reads: Reads,
        schedules: Schedules,
        available: Collection[str] | None = None,
    ) -> None:
        self._dialect = dialect
        self._reads = reads
        self._schedules = schedules
        self._available = available
        self._progress = ProgressSql(dialect)

    @abstractmethod
    def close(self) -> None:
        """Close the connection (safe to call twice)."""

    def __enter__(self) -> Self:
        """Use the reader in a `with` block; it closes at the end."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the reader."""
        self.close()

    @abstractmethod
    def _reading(self) -> Executes:
        """The connection a read runs on (DatabaseClosed once closed)."""

    @abstractmethod
    def _require(self, exec_id: str | ExecutionId) -> str:
        """The run's id as text; ExecutionNotFound when no run has it."""

    @abstractmethod
    def _snapshot(self, conn: Executes) -> AbstractContextManager[object]:
        """One read snapshot held over a visit's statements."""

    def _holds_starts(self) -> bool:
        """Whether the schema has held starts (a SQLite file before v5 has none)."""
        return True

    # -- runs -----------------------------------------------------------------

    def is_held(self, exec_id: str | ExecutionId) -> bool:
        """Whether `exec_id` names a debounced or batched run that has not started yet."""
        if not self._holds_starts():
            return False
        sql = self._dialect.render(
            "SELECT 1 FROM harvest_held_starts WHERE exec_id = ?"
        )
        row = self._reading().execute(sql, (str(exec_id).strip(),)).fetchone()
        return row is not None

    def list_executions(self, flt: ExecutionFilter | None = None) -> ExecutionPage:
        """One page of runs, newest first, without payloads.

        Raises:
            InvalidFilter: `flt` is not an ExecutionFilter.
        """
        return listing.list_executions(
            self._reading(), self._dialect, checked_filter(flt), self._available
        )

    def visit_executions(
        self, flt: ExecutionFilter | None, fn: Callable[[ExecutionDetail], object]
    ) -> int | None:
        """Call `fn` on each run `list_executions(flt)` would return, with its payloads.

        Every row comes from one read snapshot held until the visit returns,
        so keep `fn` short. `fn`'s return value is ignored.

        Returns:
            The cursor of the next page, or None at the end.
        """
        chosen = checked_filter(flt)
        conn = self._reading()
        dialect, available = self._dialect, self._available
        last: int | None = None
        count = 0
        with self._snapshot(conn):
            rows = listing.visit_executions(conn, dialect, chosen, available)
            with closing(rows):
                for detail in rows:
                    fn(detail)
                    last = detail.cursor
                    count += 1
            more = (
                count == chosen.page_size
                and last is not None
                and bool(
                    listing.list_executions(
                        conn, dialect, chosen.before(last).limit(1), available
                    ).executions
                )
            )
        return last if more else None

    def flow_reads(self) -> FlowReads:
        """Flow-control reads: queues, their waiting runs and attempts."""
        return FlowReads(flow_sql(self._dialect), self._reading())

    def counts_by_state(self) -> dict[str, int]:
        """How many runs are in each state (every state present, maybe 0)."""
        return listing.counts_by_state(self._reading(), self._dialect)

    def activity_attempts(
        self, exec_id: str | ExecutionId, name: str | None = None
    ) -> list[ActivityAttempt]:
        """Finished attempts of the run's activities (of one name, or all)."""
        text = self._require(exec_id)
        return self._reads.activity_attempts(self._reading(), text, name)

    def pending_tasks(self, exec_id: str | ExecutionId) -> list[PendingTask]:
        """The run's unfinished activity tasks."""
        return self._reads.pending_tasks(self._reading(), self._require(exec_id))

    def timers(self, exec_id: str | ExecutionId) -> list[TimerRow]:
        """The run's unfired timers, soonest first."""
        return self._reads.timers(self._reading(), self._require(exec_id))

    def staged_signals(self, exec_id: str | ExecutionId) -> list[StagedSignal]:
        """Signals delivered to the run that its history has not yet taken in."""
        return self._reads.staged_signals(self._reading(), self._require(exec_id))

    def mutexes(self, exec_id: str | ExecutionId) -> list[MutexRow]:
        """Mutex keys the run holds or waits for."""
        return self._reads.mutexes(self._reading(), self._require(exec_id))

    # -- costs and logs ---------------------------------------------------------

    def llm_ledger(self, exec_id: str | ExecutionId) -> list[LedgerRow]:
        """The run's LLM calls, in recording order."""
        return self._reads.llm_ledger(self._reading(), self._require(exec_id))

    def llm_totals(self, exec_id: str | ExecutionId) -> LedgerTotals:
        """The run's LLM calls summed: calls, tokens in and out, latency."""
        return self._reads.llm_totals(self._reading(), self._require(exec_id))

    def workflow_logs(self, exec_id: str | ExecutionId) -> list[LogLine]:
        """The run's `ctx.log` lines in order; a truncation marker comes last."""
        return self._reads.workflow_logs(self._reading(), self._require(exec_id))

    def count_workflow_logs(self, exec_id: str | ExecutionId) -> int:
        """How many log lines the run kept (the truncation marker not counted)."""
        text = self._require(exec_id)
        return self._reads.count_workflow_logs(self._reading(), text)

    def workflow_log_truncated(self, exec_id: str | ExecutionId) -> bool:
        """Whether the run's log dropped lines past its `max_lines`."""
        text = self._require(exec_id)
        return self._reads.workflow_log_truncated(self._reading(), text)

    # -- schedules --------------------------------------------------------------

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule, by workflow name (a damaged one has `problem` set)."""
        return self._schedules.list_all(self._reading())

    # -- progress (events and streams) -------------------------------------------

    def events(self, exec_id: str | ExecutionId) -> dict[str, Any]:
        """Every event the run set (`ctx.set_event`): key to its last value."""
        text = self._require(exec_id)
        return self._progress.events(self._reading(), text)

    def event(self, exec_id: str | ExecutionId, key: str) -> tuple[bool, Any]:
        """(whether the run set event `key`, its value)."""
        return self._progress.event(self._reading(), self._require(exec_id), key)

    def stream_items(
        self, exec_id: str | ExecutionId, key: str, offset: int
    ) -> list[StreamItem]:
        """Stream `key`'s rows from position `offset` on, in order (a page of them)."""
        text = self._require(exec_id)
        return self._progress.stream(self._reading(), text, key, offset)
