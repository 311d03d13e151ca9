"""A serving pass's reads sent together at its start, one round trip, and answered from there.

A pass reads, one after the other, the held starts and schedules due, what
waits in queues, the runs needing a decision, which carried claims are
still this worker's and the ready tasks; the serving loop then reads the
next due time and the queues again. On Postgres each read outside a
transaction was a round trip of its own, ~3 per queued run. The driver
asks for them at the pass's start (`read_pass_ahead`, `read_due_ahead`):
they travel pipelined, and each read later takes its answer instead of
asking (`take`).

An answer is as of the pass's start, a few milliseconds early, as if the
pass had started that much later: another worker's commit in between is
seen by the next pass, which its notice starts. An answer is given once,
only while nothing was committed through this store since it was read (a
commit clears them: the pass's own admissions or decisions change what the
later reads see), only within FRESH_FOR of the read, and never to a read
as of an earlier time.

The reads run their own code twice: first on a connection that sends each
statement and answers nothing (so no read waits), then, once the pipeline
synced, on one that hands each statement its cursor with the rows in. A
read whose statements differ the second time (it branched on what it
read) gets no answer: it reads for itself, as before.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.store.postgres.cursors import Cursors
from harvest_engine.store.sql import shaping
from harvest_engine.store.sql.flow_reads import FlowReads
from harvest_engine.store.sql.store_reads import StoreReads, due_at, needing_decision

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from datetime import datetime

    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.sql.executes import Executes
    from harvest_engine.store.sql.flow_rows import WaitingTask
    from harvest_engine.store.sql.flow_sql import FlowSql

FRESH_FOR = 0.1
"""Seconds an answer read ahead stays usable (a pass takes its answers at once)."""

MISSING: Any = object()
"""`take`'s answer when there is none: read for yourself."""

Reads = dict[object, "Callable[[Any], object]"]
"""Reads by the key their answer is taken by; each runs on any connection it is given."""


class Answers(dict[object, object]):
    """A read's answers to several keys (one statement read for them all)."""


class _NoRows:
    """The answer of a statement sent ahead, during the first run of a read: nothing yet."""

    rowcount = -1

    def fetchall(self) -> list[Any]:
        return []

    def fetchone(self) -> Any:
        return None

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def close(self) -> None:
        pass


class _Sending:
    """Sends each statement (pipelined) and keeps its cursor, per read; answers nothing.

    Each statement of a read has its own cursor, kept across passes
    (`Cursors`): its rows are read within the same `ReadAhead.read`.
    """

    def __init__(
        self, conn: psycopg.Connection[tuple[Any, ...]], cursors: Cursors, key: object
    ) -> None:
        self.conn, self.cursors = conn, cursors
        self.site = key[0] if isinstance(key, tuple) else key  # not a key's ids
        self.sent: list[tuple[str, Any, psycopg.Cursor[tuple[Any, ...]]]] = []

    def execute(self, sql: Any, params: Any = None, /) -> _NoRows:
        site = (self.site, len(self.sent))
        self.sent.append(
            (sql, params, self.cursors.execute(self.conn, site, sql, params))
        )
        return _NoRows()

    def cursor(self) -> Any:
        raise _Differs  # a read that needs its own cursor is not read ahead


class _Differs(Exception):
    """A read sent other statements the second time: it gets no answer."""


class _Answering:
    """Hands each statement of one read the cursor its first run sent."""

    def __init__(
        self, sent: list[tuple[str, Any, psycopg.Cursor[tuple[Any, ...]]]]
    ) -> None:
        self.sent = sent

    def execute(
        self, sql: Any, params: Any = None, /
    ) -> psycopg.Cursor[tuple[Any, ...]]:
        if not self.sent or self.sent[0][0] != sql or self.sent[0][1] != params:
            raise _Differs
        return self.sent.pop(0)[2]

    def cursor(self) -> Any:
        raise _Differs


