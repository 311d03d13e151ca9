"""Record the golden histories again and rewrite tests/golden/*.json.

    python -m tests.golden.regenerate

Run it only on purpose: after a deliberate change to a golden workflow or
to the event encoding, and review the diff. Each scenario runs on a fresh
file with a ManualClock and a pinned exec id, so recording twice gives the
same bytes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from harvest_engine import (
    ExecutionId,
    HistoryEvent,
    ManualClock,
    RunState,
    SqliteRuntime,
)
from tests.golden.workflows import ACTIVITIES, SCENARIOS, WORKFLOWS, Scenario

GOLDEN_DIR = Path(__file__).resolve().parent
DRIVE_LIMIT = 1000


def path_of(scenario: Scenario) -> Path:
    """Where a scenario's history is committed."""
    return GOLDEN_DIR / f"{scenario.name}.json"


def encode(events: list[HistoryEvent]) -> str:
    """A JSON array with one event's `to_json()` per line (diffs stay readable)."""
    return "[\n" + ",\n".join(event.to_json() for event in events) + "\n]\n"


def without_traces(events: list[HistoryEvent]) -> list[HistoryEvent]:
    """The events with every recorded `stack_trace` left out.

    A trace names the files of the checkout that recorded it (absolute
    paths), and replay never reads it: the goldens freeze everything else.
    """
    return [dataclasses.replace(e, attrs=_untraced(e.attrs)) for e in events]


def _untraced(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untraced(v) for k, v in value.items() if k != "stack_trace"}
    if isinstance(value, list):
        return [_untraced(v) for v in value]
    return value


def decode(text: str) -> list[HistoryEvent]:
    """The events of a golden file."""
    return [HistoryEvent.from_json(item) for item in json.loads(text)]


async def record(scenario: Scenario, db: Path) -> list[HistoryEvent]:
    """Run a scenario to its end on a fresh file; its history."""
    clock = ManualClock()
    pinned = classmethod(lambda cls: cls(scenario.exec_id))
    with SqliteRuntime.open(db, clock=clock) as rt:
        for wf in WORKFLOWS:
            rt.register_workflow(wf)
        for act in ACTIVITIES:
            rt.register_activity(act)
        with mock.patch.object(ExecutionId, "new", pinned):
            exec_id = rt.start_workflow(scenario.workflow.info.name, scenario.input)
        for name, payload in scenario.early_signals:
            rt.send_signal(exec_id, name, payload)
        script = {name: list(values) for name, values in scenario.on_block.items()}
        for _ in range(DRIVE_LIMIT):
            state = await rt.run_until_blocked(exec_id)
            if state.is_terminal:
                return without_traces(rt.load_history(exec_id))
            if isinstance(state, RunState.WaitingSignal) and script.get(state.name):
                rt.send_signal(exec_id, state.name, script[state.name].pop(0))
                continue
            clock.advance(scenario.step)
    raise RuntimeError(
        f"scenario {scenario.name} did not finish in {DRIVE_LIMIT} drives"
    )


def record_all(folder: Path) -> dict[str, str]:
    """Every scenario's encoded history, recorded on files in `folder`."""
    return {
        scenario.name: encode(
            asyncio.run(record(scenario, folder / f"{scenario.name}.db"))
        )
        for scenario in SCENARIOS
    }


def main() -> None:
    """Rewrite every golden file."""
    with tempfile.TemporaryDirectory() as tmp:
        histories = record_all(Path(tmp))
    for scenario in SCENARIOS:
        path_of(scenario).write_text(histories[scenario.name])
        print(f"wrote {path_of(scenario)}")


if __name__ == "__main__":
    main()
