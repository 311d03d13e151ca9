"""Payload codecs: throughput without a codec against main (A/B, interleaved), and with each codec."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harvest_workloads import inc, k_steps, three_steps, throughput, wait_signal
from harvest_engine import SqliteRuntime
from harvest_engine.codecs import AesGcmCodec, GzipCodec, PayloadCodec

HERE = Path(__file__).resolve().parent
BRANCH = HERE.parent
MAIN = Path(os.environ.get("HARVEST_MAIN", "/work/main"))
RUNS = 200
ROUNDS = 3


def _subprocess_rate(root: Path) -> float:
    """Runs per second of `harvest_workloads throughput` with the code at `root`."""
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run(
        [sys.executable, "-m", "bench.harvest_workloads", "throughput", str(RUNS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=BRANCH,
        check=True,
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1])["runs_per_sec"])


def _codec_rate(codec: PayloadCodec | None) -> float:
    with tempfile.TemporaryDirectory(prefix="harvest-codec-") as folder:
        rt = SqliteRuntime.open(Path(folder) / "bench.db", codec=codec)
        try:
            for wf in (three_steps, k_steps, wait_signal):
                rt.register_workflow(wf)
            rt.register_activity(inc)
            return float(asyncio.run(throughput(rt, RUNS))["runs_per_sec"])
        finally:
            rt.close()


def run() -> list[tuple[str, str]]:
    """Median of ROUNDS, A/B interleaved so the machine's load falls on both sides alike."""
    rows: list[tuple[str, str]] = []
    if (MAIN / "harvest_engine").is_dir():
        main_rates, branch_rates = [], []
        for _ in range(ROUNDS):
            main_rates.append(_subprocess_rate(MAIN))
            branch_rates.append(_subprocess_rate(BRANCH))
        a, b = statistics.median(main_rates), statistics.median(branch_rates)
        rows.append(
            (
                f"throughput, {RUNS} runs x 3 activities: main (no codecs)",
                f"{a:.0f} runs/s",
            )
        )
        rows.append(
            (
                "the same, this branch without a codec",
                f"{b:.0f} runs/s ({(b / a - 1) * 100:+.1f}%)",
            )
        )
    for name, codec in (
        ("no codec", None),
        ("GzipCodec()", GzipCodec()),
        ("AesGcmCodec(32-byte key)", AesGcmCodec(bytes(32))),
    ):
        rate = statistics.median(_codec_rate(codec) for _ in range(ROUNDS))
        rows.append((f"throughput in process, {name}", f"{rate:.0f} runs/s"))
    return rows


if __name__ == "__main__":
    for name, result in run():
        print(f"{name}: {result}")
