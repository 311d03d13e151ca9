"""DBOS Transact on Postgres: the 3-activity throughput workload, run by DBOS's own queue.

    .venv-peers/bin/python bench/dbos_pg.py DSN [--runs 200] [--poll 0.01]

Run by bench/pg_bench.py with the peers venv (`make bench` builds
`.venv-peers` with dbos, whose psycopg driver speaks to Postgres), against a
fresh database on the same throwaway server as harvest's figures, so both
engines meet the same server settings (fsync and synchronous_commit on).
It imports nothing of harvest.

The workload mirrors harvest's: RUNS workflows of three sequential steps,
each returning x + 1, all queued before the clock starts (harvest starts its
runs before its workers begin serving). One DBOS process enqueues them on a
DBOS queue while listening to no queue; a fresh process then launches DBOS
(its Postgres system database, its queue poller every `--poll` seconds; DBOS's
default is 1 s) and is timed from the end of its launch until every workflow
is SUCCESS, read from DBOS's workflow_status table every 10 ms, as pg_bench
reads harvest's runs. The last line on stdout is a JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import psycopg
from dbos import DBOS, SetWorkflowID

QUEUE = "harvest_bench"


@DBOS.step()
def inc(x: int) -> int:
    """One step: x + 1."""
    return x + 1


@DBOS.workflow()
def three_steps(x: int) -> int:
    """Three sequential steps."""
    for _ in range(3):
        x = inc(x)
    return x


def _sqlalchemy_url(dsn: str) -> str:
    """DBOS's system_database_url: the DSN with the psycopg (3) driver named."""
    if dsn.startswith("postgresql://"):
        return "postgresql+psycopg://" + dsn.removeprefix("postgresql://")
    return dsn


def _config(dsn: str) -> Any:
    return {
        "name": "harvest-bench",
        "system_database_url": _sqlalchemy_url(dsn),
        "log_level": "WARNING",
    }


def enqueue(dsn: str, runs: int, poll: float) -> None:
    """Queue `runs` workflows on the bench queue from a process that dequeues none."""
    DBOS(config=_config(dsn))
    DBOS.listen_queues([])
    DBOS.launch()
    try:
        queue = DBOS.register_queue(QUEUE, polling_interval_sec=poll)
        for i in range(runs):
            with SetWorkflowID(f"tp-{i}"):
                queue.enqueue(three_steps, i)
    finally:
        DBOS.destroy(destroy_registry=False)


def _done(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM dbos.workflow_status "
        "WHERE queue_name = %s AND status = 'SUCCESS'",
        (QUEUE,),
    ).fetchone()
    return int(row[0]) if row else 0


def work(dsn: str, runs: int) -> dict[str, Any]:
    """Launch DBOS on the queued workflows; time them to the last SUCCESS."""
    cpu0 = time.process_time()
    DBOS(config=_config(dsn))
    DBOS.launch()
    began = time.perf_counter()
    cpu1 = time.process_time()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            deadline = began + 600
            while _done(conn) < runs:
                if time.perf_counter() > deadline:
                    raise RuntimeError("DBOS did not finish the runs in 10 minutes")
                time.sleep(0.01)
            wall = time.perf_counter() - began
        cpu = time.process_time() - cpu1
        results = [DBOS.retrieve_workflow(f"tp-{i}").get_result() for i in range(runs)]
        if results != [i + 3 for i in range(runs)]:
            raise RuntimeError("DBOS returned wrong results")
    finally:
        DBOS.destroy(destroy_registry=False)
    return {
        "engine": "dbos",
        "dbos_store": "postgres",
        "runs": runs,
        "seconds": round(wall, 3),
        "runs_per_sec": round(runs / wall, 1),
        "cpu_cores": round(cpu / wall, 2),
        "launch_cpu_seconds": round(cpu1 - cpu0, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--poll",
        type=float,
        default=0.01,
        help="the DBOS queue's polling_interval_sec (DBOS's default is 1.0)",
    )
    parser.add_argument("--phase", choices=("both", "enqueue", "work"), default="both")
    args = parser.parse_args()
    if args.phase == "enqueue":
        enqueue(args.dsn, args.runs, args.poll)
        return
    if args.phase == "work":
        print(json.dumps(work(args.dsn, args.runs)), flush=True)
        return
    for phase in ("enqueue", "work"):
        done = subprocess.run(
            [
                sys.executable,
                os.path.abspath(__file__),
                args.dsn,
                "--runs",
                str(args.runs),
                "--poll",
                str(args.poll),
                "--phase",
                phase,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        if phase == "work":
            print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
