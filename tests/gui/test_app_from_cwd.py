"""`harvest-gui shop.db --app shopflows` finds a module in the current folder, as `python -m` does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What pip writes for the `harvest-gui` script: its own folder, not the current
# one, is first on sys.path, so a module beside the user is not found by itself.
SCRIPT = """\
import sys
from harvest_gui.__main__ import main
if __name__ == '__main__':
    sys.exit(main())
"""

# The app module proves it was imported by the real launch, then ends the
# process before a window would wait for a person.
APP = """\
import os
print("shopflows imported", flush=True)
os._exit(0)
"""


def test_the_installed_script_imports_an_app_module_from_the_current_folder(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "harvest-gui"
    script.write_text(SCRIPT)
    shop = tmp_path / "shop"
    shop.mkdir()
    (shop / "shopflows.py").write_text(APP)
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    try:
        done = subprocess.run(
            [sys.executable, str(script), "shop.db", "--app", "shopflows"],
            cwd=shop,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:  # the window opened with an import error
        raise AssertionError(f"shopflows was not imported: {exc.stderr!r}") from exc
    assert done.stdout == "shopflows imported\n", done.stderr
    assert done.returncode == 0
