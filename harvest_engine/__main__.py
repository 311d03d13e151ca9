"""`python -m harvest_engine`: the `harvest` command line."""

from __future__ import annotations

from harvest_engine.cli import main

if __name__ == "__main__":
    main(prog_name="harvest")
