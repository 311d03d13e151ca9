"""A full disk (RLIMIT_FSIZE in a worker process): typed StorageError, memory rolled back, the same runtime finishes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Workers

pytestmark = pytest.mark.slow


def test_a_full_disk_mid_workload_is_a_storage_error_and_room_lets_the_same_runtime_finish(
    workers: Workers, tmp_path: Path
) -> None:
    report = workers.run_json("disk_full", "work", tmp_path / "w.db")
    assert report["other_errors"] == []
    assert report["storage_errors"], "the cap never met a write"
    assert all("I/O error" in e or "disk full" in e for e in report["storage_errors"])
    # No cached instance survived a failed commit; no task stays RUNNING once
    # a write succeeds again, and the same runtime finishes every run.
    assert report["cached_after_failure"] == 0
    assert report["running_tasks_after"] == 0
    assert report["states"] == ["COMPLETED"] * 6
    assert all("Completed(output=[600" in o for o in report["outputs"])


def test_opening_a_new_file_without_room_leaves_nothing_behind(
    workers: Workers, tmp_path: Path
) -> None:
    report = workers.run_json("disk_full", "open", tmp_path / "new.db")
    assert report == {"outcome": "StorageError", "left": []}
