"""examples/agent_daemon.py: a served daemon answers a client, survives kill -9, answers what queued."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from conftest import Workers


def daemon(workers: Workers, db: Path) -> subprocess.Popen[str]:
    """Start `agent_daemon.py serve` and wait for its first line."""
    proc = workers.spawn_path(workers.examples / "agent_daemon.py", "serve", db)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("serving"), proc.stderr
    return proc


def send(workers: Workers, db: Path, text: str) -> str:
    """`agent_daemon.py send DB ann TEXT`; its output."""
    done = workers.finish(
        workers.spawn_path(
            workers.examples / "agent_daemon.py", "send", db, "ann", text
        )
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_agent_daemon_answers_survives_a_kill_and_answers_what_queued(
    workers: Workers, tmp_path: Path
) -> None:
    db = tmp_path / "agent.db"
    first = daemon(workers, db)
    assert send(workers, db, "hello there") == (
        "agent: turn 1: you said 2 word(s), last 'there'"
    )
    workers.sigkill(first)
    assert send(workers, db, "are you there") == (
        "queued: the daemon answers once it is up"
    )
    second = daemon(workers, db)
    assert send(workers, db, "/bye") == "closed after 2 turn(s)"
    second.send_signal(signal.SIGINT)
    done = workers.finish(second)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
