"""cProfile top-20 of the throughput and long-history workloads: `python -m bench.profile_hot`.

Prints, per workload, the 20 functions with the most own time, with their
call counts (counts do not depend on the machine's load; times do). The
listings in bench/RESULTS.md come from this script.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import pstats
import sys
import tempfile

from bench import harvest_workloads as w

WORKLOADS = {
    "throughput (200 x 3 activities)": (w.throughput, 200),
    "long history (K=2,000)": (w.long_history, 2000),
}


def profile(name: str, top: int = 20) -> str:
    """The top-`top` listing of one workload, by own time."""
    fn, size = WORKLOADS[name]
    with tempfile.TemporaryDirectory(prefix="harvest-profile-") as folder:
        rt = w._open(folder)
        profiler = cProfile.Profile()
        try:
            profiler.enable()
            asyncio.run(fn(rt, size))
            profiler.disable()
        finally:
            rt.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "function calls" in line)
    return "\n".join(line.rstrip() for line in lines[start:] if line.strip())


def main() -> None:
    names = sys.argv[1:] or list(WORKLOADS)
    for name in names:
        print(f"### {name}\n\n```\n{profile(name)}\n```\n", flush=True)


if __name__ == "__main__":
    main()
