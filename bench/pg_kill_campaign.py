"""Postgres kill campaign: SIGKILL one of three serving workers again and again under load; audit it all.

    .venv/bin/python -m bench.pg_kill_campaign --kills 60 [--lease 2] [--seed 1] [--record]

Three `PostgresRuntime` worker processes (`worker` mode below) serve one
database on a throwaway server (tests/pg_server.py). Each round starts a few
new runs (three activities each, every body ~50 ms, so kills land
mid-activity), picks a worker (one holding a lease when any does), SIGKILLs
it and starts a replacement under a new worker id, so the dead worker's
tasks come back only through lease expiry. The campaign then watches the
tasks the dead worker held: the time from the kill until another worker
holds (or has finished) each one is its reclaim latency. After every round
it reads every committed event and checks that none changed since it was
last read. At the end the killing stops, the runs drain, and the audit counts:

- stuck: a run not COMPLETED, or completed with the wrong output;
- changed: a committed event that later read differently, or vanished, or
  a history whose sequence numbers have a gap;
- completed twice: an activity with two ``ActivityCompleted`` events, or two
  ``COMPLETED`` attempts recorded;
- slow reclaims: a dead worker's task retaken later than 2x the lease.

``--record`` writes the figures and the command into bench/RESULTS.md (the
``## pg_kill_campaign`` section, which `python -m bench` keeps).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

from harvest_engine import (
    ActivityContext,
    PostgresRuntime,
    WorkflowContext,
    activity,
    workflow,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKERS = 3
STEPS = 3
STEP_SECONDS = 0.05
SECTION = "## pg_kill_campaign"


@activity
def step(ctx: ActivityContext, value: int) -> int:
    """One step of a job: a short body, so a kill often lands while it runs."""
    time.sleep(STEP_SECONDS)
    return value * 2 + 1


@workflow
async def job(ctx: WorkflowContext, seed: int) -> int:
    """STEPS activities one after another."""
    value = seed
    for _ in range(STEPS):
        value = await ctx.execute_activity(step, value)
    return value


def expected_output(seed: int) -> int:
    """What `job(seed)` returns."""
    value = seed
    for _ in range(STEPS):
        value = value * 2 + 1
    return value


# -- a worker (a child process) ---------------------------------------------------------


async def serve_worker(dsn: str, worker_id: str, lease: str) -> None:
    """Connect, say ``ready``, serve until SIGTERM."""
    with PostgresRuntime.connect(dsn, worker_id=worker_id, lease=f"{lease}s") as rt:
        rt.register_workflow(job)
        rt.register_activity(step)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        print("ready", flush=True)
        await rt.serve(stop, poll_interval="50ms", grace="5s")


def worker_main(dsn: str, worker_id: str, lease: str, log_path: str) -> None:
    """The worker process: warnings and errors go to its log file."""
    logging.basicConfig(
        filename=log_path,
        level=logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    asyncio.run(serve_worker(dsn, worker_id, lease))


# -- the campaign -------------------------------------------------------------------------


def sql(dsn: str, text: str, *args: Any) -> list[Any]:
    """Rows of one statement on a fresh autocommit connection."""
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        cursor = conn.execute(text, args or None)
        return cursor.fetchall() if cursor.description else []


def _close(proc: subprocess.Popen[bytes]) -> None:
    """Close an ended worker's stdout pipe."""
    if proc.stdout is not None:
        proc.stdout.close()


class Fleet:
    """The three worker slots: each a process, its worker id and its log."""

    def __init__(self, dsn: str, lease: float, logs: Path) -> None:
        self.dsn = dsn
        self.lease = lease
        self.logs = logs
        self.spawned = 0
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ids: list[str] = []
        self.unexpected_exits = 0
        for _ in range(WORKERS):
            proc, worker_id = self._spawn()
            self.procs.append(proc)
            self.ids.append(worker_id)

    def _spawn(self) -> tuple[subprocess.Popen[bytes], str]:
        worker_id = f"w{self.spawned}"
        self.spawned += 1
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.pg_kill_campaign",
                "worker",
                self.dsn,
                worker_id,
                str(self.lease),
                str(self.logs / f"{worker_id}.log"),
            ],
            stdout=subprocess.PIPE,  # its "ready" line (see `stop`)
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
        )
        return proc, worker_id

    def check_alive(self) -> None:
        """Count (and replace) a worker that ended on its own: it should never."""
        for slot, proc in enumerate(self.procs):
            if proc.poll() is not None:
                self.unexpected_exits += 1
                _close(proc)
                self.procs[slot], self.ids[slot] = self._spawn()

    def kill(self, slot: int) -> str:
        """SIGKILL the worker in `slot`, reap it, start a new one in its place; the dead id."""
        proc, dead = self.procs[slot], self.ids[slot]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        _close(proc)
        self.procs[slot], self.ids[slot] = self._spawn()
        return dead

    def stop(self) -> None:
        """SIGTERM every worker once it is serving, and wait for it.

        A worker started by the last kill may still be importing when the
        runs are done: SIGTERM then ends it before its handler is set
        (exit -15), which is no failure of the worker.
        """
        for proc in self.procs:
            assert proc.stdout is not None
            if proc.poll() is None:
                ready, _, _ = select.select([proc.stdout], [], [], 60)
                if ready:
                    proc.stdout.readline()
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            _close(proc)
            if code != 0:
                self.unexpected_exits += 1

    def log_problems(self) -> list[str]:
        """ERROR lines and tracebacks in the workers' logs (warnings are expected)."""
        found: list[str] = []
        for path in sorted(self.logs.glob("*.log")):
            for line in path.read_text().splitlines():
                if " ERROR " in line or line.startswith("Traceback"):
                    found.append(f"{path.stem}: {line[:300]}")
        return found


