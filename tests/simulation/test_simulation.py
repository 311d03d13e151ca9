"""Deterministic simulation: fixed seeds hold every invariant, and a seed replays byte for byte."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections import Counter
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
    from harvest_engine.runtime.serving import command_calls

    real = command_calls.run

    def twice(engine: object, record: object) -> object:
        if getattr(record, "KIND", "") == "send_signal":
            real(engine, record)  # type: ignore[arg-type]
        return real(engine, record)  # type: ignore[arg-type]

    _quiet()
    mp = pytest.MonkeyPatch()
    mp.setattr(command_calls, "run", twice)
    try:
        found = [s for s in range(5) if not Simulation(default_workload(), s).run().ok]
    finally:
        mp.undo()
        logging.disable(logging.NOTSET)
    assert found


def test_clients_reset_pause_and_start_into_the_queue_and_each_is_checked() -> None:
    """The new command kinds go through the command queue, and their invariants are checked."""
    _quiet()
    try:
        sims = [Simulation(default_workload(), seed) for seed in range(8)]
        results = [sim.run() for sim in sims]
    finally:
        logging.disable(logging.NOTSET)
    assert all(result.ok for result in results), [r.failures for r in results]
    kinds = Counter(
        sent.record.KIND for sim in sims for sent in sim.clients.sent.values()
    )
    for kind in ("reset", "pause", "unpause", "start_workflow_with_options"):
        assert kinds[kind] > 0, kind
    checks = [sim.invariants for sim in sims]
    assert sum(c.queue_checks.checks for c in checks) > 0
    assert sum(len(c.queue_checks.admitted) for c in checks) > 1  # runs were admitted
    assert sum(c.pause_checks.checks for c in checks) > 0  # a run stayed paused a step
    assert sum(c.reset_replays for c in checks) > 0  # a reset's new run replayed


@pytest.mark.parametrize(
    ("mutation", "seed", "found"),
    [
        ("admit-past-concurrency", 1, "RUNNING admitted runs, concurrency 2"),
        ("ignore-queue-rate", 12, "the rate spaces them 20 s"),
        ("skip-enqueue-dedup", 7, "dedup id d1 has 2 ENQUEUED/RUNNING runs"),
        ("decide-while-paused", 0, "paused, yet recorded"),
    ],
)
def test_a_broken_queue_or_pause_rule_is_found(
    mutation: str, seed: int, found: str
) -> None:
    """Each queue and pause invariant bites: its rule broken, the seed that shows it fails."""
    from bench import sim_mutations

    _quiet()
    try:
        with sim_mutations.applied(mutation):
            result = Simulation(default_workload(), seed).run()
    finally:
        logging.disable(logging.NOTSET)
    assert any(found in failure for failure in result.failures), result.failures
