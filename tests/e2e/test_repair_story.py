"""The repair story end to end, with real worker processes and the `harvest` command.

An order's activity fails with a bug (KeyError); the worker's log and
`harvest show` name the file and the line; the user fixes the code,
restarts the worker, and `harvest reset FILE EXEC_ID` finishes the order
without charging the card twice (the charges are counted by the body).
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from click.testing import CliRunner, Result
from conftest import WORKERS

from harvest_engine.cli import main

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from conftest import Workers

BUG_LINE = next(
    n
    for n, text in enumerate((WORKERS / "shop_worker.py").read_text().splitlines(), 1)
    if "# BUG" in text
)


def harvest(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def shop(
    workers: Workers, db: Path, charges: Path, *extra: str
) -> subprocess.Popen[str]:
    proc = workers.spawn("shop_worker", db, charges, *extra)
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    assert first == "serving", proc.stderr.read() if proc.stderr else first
    return proc


def stop(workers: Workers, proc: subprocess.Popen[str]) -> str:
    """SIGTERM the worker; its stderr (the log)."""
    proc.send_signal(signal.SIGTERM)
    done = workers.finish(proc)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_bug_is_fixed_and_the_order_finishes_by_reset_without_a_second_charge(
    workers: Workers, tmp_path: Path
) -> None:
    db, charges = tmp_path / "shop.db", tmp_path / "charges.txt"
    worker = shop(workers, db, charges)
    started = harvest("start", db, "process_order", '{"id": "K1"}', "--id", "K1")
    assert started.exit_code == 0, started.output
    exec_id = started.output.strip()

    failed = harvest("result", db, exec_id, "--timeout", "30s")
    assert failed.exit_code != 0
    assert "FAILED" in failed.output
    assert "'amount'" in failed.output
    shown = harvest("show", db, exec_id)
    assert "shop_worker.py" in shown.output
    assert f"line {BUG_LINE}" in shown.output
    assert "KeyError" in shown.output
    log = stop(workers, worker)
    assert "shop_worker.py" in log
    assert f"line {BUG_LINE}" in log
    assert "ship_order" in log

    # The fix, and the worker restarted with it.
    worker = shop(workers, db, charges, "--fixed")
    reset = harvest(
        "reset", db, exec_id, "--reason", "fixed the KeyError in ship_order"
    )
    assert reset.exit_code == 0, reset.output
    new_id = reset.output.split()[-1]
    done = harvest("result", db, new_id, "--timeout", "30s", "--json")
    assert done.exit_code == 0, done.output
    assert "shipped K1" in done.output
    stop(workers, worker)

    assert charges.read_text().splitlines() == ["K1"]  # the card was charged once
    old = harvest("show", db, exec_id, "--json")
    assert new_id in old.output  # reset_to
