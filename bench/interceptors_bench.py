"""The interceptor hooks' cost, A/B: this tree against the tree before them, and with hooks installed.

Each measurement is one `bench.harvest_workloads` process (a fresh file,
synchronous=NORMAL so the disk's sync does not drown the Python), the
trees interleaved round by round so load drifts hit both alike; the row
gives each side's median and the ratio. The baseline tree is
$HARVEST_BASELINE, else `git archive` of main where this branch left it
(`git merge-base HEAD main`), or, once main holds the hooks, of the commit
before the one that added harvest_engine/interceptors.py, unpacked in a
temporary folder.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harvest_engine.interceptors import Interceptor

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from harvest_engine.activity import AttemptResult
    from harvest_engine.interceptors import (
        ActivityCall,
        DecisionCall,
        DecisionResult,
        QueryCall,
        RunClosedCall,
        SignalCall,
        StartCall,
        UpdateCall,
    )

R = TypeVar("R")

HERE = Path(__file__).resolve().parent.parent
ROUNDS = 7
WORKLOADS = (
    ("throughput", 200, "runs_per_sec", "runs/s"),
    ("long_history", 2000, "ms_per_activity", "ms/activity"),
)


class PassThrough(Interceptor):
    """Every runtime hook overridden, each only passing the call on: the floor of an installed chain."""

    def start(self, call: StartCall, proceed: Callable[[StartCall], R]) -> R:
        return proceed(call)

    def signal(self, call: SignalCall, proceed: Callable[[SignalCall], R]) -> R:
        return proceed(call)

    def query(self, call: QueryCall, proceed: Callable[[QueryCall], R]) -> R:
        return proceed(call)

    def update(self, call: UpdateCall, proceed: Callable[[UpdateCall], R]) -> R:
        return proceed(call)

    def decision(
        self, call: DecisionCall, proceed: Callable[[DecisionCall], DecisionResult]
    ) -> DecisionResult:
        return proceed(call)

    async def activity(
        self,
        call: ActivityCall,
        proceed: Callable[[ActivityCall], Awaitable[AttemptResult]],
    ) -> AttemptResult:
        return await proceed(call)

    def run_closed(self, call: RunClosedCall) -> None:
        """Told of each sealed run after its commit (does nothing with it)."""
        del call


def _measure(tree: Path, name: str, size: int, *flags: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.harvest_workloads",
            name,
            str(size),
            "--no-fsync",
            *flags,
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(HERE), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _baseline_commit() -> str:
    """Main where this branch left it; once merged, the parent of the hooks' first commit."""
    base = _git("merge-base", "HEAD", "main")
    if base != _git("rev-parse", "HEAD"):
        return base
    added = _git(
        "log", "--diff-filter=A", "--format=%H", "--", "harvest_engine/interceptors.py"
    )
    return f"{added.splitlines()[-1]}^"


def _baseline(folder: str) -> Path:
    given = os.environ.get("HARVEST_BASELINE")
    if given:
        return Path(given)
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", _baseline_commit()],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return Path(folder)


def run() -> list[tuple[str, str]]:
    """Medians of ROUNDS interleaved processes per side (bench/__main__.py's contract)."""
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="harvest-baseline-") as folder:
        before = _baseline(folder)
        for name, size, key, unit in WORKLOADS:
            sides: dict[str, list[float]] = {"before": [], "none": [], "installed": []}
            for _ in range(ROUNDS):
                sides["before"].append(_measure(before, name, size)[key])
                sides["none"].append(_measure(HERE, name, size)[key])
                sides["installed"].append(
                    _measure(HERE, name, size, "--intercept")[key]
                )
            med = {side: statistics.median(values) for side, values in sides.items()}
            rows.append(
                (
                    f"{name} ({size}, synchronous=NORMAL, median of {ROUNDS} interleaved processes): "
                    "before the hooks / no interceptor / pass-through interceptor on every hook",
                    f"{med['before']:.3f} / {med['none']:.3f} / {med['installed']:.3f} {unit}; "
                    f"no interceptor / before = {med['none'] / med['before']:.3f}, "
                    f"installed / before = {med['installed'] / med['before']:.3f}",
                )
            )
    return rows


def main() -> None:
    for name, result in run():
        print(f"| {name} | {result} |", flush=True)


if __name__ == "__main__":
    main()
