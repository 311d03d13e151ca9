"""examples/autoresearch: the seed's second app runs offline, takes steering, survives kill -9."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from examples.autoresearch import lab
from harvest_engine import ExecutionFilter, SqliteReader

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from conftest import Workers


def autoresearch(workers: Workers, *args: str | Path) -> subprocess.Popen[str]:
    """Start `python -m examples.autoresearch ARGS` (its __main__ file, the same code)."""
    return workers.spawn_path(workers.examples / "autoresearch" / "__main__.py", *args)


def finished(workers: Workers, *args: str | Path) -> str:
    """Run a command to its end; its output (it must succeed)."""
    done = workers.finish(autoresearch(workers, *args))
    assert done.returncode == 0, done.stderr
    return done.stdout


def session_runs(db: Path) -> list[tuple[str, object]]:
    """(state, search attributes) of each run of the demo session, newest first."""
    with SqliteReader.open(db) as reader:
        page = reader.list_executions(ExecutionFilter().workflow_id("session-demo"))
    return [(run.state, run.search_attributes.value) for run in page.executions]


def test_a_lab_runs_its_experiments_keeps_improvements_and_continues_as_new(
    workers: Workers, tmp_path: Path
) -> None:
    labdir = tmp_path / "lab"
    assert "hourly summary scheduled" in finished(workers, "init", labdir)
    out = finished(
        workers,
        "run",
        "--lab",
        labdir,
        "--tag",
        "demo",
        "--experiments",
        "8",
        "--explore",
        "100",
    )
    assert out.splitlines()[-1] == "session-demo: COMPLETED"
    rows = lab.results(labdir)
    assert [row["experiment"] for row in rows] == ["demo-baseline"] + [
        f"demo-exp-{n}" for n in range(1, 9)
    ]
    kept = [float(row["val_bpb"]) for row in rows if row["status"] == "keep"]
    assert kept == sorted(
        kept, reverse=True
    )  # each kept experiment beat the best before it
    assert len(kept) >= 3
    runs = session_runs(lab.database(labdir))
    assert [state for state, _ in runs] == ["COMPLETED", "CONTINUED_AS_NEW"]
    assert runs[0][1] == {"tag": "demo", "best_val_bpb": kept[-1], "done": 8}
    config = lab.read_config(labdir)
    assert config != lab.BASELINE  # kept patches built up the config
    with SqliteReader.open(lab.database(labdir)) as reader:
        assert [s.workflow_name for s in reader.list_schedules()] == ["lab_summary"]


def test_ideas_and_budget_steer_a_running_session_and_a_kill_loses_nothing(
    workers: Workers, tmp_path: Path
) -> None:
    labdir = tmp_path / "lab"
    finished(workers, "init", labdir)
    args = ("--lab", labdir, "--tag", "demo")
    hold = labdir / "hold"
    hold.touch()  # training waits: the session stays RUNNING while the test steers it
    first = autoresearch(workers, "run", *args, "--experiments", "3")
    assert first.stdout is not None
    assert first.stdout.readline().startswith("started session-demo")
    assert "idea queued" in finished(workers, "idea", *args, "width=4096")
    refused = workers.finish(autoresearch(workers, "budget", *args, "-1"))
    assert refused.returncode == 1
    assert "budget must be a whole number from 0 to 1000" in refused.stderr
    assert "6 experiment(s) left" in finished(workers, "budget", *args, "6")
    hold.unlink()
    workers.wait_for(lambda: len(lab.results(labdir)) >= 3, "three results", first)
    workers.sigkill(first)

    again = finished(workers, "run", *args)
    assert again.splitlines()[0] == "resuming session-demo"
    assert again.splitlines()[-1] == "session-demo: COMPLETED"
    rows = lab.results(labdir)
    names = Counter(row["experiment"] for row in rows)
    assert names == Counter(["demo-baseline"] + [f"demo-exp-{n}" for n in range(1, 7)])
    assert len({row["key"] for row in rows}) == len(rows)
    crashed = [row for row in rows if row["status"] == "crash"]
    assert [row["description"] for row in crashed] == ["idea: width -> 4096"]
