"""Statistics for a young database's growing tables: ANALYZE each time the runs double.

A fresh database has no statistics, and autovacuum first analyzes a table a
minute or so after it grew. Meanwhile the planner guesses the tables' sizes
from their pages, and a prepared statement keeps the plan it chose while the
tables were small: a whole-table scan for `exec_id = ANY(...)`, which then
reads every run and every event at every pass, O(runs) a statement, as the
tables grow. So a store counts the runs it inserts and, once they reach the
size the statistics knew (at least FLOOR), analyzes the hot tables: the
plans are made again from sizes at most about twice off. The doubling keeps
it to a handful of ANALYZEs (each samples at most 30,000 rows) while the
database is young; later, autovacuum's own thresholds take over.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

log = logging.getLogger("harvest_engine.postgres")

FLOOR = 200
"""Runs inserted before the first ANALYZE (smaller tables are read whole, cheaply)."""

HOT_TABLES = (
    "harvest_executions, harvest_events, harvest_tasks, harvest_flow_waits, "
    "harvest_activity_attempts"
)
_RUNS_KNOWN = (
    "SELECT GREATEST(reltuples, 0)::bigint FROM pg_class "
    "WHERE oid = 'harvest_executions'::regclass"
)


class YoungTables:
    """Counts the runs this store's transactions insert; analyzes when they double the table."""

    def __init__(self) -> None:
        self.inserted = 0
        self._known = 0

    def after_commit(self, conn: psycopg.Connection[Any], started: int) -> None:
        """Count a commit's `started` runs; ANALYZE the hot tables once they reach the known count.

        Runs after a commit, on its connection, outside any transaction. A
        failure (a role that does not own the tables is only warned) is
        logged: statistics never fail the write that preceded them.
        """
        self.inserted += started
        if self.inserted < max(FLOOR, self._known):
            return
        try:
            row = conn.execute(_RUNS_KNOWN).fetchone()
            self._known = max(self._known, int(row[0]) if row else 0)
            if self.inserted >= max(FLOOR, self._known):
                conn.execute(f"ANALYZE {HOT_TABLES}")
                row = conn.execute(_RUNS_KNOWN).fetchone()
                self._known = int(row[0]) if row else self._known + self.inserted
            self.inserted = 0
        except psycopg.Error as exc:
            log.warning("could not analyze harvest's tables (%s)", exc)
            self.inserted = 0
