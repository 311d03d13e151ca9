"""The runnable examples (guide §13) run as scripts, exit 0 and print what they prove."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from conftest import Workers


def run_example(
    workers: Workers, name: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`python examples/<name>.py` in a fresh interpreter, from `cwd`."""
    return workers.finish(workers.spawn_path(workers.examples / f"{name}.py", cwd=cwd))


def test_the_quickstart_completes_an_order_in_memory(
    workers: Workers, tmp_path: Path
) -> None:
    done = run_example(workers, "quickstart", tmp_path)

    assert done.returncode == 0, done.stderr
    assert "outcome: ExecutionOutcome.Completed(" in done.stdout
    assert re.search(
        r"completed: order ORD-1 confirmed: reserved 3x widget .*charged", done.stdout
    )
    assert (
        "history: 6 events: WorkflowStarted, ActivityScheduled, ActivityCompleted, "
        "ActivityScheduled, ActivityCompleted, WorkflowCompleted"
    ) in done.stdout
    assert list(tmp_path.iterdir()) == []  # in memory: no file written


def test_the_durability_example_proves_the_run_resumed_instead_of_restarting(
    workers: Workers, tmp_path: Path
) -> None:
    done = run_example(workers, "durability", tmp_path)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "drive returned RunState.WaitingSignal(name='approve')" in lines[0]
    assert "session 1: runtime dropped" in lines
    assert any(
        "RunState.Completed(" in line for line in lines if line.startswith("session 2")
    )
    assert "reserve ran 1 time(s), in session(s) [1]" in lines
    assert "ship ran 1 time(s), in session(s) [2]" in lines
    assert lines[-1] == "proved: the run resumed by replay; no completed step ran again"
    assert list(tmp_path.iterdir()) == []  # its file lived in a temporary folder
