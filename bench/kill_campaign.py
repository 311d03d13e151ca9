"""SIGKILL campaign: kill a writer N times with the file open; count lost, duplicated, corrupt, stuck runs.

    .venv/bin/python -m bench.kill_campaign --kills 1000 [--db PATH] [--seed 1] [--record]

Each session is a fresh writer process (`writer` mode below) on one file: it
opens the runtime, prints ``open``, starts its share of new runs (printing
``started <workflow id>`` once each start has committed), and drives every
run, printing a line per pass. The campaign kills it with SIGKILL after a
random number (0-6) of those lines, so every kill lands after the file is
open, at a point chosen from the writer's own output, never by sleeping. A
last session runs without a kill until it prints ``idle``.

Then it counts, from the file alone:
- lost: a workflow id the writer reported started that has no run;
- duplicated: a workflow id with more than one run, or an activity of a run
  completed more than once in its history;
- corrupt: ``PRAGMA integrity_check`` not ok, a run the reader flags damaged,
  a history that does not read, or a completed run with the wrong output;
- stuck: a run not COMPLETED after the final, unkilled session.

``--record`` writes the figures and the command into bench/RESULTS.md (its
own section, which `python -m bench` keeps).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    HarvestError,
    SqliteReader,
    SqliteRuntime,
    WorkflowAlreadyStarted,
    WorkflowContext,
    activity,
    workflow,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NEW_RUNS_PER_SESSION = 2
STEPS = 3
MAX_LINES_BEFORE_KILL = 6
SECTION = "## kill_campaign"


@activity
async def step(ctx: ActivityContext, value: int) -> int:
    return value * 2 + 1


@workflow
async def job(ctx: WorkflowContext, seed: int) -> int:
    value = seed
    for _ in range(STEPS):
        value = await ctx.execute_activity(step, value)
    return value


def expected_output(seed: int) -> int:
    value = seed
    for _ in range(STEPS):
        value = value * 2 + 1
    return value


# -- the writer (a child process) ----------------------------------------------------


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


async def writer(db: Path, session: int) -> None:
    with SqliteRuntime.open(db) as rt:
        say("open")
        rt.register_workflow(job)
        rt.register_activity(step)
        for i in range(NEW_RUNS_PER_SESSION):
            seed = session * NEW_RUNS_PER_SESSION + i
            with contextlib.suppress(WorkflowAlreadyStarted):
                rt.start_workflow_with_id("job", f"job-{seed}", seed)
            say(f"started job-{seed}")
        while await rt.poll_once():
            say("pass")
        say("idle")


# -- the campaign ------------------------------------------------------------------------


def spawn_writer(db: Path, session: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "bench.kill_campaign", "writer", str(db), str(session)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )


def one_session(
    db: Path, session: int, kill_after: int | None, started: set[str]
) -> dict[str, Any]:
    """Run a writer; SIGKILL it after `kill_after` lines past ``open`` (None: let it finish)."""
    proc = spawn_writer(db, session)
    assert proc.stdout is not None
    opened = False
    lines_after_open = 0
    killed = False
    for raw in proc.stdout:
        line = raw.decode().strip()
        if line == "open":
            opened = True
        elif line.startswith("started "):
            started.add(line.split()[1])
        if opened:
            if kill_after is not None and lines_after_open >= kill_after:
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                break
            lines_after_open += 1
    proc.stdout.close()
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    code = proc.wait(timeout=120)
    return {"opened": opened, "killed": killed, "code": code, "stderr": err}


def audit(db: Path, started: set[str]) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        rows = conn.execute(
            "SELECT exec_id, workflow_id, state, output FROM harvest_executions"
        ).fetchall()
    finally:
        conn.close()
    per_id = Counter(wid for _, wid, _, _ in rows)
    lost = len(started - set(per_id))
    duplicated = sum(1 for count in per_id.values() if count > 1)
    corrupt = 0 if integrity == "ok" else 1
    stuck = 0
    with SqliteReader.open(db) as reader:
        for exec_id, wid, state, output in rows:
            try:
                if reader.describe(exec_id).damaged is not None:
                    corrupt += 1
                    continue
                history = reader.load_history(exec_id)
            except HarvestError:
                corrupt += 1
                continue
            done = Counter(
                e.attrs.get("activity_id")
                for e in history
                if e.type == "ActivityCompleted"
            )
            duplicated += sum(1 for n in done.values() if n > 1)
            if state != "COMPLETED":
                stuck += 1
            elif int(output) != expected_output(int(wid.split("-")[1])):
                corrupt += 1
    return {
        "runs": len(rows),
        "started": len(started),
        "lost": lost,
        "duplicated": duplicated,
        "corrupt": corrupt,
        "stuck": stuck,
    }


def campaign(kills: int, db: Path, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    started: set[str] = set()
    writer_errors = 0
    landed = 0
    t0 = time.monotonic()
    for session in range(kills):
        result = one_session(
            db, session, rng.randrange(MAX_LINES_BEFORE_KILL + 1), started
        )
        landed += int(result["killed"] and result["opened"])
        if not result["killed"] and result["code"] != 0:
            writer_errors += 1
            print(
                f"session {session}: writer failed\n{result['stderr']}", file=sys.stderr
            )
        if (session + 1) % 50 == 0:
            print(f"{session + 1} sessions, {landed} kills", flush=True)
    final = one_session(db, kills, None, started)
    if final["code"] != 0:
        writer_errors += 1
        print(f"final session failed\n{final['stderr']}", file=sys.stderr)
    figures = audit(db, started)
    return {
        **figures,
        "sessions": kills,
        "kills": landed,
        "writer_errors": writer_errors,
        "seconds": round(time.monotonic() - t0, 1),
    }


def record(figures: dict[str, Any], command: str) -> None:
    path = HERE / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    head, marker, rest = text.partition(SECTION)  # the previous campaign's section goes
    after = rest.find("\n## ") if marker else -1
    tail = rest[after:] if after >= 0 else ""  # later sections (pg_kill_campaign) stay
    section = "\n".join(
        [
            SECTION,
            "",
            f"`{command}` on {time.strftime('%Y-%m-%d', time.gmtime())}: each session a fresh "
            f"writer process, SIGKILLed after a random 0-{MAX_LINES_BEFORE_KILL} lines of its "
            "output past `open` (so every kill lands with the file open), then one session "
            "left to finish; counted from the file.",
            "",
            "| sessions | kills landed | runs | lost | duplicated | corrupt | stuck | writer errors | wall time |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            f"| {figures['sessions']} | {figures['kills']} | {figures['runs']} | "
            f"{figures['lost']} | {figures['duplicated']} | {figures['corrupt']} | "
            f"{figures['stuck']} | {figures['writer_errors']} | {figures['seconds']} s |",
            "",
        ]
    )
    path.write_text(head.rstrip() + "\n\n" + section + tail)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "writer":
        asyncio.run(writer(Path(sys.argv[2]), int(sys.argv[3])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = args.db or Path(folder) / "campaign.db"
        figures = campaign(args.kills, db, args.seed)
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    if args.record:
        command = f".venv/bin/python -m bench.kill_campaign --kills {args.kills} --seed {args.seed} --record"
        record(figures, command)


if __name__ == "__main__":
    main()
