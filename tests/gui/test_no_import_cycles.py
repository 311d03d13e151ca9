"""No GUI package imports a sibling that imports it back (issue 25).

The module-level circle check over the whole tree is tests/test_import_cycles.py.
"""

from __future__ import annotations

import grimp


def test_no_gui_package_imports_a_sibling_that_imports_it_back() -> None:
    # One level up: `harvest_gui.session_base` using `harvest_gui.models` while the
    # models use the sessions is a circle of layers even when no two modules
    # import each other. Each entry names imports that would have to go.
    graph = grimp.build_graph("harvest_gui", cache_dir=None)
    packages = sorted(m for m in graph.modules if graph.find_children(m))
    breakers = {p: graph.nominate_cycle_breakers(p) for p in packages}
    circles = {p: sorted(found) for p, found in breakers.items() if found}
    assert not circles, f"sibling circles in harvest_gui (imports to remove): {circles}"
