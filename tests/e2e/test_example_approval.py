"""examples/approval.py runs as a script: queries, a rejected and an accepted update, a deduped webhook."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Workers


def test_the_approval_example_queries_updates_and_charges_once(
    workers: Workers, tmp_path: Path
) -> None:
    done = workers.finish(
        workers.spawn_path(workers.examples / "approval.py", tmp_path)
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "drive: RunState.WaitingSignal(name='approve')",
        "stage: awaiting approval",
        "quote: {'order': 'ORD-7', 'old': 100, 'new': 120}",
        "rejected: a price must be positive",
        "price: 120",
        "drive: RunState.Completed(output={'order': 'ORD-7', 'status': 'charged 120', "
        "'approved_by': 'alice'})",
        "stage: charged",
        "charged 1 time(s)",
        "second order: RunState.WaitingSignal(name='approve')",
        "a day later: no approval within a day",
        "stage: released",
    ]
    assert (tmp_path / "approval.db").exists()
