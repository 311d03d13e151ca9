"""SQL statements and Python calls per workload: `python -m bench.count_statements [NAME ...]`.

Runs each workload of `bench.harvest_workloads` on a fresh file with
sqlite3's trace callback on the runtime's connection (literals normalised,
so `seq = 7` and `seq = 8` count as one statement shape) and cProfile on,
and prints the statements per run by shape, their total, and the Python
function calls. Neither count moves with the machine's load, unlike the
timings; `bench/PERF-NOTES.md` records them before and after a change.

SQLite traces an INSERT into harvest_events twice: its append-only trigger
runs as a program of its own and is reported with the statement's text. The
listing shows what the trace saw ("traced"); the total "executed" counts
each of those inserts once.
"""

from __future__ import annotations

import asyncio
import collections
import cProfile
import pstats
import re
import sys
import tempfile
from typing import Any

from bench import harvest_workloads as w

# name: (workload, size, how many runs it drives: the per-run divisor)
WORKLOADS: dict[str, tuple[Any, int, int]] = {
    "latency": (w.latency, 20, 20),
    "throughput": (w.throughput, 200, 200),
    "long_history": (w.long_history, 500, 500),
    "signal": (w.signal, 20, 20),
}

_LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")
_SPACE = re.compile(r"\s+")
_EVENT_INSERT = "INSERT INTO harvest_events "


def shape(sql: str) -> str:
    """A statement with its literals replaced: strings by S, numbers by N."""
    sql = _LITERALS.sub(
        lambda m: "S" if m.group(0).startswith("'") else "N", sql.strip()
    )
    return _SPACE.sub(" ", sql)


def count(name: str) -> tuple[collections.Counter[str], int, int]:
    """Statement shapes, Python calls and the per-run divisor of one workload."""
    fn, size, per = WORKLOADS[name]
    shapes: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="harvest-count-") as folder:
        rt = w._open(folder)
        conn = rt._engine.store.connection  # type: ignore[attr-defined]
        profiler = cProfile.Profile()
        try:
            conn.set_trace_callback(lambda sql: shapes.update([shape(sql)]))
            profiler.enable()
            asyncio.run(fn(rt, size))
            profiler.disable()
            conn.set_trace_callback(None)
        finally:
            rt.close()
    calls = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    return shapes, int(calls), per


def main() -> None:
    names = sys.argv[1:] or list(WORKLOADS)
    for name in names:
        shapes, calls, per = count(name)
        total = sum(shapes.values())
        echoes = sum(
            n // 2 for sql, n in shapes.items() if sql.startswith(_EVENT_INSERT)
        )
        print(f"### {name} (per run, {per} runs)")
        for sql, n in shapes.most_common():
            print(f"{n / per:8.2f}  {sql[:150]}")
        print(f"{total / per:8.2f}  statements per run (traced)")
        print(f"{(total - echoes) / per:8.2f}  statements per run (executed)")
        print(f"{calls / per:8.0f}  Python calls per run\n", flush=True)


if __name__ == "__main__":
    main()
