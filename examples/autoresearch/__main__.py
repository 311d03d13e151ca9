"""The lab's command line: init, run, status, idea, budget.

python -m examples.autoresearch init LAB
python -m examples.autoresearch run --lab LAB --tag TAG [--experiments N] [--explore PCT]
python -m examples.autoresearch status --lab LAB --tag TAG
python -m examples.autoresearch idea --lab LAB --tag TAG "width=512"
python -m examples.autoresearch budget --lab LAB --tag TAG 12
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from examples.autoresearch import flows, lab
from harvest_engine import (
    ExecutionFilter,
    HarvestClient,
    HarvestError,
    Schedule,
    SqliteReader,
    SqliteRuntime,
    WorkflowSchedule,
)


def open_lab(lab_dir: Path) -> SqliteRuntime:
    """The lab's runtime with every workflow and activity registered."""
    rt = SqliteRuntime.open(lab.database(lab_dir))
    for fn in flows.WORKFLOWS:
        rt.register_workflow(fn)
    for fn in flows.ACTIVITIES:
        rt.register_activity(fn)
    return rt


def init(lab_dir: Path) -> None:
    """Create the lab and schedule its hourly summary."""
    lab.create(lab_dir)
    with open_lab(lab_dir) as rt:
        rt.upsert_schedule(
            WorkflowSchedule("lab_summary", Schedule.every("1h"), input=str(lab_dir))
        )
    print(
        f"lab ready at {lab_dir}: train.json, results.tsv, lab.db (hourly summary scheduled)"
    )


async def run(
    lab_dir: Path, tag: str, experiments: int, explore: int, pace: float
) -> None:
    """Start the session (or resume the one running) and serve until it completes."""
    with open_lab(lab_dir) as rt:
        session_id = f"session-{tag}"
        if _running(rt, session_id) is None:
            state = flows.first_state(lab_dir, tag, experiments, explore, pace)
            rt.start_workflow_with_id("research_session", session_id, state)
            print(
                f"started {session_id}: {experiments} experiment(s), explore {explore}%",
                flush=True,
            )
        else:
            print(f"resuming {session_id}", flush=True)
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        watcher = asyncio.create_task(_watch(rt, lab_dir, session_id, stop))
        await rt.serve(stop)
        await watcher
        outcome = _latest(rt, session_id)
        print(
            f"{session_id}: {outcome['state'] if outcome else 'not started'}",
            flush=True,
        )


async def _watch(
    rt: SqliteRuntime, lab_dir: Path, session_id: str, stop: asyncio.Event
) -> None:
    """Print each result as it is logged; stop serving once the session chain has closed."""
    shown = len(lab.results(lab_dir))
    while not stop.is_set():
        rows = lab.results(lab_dir)
        for row in rows[shown:]:
            print(
                f"{row['experiment']:<22} {row['status']:<8} val_bpb {row['val_bpb']:<7} {row['description']}",
                flush=True,
            )
        shown = len(rows)
        latest = _latest(rt, session_id)
        if latest is not None and latest["state"] not in (
            "RUNNING",
            "CONTINUED_AS_NEW",
        ):
            stop.set()
        await asyncio.sleep(0.05)


def _latest(rt: SqliteRuntime, session_id: str) -> dict[str, Any] | None:
    """The newest run of the session's chain (continue-as-new keeps the workflow id)."""
    page = rt.list_executions(ExecutionFilter().workflow_id(session_id).limit(1))
    if not page.executions:
        return None
    newest = page.executions[0]
    return {"exec_id": newest.exec_id, "state": newest.state}


def _running(rt: SqliteRuntime, session_id: str) -> str | None:
    """The exec id of the session's running run, if any."""
    latest = _latest(rt, session_id)
    return str(latest["exec_id"]) if latest and latest["state"] == "RUNNING" else None


def status(lab_dir: Path, tag: str) -> None:
    """The results so far and the session's marks, read beside a live `run` (no lock)."""
    with SqliteReader.open(lab.database(lab_dir)) as reader:
        page = reader.list_executions(
            ExecutionFilter().workflow_id(f"session-{tag}").limit(1)
        )
        if page.executions:
            newest = page.executions[0]
            print(
                f"session-{tag}: {newest.state} {newest.search_attributes.value or {}}"
            )
        else:
            print(f"session-{tag}: not started")
    for row in lab.results(lab_dir):
        print(
            f"{row['experiment']:<22} {row['status']:<8} val_bpb {row['val_bpb']:<7} {row['description']}"
        )


async def idea(lab_dir: Path, tag: str, text: str) -> None:
    """Send an idea to the session; a running `run` picks it up, a stopped one at its next start."""
    with HarvestClient.open(lab.database(lab_dir)) as client:
        await client.send_signal_by_workflow_id(
            "research_session", f"session-{tag}", "idea", text, None
        )
    print(f"idea queued for session-{tag}: {text}")


async def budget(lab_dir: Path, tag: str, experiments: int) -> None:
    """Change the budget: the update checks it and answers, then a signal applies it."""
    with HarvestClient.open(lab.database(lab_dir)) as client:
        page = client.list_executions(
            ExecutionFilter().workflow_id(f"session-{tag}").state("RUNNING").limit(1)
        )
        if not page.executions:
            raise SystemExit(f"session-{tag} is not running")
        session = page.executions[0].exec_id
        left = await client.update(session, "budget", experiments)  # checks only
        await client.send_signal(session, "budget", experiments)
    print(f"budget {experiments}: {left} experiment(s) left")


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m examples.autoresearch")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("init").add_argument("lab", type=Path)
    for name in ("run", "status", "idea", "budget"):
        command = commands.add_parser(name)
        command.add_argument("--lab", type=Path, required=True)
        command.add_argument("--tag", required=True)
        if name == "run":
            command.add_argument("--experiments", type=int, default=8)
            command.add_argument(
                "--explore", type=int, default=50, choices=range(101), metavar="0-100"
            )
            command.add_argument(
                "--train-seconds",
                type=float,
                default=0.0,
                help="how long each training takes",
            )
        elif name == "idea":
            command.add_argument(
                "text", help='a change as "key=value", e.g. "width=512"'
            )
        elif name == "budget":
            command.add_argument("experiments", type=int)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run one command; harvest's typed errors print as one line."""
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        match args.command:
            case "init":
                init(args.lab)
            case "run":
                asyncio.run(
                    run(
                        args.lab,
                        args.tag,
                        args.experiments,
                        args.explore,
                        args.train_seconds,
                    )
                )
            case "status":
                status(args.lab, args.tag)
            case "idea":
                asyncio.run(idea(args.lab, args.tag, args.text))
            case "budget":
                asyncio.run(budget(args.lab, args.tag, args.experiments))
    except HarvestError as error:
        raise SystemExit(f"autoresearch: {error}") from error


if __name__ == "__main__":
    main()
