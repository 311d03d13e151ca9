"""Run every `bench/*_bench.py` (each has `run() -> [(name, result)]`) and write bench/RESULTS.md."""

from __future__ import annotations

import importlib
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    only = sys.argv[1:]
    load_before = os.getloadavg()
    sections: list[str] = []
    for path in sorted(HERE.glob("*_bench.py")):
        if only and path.stem not in only:
            continue
        module = importlib.import_module(f"bench.{path.stem}")
        rows = module.run()
        lines = [f"## {path.stem}", "", "| benchmark | result |", "| --- | --- |"]
        lines += [f"| {name} | {result} |" for name, result in rows]
        sections.append("\n".join(lines))
        print("\n".join(lines), flush=True)
    if not only or "profile_hot" in only:
        from bench import profile_hot

        listings = [
            "## profile_hot (cProfile, top 20 by own time; `python -m bench.profile_hot`)",
            "",
            "Call counts are the machine-independent part; times include the profiler.",
            "",
        ]
        listings += [
            f"### {name}\n\n```\n{profile_hot.profile(name)}\n```\n"
            for name in profile_hot.WORKLOADS
        ]
        sections.append("\n".join(listings))
        print(sections[-1], flush=True)
    header = [
        "# Benchmark results",
        "",
        f"Produced by `make bench` (`.venv/bin/python -m bench`) on {datetime.now(UTC):%Y-%m-%d}, "
        f"Python {platform.python_version()}, {platform.machine()}, {platform.system()}.",
        "",
        "The GUI rows compare with the budgets of issue 6; the engine rows compare "
        "the instance cache with a full replay per decision (the quadratic design it "
        "replaces); the peers rows are issue 13's target table, each beside DBOS "
        "Transact from the same run (shared/peers/bench_dbos.py, WAL, synchronous=FULL). "
        "Numbers come from a shared 2-core machine and vary by tens of percent between "
        "runs; the fdatasync counts do not.",
        "",
        f"Load average (1 min) when the run began and ended: {load_before[0]:.1f} and "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        "",
    ]
    notes = HERE / "PERF-NOTES.md"
    if not only and notes.exists():
        sections.append(notes.read_text().strip())
    if not only:
        results = HERE / "RESULTS.md"
        # The kill campaigns (bench/kill_campaign.py and bench/pg_kill_campaign.py,
        # --record) run on their own; their sections, last in the file, stay.
        kept = ""
        if results.exists():
            _, marker, rest = results.read_text().partition("## kill_campaign")
            kept = "\n" + marker + rest if marker else ""
        results.write_text("\n".join(header) + "\n\n".join(sections) + "\n" + kept)


if __name__ == "__main__":
    main()
