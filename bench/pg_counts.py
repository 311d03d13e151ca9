"""Statements and commits per 3-activity run on Postgres, one worker: `python -m bench.pg_counts`.

Starts the pg_bench server (durable settings) with pg_stat_statements,
queues 200 runs of `bench.pg_worker.three_steps`, serves them with one
PostgresRuntime in this process, and prints the statements the server ran
per run by shape (the busiest first), their total, the commits per run and
this process's CPU per run. The counts barely move with the machine's load,
unlike the timings: compare them before and after a change.
"""

from __future__ import annotations

import asyncio
import time

import psycopg

from bench.pg_bench import DURABLE, RUNS
from bench.pg_worker import register
from harvest_engine import PostgresReader, PostgresRuntime
from tests.pg_server import PostgresServer, postgres_bin

STATS = (
    " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
)
# The progress reads of this script, not the worker's.
OWN = ("SELECT state, COUNT(*)%", "%pg_stat%")


async def _serve(dsn: str) -> None:
    with PostgresRuntime.connect(dsn) as rt:
        register(rt)
        stop = asyncio.Event()

        async def watch() -> None:
            with PostgresReader.connect(dsn) as reader:
                while reader.counts_by_state().get("COMPLETED", 0) < RUNS:  # noqa: ASYNC110 - polls another connection
                    await asyncio.sleep(0.01)
            stop.set()

        watcher = asyncio.create_task(watch())
        await rt.serve(stop)
        await watcher


def main() -> None:
    bindir = postgres_bin()
    if bindir is None:
        raise SystemExit("PostgreSQL is not installed")
    server = PostgresServer(bindir, options=DURABLE + STATS)
    try:
        dsn = server.create_database()
        with PostgresRuntime.connect(dsn) as rt:
            register(rt)
            for i in range(RUNS):
                rt.start_workflow("three_steps", i)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
            conn.execute("SELECT pg_stat_statements_reset()")
        cpu = time.process_time()
        began = time.perf_counter()
        asyncio.run(_serve(dsn))
        wall = time.perf_counter() - began
        cpu = time.process_time() - cpu
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) "
                "FROM pg_stat_statements WHERE query NOT LIKE %s AND query NOT LIKE %s "
                "ORDER BY calls DESC",
                OWN,
            ).fetchall()
    finally:
        server.stop()
    total = sum(int(calls) for calls, _ in rows)
    commits = sum(int(calls) for calls, query in rows if query == "COMMIT")
    for calls, query in rows[:25]:
        print(f"{int(calls) / RUNS:7.2f}  {query}")
    print(f"statements per run: {total / RUNS:.1f}")
    print(f"commits per run: {commits / RUNS:.2f}")
    print(
        f"worker CPU per run: {cpu / RUNS * 1000:.2f} ms "
        f"({RUNS / wall:.0f} runs/s on this machine now; the reader's polls included)"
    )


if __name__ == "__main__":
    main()
