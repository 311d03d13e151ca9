"""Deterministic simulation: a whole runtime under a seed's faults, interleavings and checks.

`Simulation(workload, seed).run()` runs a `Workload` (your workflows and
activities, and what clients send them) on a `SimulatedStore` over a real
SQLite file, a `ManualClock`, seeded activity bodies and simulated clients,
checks the invariants after every step and returns a `SimulationResult`
whose `trace_text()` is the same for the same seed, byte for byte.
`default_workload()` uses every primitive (bench/simulate.py runs it).
"""

from __future__ import annotations

from harvest_engine.testing.simulation.backends import PostgresDatabase, SqliteFile
from harvest_engine.testing.simulation.faults import (
    FaultPlan,
    SimulatedCrash,
    SimulatedStore,
)
from harvest_engine.testing.simulation.harness import Simulation
from harvest_engine.testing.simulation.result import SimulationResult
from harvest_engine.testing.simulation.workload import Workload, default_workload

__all__ = [
    "FaultPlan",
    "PostgresDatabase",
    "SimulatedCrash",
    "SimulatedStore",
    "Simulation",
    "SimulationResult",
    "SqliteFile",
    "Workload",
    "default_workload",
]