class ReadAhead:
    """The answers read ahead, by key, each with the time it was read as of."""

    def __init__(self) -> None:
        # key -> (read at, as of, answer, takes left)
        self._answers: dict[object, tuple[float, datetime | None, object, int]] = {}
        # The store's cursors by call site (its write transactions' too).
        self.cursors = Cursors()

    def forget(self) -> None:
        """Something was committed: no answer read before it holds."""
        self._answers.clear()

    def holds(self, key: object) -> bool:
        """Whether an answer for `key` is there to take (fresh, not all taken)."""
        got = self._answers.get(key)
        return got is not None and time.monotonic() - got[0] <= FRESH_FOR

    def take(self, key: object, now: datetime | None = None) -> Any:
        """The answer for `key` read ahead as of `now` or a little before, or MISSING."""
        got = self._answers.pop(key, None)
        if got is None:
            return MISSING
        read_at, as_of, answer, takes = got
        if time.monotonic() - read_at > FRESH_FOR:
            return MISSING
        if now is not None and (as_of is None or now < as_of):
            return MISSING
        if takes > 1:
            self._answers[key] = (read_at, as_of, answer, takes - 1)
        return answer

    def read(
        self,
        conn: Any,  # a psycopg connection (`_reading`'s)
        now: datetime | None,
        reads: Reads,
        *,
        takes: dict[object, int] | None = None,
        keep: bool = False,
    ) -> None:
        """Run `reads` in one round trip and keep their answers (on an error: none).

        `takes`: how many reads take a key's answer (default one); `keep`:
        the answers read before stay (else they go: a new pass begins).
        """
        if not keep:
            self._answers.clear()
        sending: dict[object, _Sending] = {}
        try:
            with conn.pipeline():
                for key, read in reads.items():
                    sending[key] = _Sending(conn, self.cursors, key)
                    try:
                        read(sending[key])
                    except Exception:  # noqa: BLE001 - that read asks for itself
                        del sending[key]
        except psycopg.Error:
            return  # each read asks for itself, and meets the error there
        at = time.monotonic()
        for key, sent in sending.items():
            try:
                answer = reads[key](_Answering(sent.sent))
            except Exception:  # noqa: BLE001 - it reads again, and meets it there
                continue
            parts = answer if isinstance(answer, Answers) else {key: answer}
            for part, value in parts.items():
                self._answers[part] = (at, now, value, (takes or {}).get(part, 1))


class AheadReads(StoreReads):
    """The shared reads a pass reads ahead, answered from `ahead` when they can be."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.ahead = ReadAhead()

    def pass_reads(self, now: datetime, flow: bool) -> Reads:
        """The shared reads at a pass's start, by the key each is taken by."""
        sql = self._sql
        reads: Reads = {
            "held": lambda c: shaping.due_held(c, sql.shaping, now),
            "schedules": lambda c: sql.schedules.due(c, now),
            "needing": lambda c: needing_decision(c, sql, now),
        }
        if flow:
            reads["waiting"] = lambda c: FlowReads(sql.flow, c).waiting()
        return reads

    def due_reads(self, now: datetime, skip: Sequence[str], flow: bool) -> Reads:
        """The reads of the serving loop's next due time, by key."""
        sql = self._sql
        reads: Reads = {("due", tuple(skip)): lambda c: due_at(c, sql, now, skip)}
        if flow:
            reads["waiting"] = lambda c: FlowReads(sql.flow, c).waiting()
        return reads

    def read_pass_ahead(
        self, now: datetime, carried: Sequence[int], flow: bool
    ) -> None:
        """The pass's reads (shared and this store's own) in one round trip."""
        reads = self.pass_reads(now, flow)
        reads.update(self._own_pass_reads(now, carried))
        with self._reading() as conn:
            # The queues' waits: for the pass's admission, then for the
            # serving loop's next due time (nothing committed in between).
            self.ahead.read(conn, now, reads, takes={"waiting": 2})

    def read_due_ahead(self, now: datetime, skip: Sequence[str], flow: bool) -> None:
        """The next due time's reads in one round trip (the queues' waits if not read yet)."""
        reads = self.due_reads(now, skip, flow and not self.ahead.holds("waiting"))
        with self._reading() as conn:
            self.ahead.read(conn, now, reads, keep=True)

    @abstractmethod
    def _own_pass_reads(self, now: datetime, carried: Sequence[int]) -> Reads:
        """The store's own reads of a pass's start: the ready tasks, the carried claims."""

    def runs_needing_decision(self, now: datetime) -> list[str]:
        """As StoreReads', or as read ahead."""
        got = self.ahead.take("needing", now)
        return super().runs_needing_decision(now) if got is MISSING else list(got)

    def due_schedules(self, now: datetime) -> list[ScheduleRow]:
        """As StoreReads', or as read ahead."""
        got = self.ahead.take("schedules", now)
        return super().due_schedules(now) if got is MISSING else list(got)

    def due_held_starts(self, now: datetime) -> list[tuple[str, str]]:
        """As StoreReads', or as read ahead."""
        got = self.ahead.take("held", now)
        return super().due_held_starts(now) if got is MISSING else list(got)

    def earliest_due(
        self, now: datetime, *, skip_schedules: Sequence[str] = ()
    ) -> datetime | None:
        """As StoreReads', or as read ahead."""
        got = self.ahead.take(("due", tuple(skip_schedules)), now)
        if got is MISSING:
            return super().earliest_due(now, skip_schedules=skip_schedules)
        return got  # type: ignore[no-any-return]

    @contextmanager
    def flow_reads(self) -> Iterator[FlowReads]:
        """Flow-control reads on the read connection; `waiting` answered ahead when it was read."""
        with self._reading() as conn:
            yield _AheadFlowReads(self._sql.flow, conn, self.ahead)


class _AheadFlowReads(FlowReads):
    """A store's FlowReads whose `waiting` takes the answer read ahead, if any."""

    def __init__(self, sql: FlowSql, conn: Executes, ahead: ReadAhead) -> None:
        super().__init__(sql, conn)
        self._ahead = ahead

    def waiting(self) -> tuple[list[tuple[str, datetime]], list[WaitingTask]]:
        got = self._ahead.take("waiting")
        return super().waiting() if got is MISSING else got
