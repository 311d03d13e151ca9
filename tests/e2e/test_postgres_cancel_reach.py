"""A cancel written by one process reaches a body another Postgres worker runs, through NOTIFY.

Nothing polls for cancels: the worker learns of it only from the
`harvest_cancel` notice its listener hears at the cancel's commit.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import psycopg
import pytest

from harvest_engine import PostgresReader, PostgresRuntime

if TYPE_CHECKING:
    from pathlib import Path

    from tests.e2e.conftest import Workers

pytestmark = pytest.mark.slow

# The bound is 100 ms; a loaded test machine gets some slack.
REACH = 0.5


def _stop_workers(dsn: str, workers: Workers, proc: object) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE harvest_test_stop (x INTEGER)")
    done = workers.finish(proc)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("how", ["cancel", "terminate"])
def test_a_cancel_from_another_process_stops_the_workers_bodies_at_once(
    pg_dsn: str, workers: Workers, tmp_path: Path, how: str
) -> None:
    module = workers.load("pg_cancel_worker")
    with PostgresRuntime.connect(pg_dsn, worker_id="operator") as rt:
        rt.register_workflow(module.one_body)
        runs = {kind: rt.start_workflow("one_body", kind) for kind in ("sync", "async")}
        proc = workers.spawn("pg_cancel_worker", pg_dsn, "busy", tmp_path)
        try:
            workers.wait_for(
                lambda: all((tmp_path / f"{k}.started").exists() for k in runs),
                "both bodies to start in the worker",
            )
            time.sleep(0.1)
            cancelled_at: dict[str, float] = {}
            for kind, exec_id in runs.items():
                if how == "cancel":
                    rt.cancel(exec_id, "from the operator")
                else:
                    rt.terminate(exec_id, "from the operator")
                cancelled_at[kind] = time.time()  # committed: the notice is out
            workers.wait_for(
                lambda: all((tmp_path / f"{k}.stopped").exists() for k in runs),
                "both bodies to stop",
            )
        finally:
            _stop_workers(pg_dsn, workers, proc)
    for kind in runs:
        stopped = float((tmp_path / f"{kind}.stopped").read_text())
        assert stopped - cancelled_at[kind] < REACH, (
            kind,
            stopped - cancelled_at[kind],
        )
    ended = "CANCELLED" if how == "cancel" else "TERMINATED"
    with PostgresReader.connect(pg_dsn) as reader:
        assert [reader.describe(r).state for r in runs.values()] == [ended, ended]
