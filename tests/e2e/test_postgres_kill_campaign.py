"""A short run of the Postgres kill campaign (bench/pg_kill_campaign.py) in the test suite.

Three serving worker processes, one SIGKILLed and replaced each round under
load: every run completes with its output, no committed event changes, no
activity completes twice, and every task a dead worker held is retaken
within 2x the lease. `make bench-pg-kill` runs the full campaign.
"""

from __future__ import annotations

import pytest

from bench.pg_kill_campaign import campaign

pytestmark = pytest.mark.slow

LEASE = 2.0


def test_killing_one_of_three_workers_again_and_again_under_load_loses_changes_and_repeats_nothing(
    pg_dsn: str,
) -> None:
    figures = campaign(
        pg_dsn,
        kills=3,
        lease=LEASE,
        initial_runs=12,
        runs_per_round=3,
        drain_timeout=120.0,
    )

    assert figures["runs"] == 12 + 3 * 3
    assert figures["stuck"] == 0, figures
    assert figures["changed"] == 0, figures
    assert figures["completed_twice"] == 0, figures
    assert figures["activities_completed"] == 3 * figures["runs"]
    # at least one kill landed on a worker holding leases
    assert figures["kills_of_lease_holders"] >= 1, figures
    assert figures["lost_attempts"] >= 1, figures  # retaken, and recorded as lost
    assert figures["reclaim_max_s"] <= 2 * LEASE, figures
    assert figures["worker_exits_unexpected"] == 0, figures
    assert figures["worker_log_errors"] == 0, figures
