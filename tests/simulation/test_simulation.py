"""Deterministic simulation: fixed seeds hold every invariant, and a seed replays byte for byte."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harvest_engine.testing.simulation import Simulation, default_workload

SEEDS = 200
CHUNKS = 4
REGRESSIONS = Path(__file__).with_name("regression_seeds.txt")


def _quiet() -> None:
    logging.disable(logging.CRITICAL)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fixed_seeds_hold_every_invariant(chunk: int) -> None:
    _quiet()
    try:
        size = SEEDS // CHUNKS
        for seed in range(chunk * size, (chunk + 1) * size):
            result = Simulation(default_workload(), seed).run()
            assert result.ok, (seed, result.failures)
            assert result.checks > 0
    finally:
        logging.disable(logging.NOTSET)


def test_regression_seeds_pass() -> None:
    _quiet()
    try:
        for line in REGRESSIONS.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                seed = int(line.split()[0])
                result = Simulation(default_workload(), seed).run()
                assert result.ok, (seed, result.failures)
    finally:
        logging.disable(logging.NOTSET)


def test_the_same_seed_gives_the_same_trace_twice() -> None:
    _quiet()
    try:
        first = Simulation(default_workload(), 24).run()
        second = Simulation(default_workload(), 24).run()
    finally:
        logging.disable(logging.NOTSET)
    assert first.faults  # the seed injects faults and crashes
    assert first.restarts
    assert first.trace_text() == second.trace_text()


def test_the_trace_does_not_depend_on_hash_randomization() -> None:
    code = (
        "import logging; logging.disable(logging.CRITICAL)\n"
        "from harvest_engine.testing.simulation import Simulation, default_workload\n"
        "import sys; sys.stdout.write(Simulation(default_workload(), 11).run().trace_text())\n"
    )
    traces = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        traces.append(out.stdout)
    assert traces[0]
    assert traces[0] == traces[1]


def test_a_broken_rule_is_found() -> None:
    """The harness bites: a signal command applied twice fails an invariant at once."""
    from harvest_engine.runtime.serving import commands

    real = commands.run

    def twice(engine: object, record: object) -> object:
        if getattr(record, "KIND", "") == "send_signal":
            real(engine, record)  # type: ignore[arg-type]
        return real(engine, record)  # type: ignore[arg-type]

    _quiet()
    mp = pytest.MonkeyPatch()
    mp.setattr(commands, "run", twice)
    try:
        found = [s for s in range(5) if not Simulation(default_workload(), s).run().ok]
    finally:
        mp.undo()
        logging.disable(logging.NOTSET)
    assert found
