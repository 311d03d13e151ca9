"""Deterministic simulation campaign: `python -m bench.simulate --seeds 10000` prints the table.

Each seed runs `harvest_engine.testing.simulation.Simulation` on the
built-in workload (every primitive, faults at every statement and commit,
three clients). `--seed N` replays one seed exactly and prints its trace;
`--start S` and `--jobs J` split a campaign (J processes; 1 by default, the
machine is shared); `--mutation NAME` breaks one engine rule on purpose
(bench/sim_mutations.py) to show the harness finds it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from bench import sim_mutations
from harvest_engine.testing.simulation import Simulation, default_workload


def run_seed(seed: int, mutation: str | None = None) -> dict[str, Any]:
    """One seed's summary (picklable, for the process pool)."""
    logging.disable(logging.CRITICAL)
    with sim_mutations.applied(mutation):
        result = Simulation(default_workload(), seed).run()
    return {
        "seed": seed,
        "steps": result.steps,
        "faults": result.faults,
        "checks": result.checks,
        "bodies": result.bodies,
        "restarts": result.restarts,
        "failures": result.failures,
    }


def campaign(seeds: range, jobs: int, mutation: str | None) -> list[dict[str, Any]]:
    """Run every seed (in `jobs` processes) in seed order."""
    if jobs <= 1:
        return [run_seed(seed, mutation) for seed in seeds]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(run_seed, seeds, [mutation] * len(seeds), chunksize=16))


def table(rows: list[dict[str, Any]], seconds: float) -> str:
    """The campaign's table: seeds, steps, faults by kind, checks, failures."""
    faults: Counter[str] = Counter()
    for row in rows:
        faults.update(row["faults"])
    failed = [row for row in rows if row["failures"]]
    lines = [
        "| seeds | steps | bodies run | restarts | invariant checks | failing seeds | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        f"| {len(rows)} | {sum(r['steps'] for r in rows)} | {sum(r['bodies'] for r in rows)}"
        f" | {sum(r['restarts'] for r in rows)} | {sum(r['checks'] for r in rows)}"
        f" | {len(failed)} | {seconds:.0f} |",
        "",
        "| fault | injected |",
        "| --- | --- |",
        *(f"| {kind} | {n} |" for kind, n in sorted(faults.items())),
    ]
    for row in failed[:20]:
        lines.append(f"seed {row['seed']}: {row['failures'][0]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run a campaign or replay one seed; exit 1 when an invariant failed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=100, help="how many seeds")
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--seed", type=int, help="replay one seed and print its trace")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument(
        "--mutation", choices=sorted(sim_mutations.MUTATIONS), help="break one rule"
    )
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)
    if args.seed is not None:
        with sim_mutations.applied(args.mutation):
            result = Simulation(default_workload(), args.seed).run()
        sys.stdout.write(result.trace_text())
        for failure in result.failures:
            print(f"FAILED: {failure}")
        return 1 if result.failures else 0
    began = time.perf_counter()
    rows = campaign(
        range(args.start, args.start + args.seeds), args.jobs, args.mutation
    )
    print(table(rows, time.perf_counter() - began))
    return 1 if any(row["failures"] for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
