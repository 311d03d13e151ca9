"""The lifecycle examples (saga, fan-out) run as scripts, exit 0 and print what they prove."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Workers


def test_the_saga_example_runs_compensations_on_cancel(
    workers: Workers, tmp_path: Path
) -> None:
    done = workers.finish(
        workers.spawn_path(workers.examples / "saga.py", cwd=tmp_path)
    )

    assert done.returncode == 0, done.stderr
    assert (
        "T2 cancelled: RunState.Cancelled(reason='customer changed plans')"
        in done.stdout
    )
    assert "compensations, newest first: car-T2, hotel-T2, flight-T2" in done.stdout
    assert "last event: WorkflowCancelled" in done.stdout


def test_the_fan_out_example_gathers_its_children_in_one_drive(
    workers: Workers, tmp_path: Path
) -> None:
    done = workers.finish(
        workers.spawn_path(workers.examples / "fan_out.py", cwd=tmp_path)
    )

    assert done.returncode == 0, done.stderr
    assert (
        "parent: RunState.Completed(output={'per_document': [4, 2, 4], 'total': 10})"
        in done.stdout
    )
    assert "3 children, all gathered in one drive" in done.stdout
