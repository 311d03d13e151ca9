"""One workflow, several fresh interpreters: byte-identical histories (STYLE §10).

Each interpreter has its own hash seed and its own object addresses (a
different ballast of objects), so any order taken from a set, a dict of
ids or a hash leaks into the history and this test fails. The run's exec id
is pinned and its clock is manual (see workers/det_run.py), so no event
field needs normalising: the histories must match byte for byte.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harvest_engine import HistoryEvent, WorkflowReplayer

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Workers

# (PYTHONHASHSEED, objects allocated before the run)
INTERPRETERS = [("0", 0), ("1", 1234), ("2718281", 99_991)]


def run_everywhere(workers: Workers, tmp_path: Path) -> list[dict[str, Any]]:
    """Run the workflow once per interpreter, each on its own file; their reports."""
    procs = []
    for n, (seed, ballast) in enumerate(INTERPRETERS):
        out = tmp_path / f"run-{n}.json"
        proc = workers.spawn(
            "det_run", tmp_path / f"run-{n}.db", out, str(ballast), PYTHONHASHSEED=seed
        )
        procs.append((proc, out))
    reports = []
    for proc, out in procs:
        workers.wait_for(
            lambda p=proc: p.poll() is not None, "a determinism run to finish"
        )
        assert proc.returncode == 0, proc.communicate()[1]
        reports.append(json.loads(out.read_text()))
    return reports


def test_the_same_workflow_gives_byte_identical_histories_in_fresh_interpreters(
    workers: Workers, tmp_path: Path
) -> None:
    reports = run_everywhere(workers, tmp_path)

    assert len({r.pop("hash_probe") for r in reports}) == len(INTERPRETERS)
    first = reports[0]
    for n, other in enumerate(reports[1:], start=1):
        assert len(other["events"]) == len(first["events"]), f"interpreter {n}"
        for mine, theirs in zip(first["events"], other["events"], strict=True):
            assert theirs == mine, f"interpreter {n} diverged"
        assert other["output"] == first["output"]

    trace = first["output"]
    assert [item["echo"] for item in trace["gather"]] == [0, 1, 2]
    assert trace["wait"] == {"done": [1], "pending": [0]}  # the activity beat the timer
    assert trace["as_completed"][1:] == [
        "1s",
        "2s",
        "3s",
    ]  # completion order, not input
    assert trace["late"] is None
    assert trace["extra"] == [1, 2]
    assert trace["notes"] == ["a", "b"]
    assert trace["flaky"] == {"flaky": "x", "attempt": 3}


def test_a_history_recorded_in_another_interpreter_replays_here(
    workers: Workers, tmp_path: Path
) -> None:
    flows = workers.load("det_flows")
    for report in run_everywhere(workers, tmp_path):
        history = [HistoryEvent.from_json(text) for text in report["events"]]
        assert [event.to_json() for event in history] == report["events"]
        result = WorkflowReplayer([flows.choreography]).replay(history)
        assert result.closed
        assert result.events == len(history)