class Histories:
    """Every committed event as last read; `check` counts events that changed since."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int], tuple[str, str]] = {}
        self.changed = 0
        self.reads = 0

    def check(self, dsn: str) -> None:
        rows = sql(dsn, "SELECT exec_id, seq, type, attrs FROM harvest_events")
        now = {(e, s): (t, a) for e, s, t, a in rows}
        self.reads += 1
        for key, event in self.seen.items():
            if now.get(key) != event:
                self.changed += 1
        self.seen = now


def pick_victim(dsn: str, fleet: Fleet, rng: random.Random) -> int:
    """A slot whose worker holds a lease right now, when one does (else any)."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        holders = {
            r[0]
            for r in sql(
                dsn,
                "SELECT DISTINCT worker_id FROM harvest_tasks WHERE status = 'RUNNING'",
            )
        }
        slots = [i for i, worker_id in enumerate(fleet.ids) if worker_id in holders]
        if slots:
            return rng.choice(slots)
        time.sleep(0.02)
    return rng.randrange(WORKERS)


def watch_reclaims(dsn: str, dead: str, killed_at: float, lease: float) -> list[float]:
    """Seconds from the kill until each task `dead` held is another worker's (or done).

    A task never reclaimed within 4x the lease counts as that long.
    """
    held = {
        int(r[0])
        for r in sql(
            dsn,
            "SELECT id FROM harvest_tasks WHERE status = 'RUNNING' AND worker_id = %s",
            dead,
        )
    }
    latencies: list[float] = []
    deadline = killed_at + 4 * lease
    while held and time.monotonic() < deadline:
        still = {
            int(r[0])
            for r in sql(
                dsn,
                "SELECT id FROM harvest_tasks WHERE id = ANY(%s) AND worker_id = %s",
                list(held),
                dead,
            )
        }
        at = time.monotonic() - killed_at
        latencies += [at] * len(held - still)
        held = still
        time.sleep(0.02)
    latencies += [4 * lease] * len(held)
    return latencies


def start_runs(rt: PostgresRuntime, first: int, count: int) -> None:
    for seed in range(first, first + count):
        rt.start_workflow_with_id("job", f"job-{seed}", seed)


def completed(dsn: str) -> int:
    rows = sql(dsn, "SELECT COUNT(*) FROM harvest_executions WHERE state = 'COMPLETED'")
    return int(rows[0][0])


def audit(dsn: str, histories: Histories) -> dict[str, int]:
    """The final counts, read from the database alone."""
    histories.check(dsn)
    runs = sql(
        dsn, "SELECT exec_id, workflow_id, state, output FROM harvest_executions"
    )
    stuck = sum(
        1
        for _, wid, state, output in runs
        if state != "COMPLETED"
        or json.loads(output) != expected_output(int(wid.split("-")[1]))
    )
    events = sql(dsn, "SELECT exec_id, seq, type, attrs FROM harvest_events")
    per_run: dict[str, list[int]] = {}
    done: Counter[tuple[str, Any]] = Counter()
    for exec_id, seq, type_, attrs in events:
        per_run.setdefault(exec_id, []).append(seq)
        if type_ == "ActivityCompleted":
            done[(exec_id, json.loads(attrs)["activity_id"])] += 1
    gaps = sum(
        1 for seqs in per_run.values() if sorted(seqs) != list(range(1, len(seqs) + 1))
    )
    attempts = sql(
        dsn,
        "SELECT COUNT(*) FROM (SELECT exec_id, activity_id FROM harvest_activity_attempts "
        "WHERE outcome = 'COMPLETED' GROUP BY exec_id, activity_id HAVING COUNT(*) > 1) d",
    )
    lost = sql(
        dsn, "SELECT COUNT(*) FROM harvest_activity_attempts WHERE outcome = 'LOST'"
    )
    return {
        "runs": len(runs),
        "stuck": stuck,
        "changed": histories.changed + gaps,
        "completed_twice": sum(1 for n in done.values() if n > 1) + int(attempts[0][0]),
        "activities_completed": sum(done.values()),
        "lost_attempts": int(lost[0][0]),
    }


