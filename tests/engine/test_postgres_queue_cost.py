"""What a queued 3-activity run costs a Postgres worker: statements, round trips and commits.

As test_postgres_statement_cost, with every run started into a queue of
concurrency 4: the commit that ends a run admits and decides its successor
(no admission transaction, no pass in between), an admission's reads
travel in one round trip behind the queue's lock, and a run's workflow
name is known from its admission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import PostgresRuntime, Queue, StartOptions
from tests.engine.test_postgres_statement_cost import (
    add_one,
    three_steps,
    traced_passes,
)

if TYPE_CHECKING:
    from pathlib import Path

RUNS = 24
# Per run, driven pass by pass (poll_once), the passes' own reads included
# (measured: 19.1 statements, 9.5 round trips and 0.88 commits; before the
# held writes, savepoints and run ends (store/postgres/deferred.py) and the
# admission's one lock for its picks, 36.6 statements; at 27caac9, 40.0,
# 17.2 and 1.5).
STATEMENTS_PER_RUN = 20
ROUND_TRIPS_PER_RUN = 12
COMMITS_PER_RUN = 1.1


def test_a_queued_run_costs_few_round_trips_and_commits_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    trace = tmp_path / "libpq.trace"
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.settings.group_commit_seconds = 60.0  # never cut by load
        rt.register_activity(add_one)
        rt.register_workflow(three_steps)
        rt.register_queue(Queue("q", concurrency=4))
        runs = [
            str(
                rt.start_workflow_with_options(
                    "three_steps", i, StartOptions(queue="q")
                ).exec_id
            )
            for i in range(RUNS)
        ]
        sent = traced_passes(rt, pg_dsn, runs, trace, passes=200)
    finally:
        rt.close()
    commits = sum(
        line.startswith("F") and '"COMMIT"' in line
        for line in trace.read_text().splitlines()
    )
    assert (sent["Execute"] + sent["Query"]) / RUNS <= STATEMENTS_PER_RUN, sent
    assert (sent["Sync"] + sent["Flush"]) / RUNS <= ROUND_TRIPS_PER_RUN, sent
    assert commits / RUNS <= COMMITS_PER_RUN, commits
