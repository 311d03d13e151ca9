"""Hold a database open (and so its writer lock) until killed.

    lock_holder.py DB READY_MARKER

Writes READY_MARKER once the runtime is open, then waits to be killed
(bounded, so a holder whose test died does not linger).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from harvest_engine import SqliteRuntime

HOLD_LIMIT_SECONDS = 60.0


def main() -> None:
    """Open, announce, wait."""
    db, marker = Path(sys.argv[1]), Path(sys.argv[2])
    rt = SqliteRuntime.open(db)
    # Written under another name, then renamed: the test never sees it half-written.
    marker.with_suffix(".tmp").write_text("held")
    marker.with_suffix(".tmp").rename(marker)
    deadline = time.monotonic() + HOLD_LIMIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.05)
    rt.close()


if __name__ == "__main__":
    main()
