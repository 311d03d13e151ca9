"""The workflow core's helpers reach the instance only through the Machine protocol.

The circle check over the whole tree is tests/test_import_cycles.py.
"""

from __future__ import annotations

import grimp

PACKAGE = "harvest_engine.workflow"


def test_the_context_reaches_the_instance_only_through_the_machine() -> None:
    graph = grimp.build_graph("harvest_engine", include_external_packages=False)
    for helper in (
        "context",
        "context_runs",
        "timers",
        "mutex",
        "deadlines",
        "signals",
    ):
        imported = graph.find_modules_directly_imported_by(f"{PACKAGE}.{helper}")
        assert f"{PACKAGE}.instance" not in imported, helper
        if helper != "context":
            assert f"{PACKAGE}.context" not in imported, helper
