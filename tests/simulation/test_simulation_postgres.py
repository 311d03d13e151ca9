"""The simulation on Postgres (the slow tier): the same workload, faults and invariants."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

from harvest_engine.testing.simulation import (
    PostgresDatabase,
    Simulation,
    default_workload,
)

if TYPE_CHECKING:
    from tests.pg_server import PostgresServer

pytestmark = pytest.mark.slow

SEEDS = 4


def test_seeds_hold_every_invariant_on_postgres(pg_server: PostgresServer) -> None:
    logging.disable(logging.CRITICAL)
    try:
        for seed in range(SEEDS):
            dsn = pg_server.create_database()
            try:
                result = Simulation(
                    default_workload(), seed, backend=PostgresDatabase(dsn)
                ).run()
            finally:
                pg_server.drop_database(dsn)
            assert result.ok, (seed, result.failures)
            assert result.checks > 0
    finally:
        logging.disable(logging.NOTSET)
