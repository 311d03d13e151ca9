"""flow_bench's queue workload counted, not timed: `python -m bench.flow_counts [RUNS]`.

RUNS (default 200) three-step runs enqueued into a queue of concurrency 8
and served to the end by one runtime in this process, as flow_bench does.
Per run: on SQLite the statements and commits (sqlite3's trace) and the
Python calls of the serving (cProfile); on Postgres the statements, round
trips (a Sync or a Flush, after which the worker waits) and commits its
connection sent (libpq's own trace). Also the serving passes and the
admission transactions. These barely move with the machine's load, unlike
the timings (the passes and commits a little: bodies that finish apart
split a record batch); compare them before and after a change.
"""

from __future__ import annotations

import asyncio
import collections
import cProfile
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

from psycopg import pq

from bench import flow_bench as fb
from harvest_engine import Queue, StartOptions
from harvest_engine.runtime.flow import gatekeeper
from harvest_engine.runtime.serving import group_commit
from tests.engine.test_postgres_statement_cost import sent_messages
from tests.pg_server import PostgresServer, postgres_bin


def _counted(target: str, runs: int, trace: Any) -> dict[str, float]:
    """Serve RUNS queued runs on `target` with `trace(rt)` on; the counts per run."""
    passes = admissions = 0
    real_pass, real_admit = group_commit.GroupCommit.run_pass, gatekeeper.admit_queue

    async def counted_pass(self: Any, now: Any) -> Any:
        nonlocal passes
        passes += 1
        return await real_pass(self, now)

    def counted_admit(*args: Any, **kwargs: Any) -> Any:
        nonlocal admissions
        admissions += 1
        return real_admit(*args, **kwargs)

    with fb._open(target) as rt:
        rt.register_workflow(fb.three_steps)
        rt.register_activity(fb.inc)
        rt.register_queue(Queue("q8", concurrency=fb.CONCURRENCY))
        ids = [
            rt.start_workflow_with_options(
                "three_steps", i, StartOptions(queue="q8")
            ).exec_id
            for i in range(runs)
        ]
        group_commit.GroupCommit.run_pass = counted_pass  # type: ignore[method-assign]
        gatekeeper.admit_queue = counted_admit  # type: ignore[assignment]
        profiler = cProfile.Profile()
        stop = trace(rt)
        try:
            profiler.enable()
            asyncio.run(fb._serve_until_done(rt, ids))
        finally:
            profiler.disable()
            counts = stop()
            group_commit.GroupCommit.run_pass = real_pass  # type: ignore[method-assign]
            gatekeeper.admit_queue = real_admit
    counts["passes"] = passes
    counts["admission calls (separate or in the ending commit)"] = admissions
    counts["Python calls"] = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    return {name: value / runs for name, value in counts.items()}


def sqlite(runs: int) -> dict[str, float]:
    """The SQLite counts per run."""
    seen: collections.Counter[str] = collections.Counter()

    def trace(rt: Any) -> Any:
        conn = rt.store.connection
        conn.set_trace_callback(lambda sql: seen.update([sql.split(None, 1)[0]]))

        def stop() -> dict[str, float]:
            conn.set_trace_callback(None)
            return {"statements": sum(seen.values()), "commits": seen["COMMIT"]}

        return stop

    with tempfile.TemporaryDirectory() as folder:
        return _counted(str(Path(folder) / "counts.db"), runs, trace)


def _commits(trace: Path) -> int:
    """The COMMITs the worker sent (libpq trace lines "F <len> Parse ... COMMIT")."""
    return sum(
        line.startswith("F") and '"COMMIT"' in line
        for line in trace.read_text().splitlines()
    )


def postgres(runs: int) -> dict[str, float]:
    """The Postgres counts per run (the worker connection's messages)."""
    bindir = postgres_bin()
    if bindir is None:
        return {}
    server = PostgresServer(bindir, options=fb.DURABLE)
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "libpq.trace"

            def trace(rt: Any) -> Any:
                pgconn = rt.store.connection.pgconn
                out = path.open("w")
                pgconn.trace(out.fileno())
                pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

                def stop() -> dict[str, float]:
                    pgconn.untrace()
                    out.close()
                    sent = sent_messages(path)
                    return {
                        "statements": sent["Execute"] + sent["Query"],
                        "round trips": sent["Sync"] + sent["Flush"],
                        "commits": _commits(path),
                    }

                return stop

            return _counted(server.fresh_database(), runs, trace)
    finally:
        server.stop()


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for store, counts in (("SQLite", sqlite(runs)), ("Postgres", postgres(runs))):
        for name, value in counts.items():
            print(f"| {store} | {name} per run | {value:.2f} |", flush=True)


if __name__ == "__main__":
    main()