def campaign(
    dsn: str,
    *,
    kills: int,
    lease: float,
    seed: int = 1,
    initial_runs: int = 30,
    runs_per_round: int = 4,
    drain_timeout: float = 300.0,
) -> dict[str, Any]:
    """Run the campaign on an empty database `dsn`; the figures."""
    rng = random.Random(seed)
    began = time.monotonic()
    histories = Histories()
    reclaims: list[float] = []
    holder_kills = 0
    with tempfile.TemporaryDirectory(prefix="pg-kill-") as logs:
        with PostgresRuntime.connect(dsn) as starter:
            starter.register_workflow(job)
            start_runs(starter, 0, initial_runs)
            total = initial_runs
            fleet = Fleet(dsn, lease, Path(logs))
            try:
                for _ in range(kills):
                    start_runs(starter, total, runs_per_round)
                    total += runs_per_round
                    fleet.check_alive()
                    slot = pick_victim(dsn, fleet, rng)
                    dead = fleet.kill(slot)
                    killed_at = time.monotonic()
                    latencies = watch_reclaims(dsn, dead, killed_at, lease)
                    holder_kills += bool(latencies)
                    reclaims += latencies
                    histories.check(dsn)
                    time.sleep(
                        rng.uniform(0, lease / 2)
                    )  # vary where the next kill lands
                deadline = time.monotonic() + drain_timeout
                while completed(dsn) < total and time.monotonic() < deadline:
                    fleet.check_alive()
                    time.sleep(0.1)
            finally:
                fleet.stop()
        figures = audit(dsn, histories)
        problems = fleet.log_problems()
    slow = sum(1 for s in reclaims if s > 2 * lease)
    return {
        **figures,
        "kills": kills,
        "kills_of_lease_holders": holder_kills,
        "lease_s": lease,
        "reclaimed_tasks": len(reclaims),
        "reclaim_p50_s": round(statistics.median(reclaims), 2) if reclaims else None,
        "reclaim_max_s": round(max(reclaims), 2) if reclaims else None,
        "slow_reclaims": slow,
        "history_reads": histories.reads,
        "worker_exits_unexpected": fleet.unexpected_exits,
        "worker_log_errors": len(problems),
        "worker_log_sample": problems[:5],
        "seconds": round(time.monotonic() - began, 1),
    }


def passed(figures: dict[str, Any]) -> bool:
    """Whether the campaign met every target of issue 14."""
    return (
        figures["stuck"] == 0
        and figures["changed"] == 0
        and figures["completed_twice"] == 0
        and figures["slow_reclaims"] == 0
        and figures["worker_exits_unexpected"] == 0
        and figures["worker_log_errors"] == 0
    )


def record(figures: dict[str, Any], command: str) -> None:
    """Write the campaign's section into bench/RESULTS.md (replacing the previous one)."""
    path = HERE / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    head, marker, rest = text.partition(SECTION)
    tail = ""
    if marker:
        after = rest.find("\n## ")
        tail = rest[after:] if after >= 0 else ""
    load = os.getloadavg()[0]
    f = figures
    section = "\n".join(
        [
            SECTION,
            "",
            f"`{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
            f"(load average {load:.1f} on {os.cpu_count()} cores at the end): three "
            f"PostgresRuntime worker processes on a throwaway server, lease {f['lease_s']:g} s; "
            "each round starts 4 runs of 3 activities (~50 ms bodies), SIGKILLs one worker "
            "(one holding a lease when any does) and starts a new one under a new id, so the "
            "dead worker's tasks return only through lease expiry; every committed event is "
            "re-read after every round. Target: 0 stuck, 0 changed, 0 completed twice, every "
            "reclaim within 2x the lease.",
            "",
            "| kills | kills of a lease holder | runs | stuck | changed events | completed twice | "
            "lost attempts retaken | reclaim p50 / max | reclaims > 2x lease | "
            "worker errors | wall time |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            f"| {f['kills']} | {f['kills_of_lease_holders']} | {f['runs']} | {f['stuck']} | "
            f"{f['changed']} | {f['completed_twice']} | {f['lost_attempts']} | "
            f"{f['reclaim_p50_s']} s / {f['reclaim_max_s']} s | {f['slow_reclaims']} | "
            f"{f['worker_exits_unexpected'] + f['worker_log_errors']} | {f['seconds']} s |",
            "",
        ]
    )
    path.write_text(head.rstrip() + "\n\n" + section + tail)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker_main(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kills", type=int, default=60)
    parser.add_argument("--lease", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    from tests.pg_server import PostgresServer, postgres_bin  # noqa: PLC0415

    bindir = postgres_bin()
    if bindir is None:
        sys.exit("PostgreSQL is not installed: make system-deps")
    server = PostgresServer(bindir)
    try:
        figures = campaign(
            server.create_database(), kills=args.kills, lease=args.lease, seed=args.seed
        )
    finally:
        server.stop()
    print(json.dumps(figures, indent=2))
    if args.record:
        command = (
            f".venv/bin/python -m bench.pg_kill_campaign --kills {args.kills} "
            f"--lease {args.lease:g} --seed {args.seed} --record"
        )
        record(figures, command)
    sys.exit(0 if passed(figures) else 1)


if __name__ == "__main__":
    main()
