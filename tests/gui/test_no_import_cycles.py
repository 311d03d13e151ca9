"""No import circle among the GUI's modules, type-only imports included (issue 25)."""

from __future__ import annotations

import grimp


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each set of modules that import one another round a circle, one list per circle."""
    circles: set[frozenset[str]] = set()
    for module in graph.modules:
        # What `module` reaches and what reaches `module`: their overlap closes a circle.
        reaches = graph.find_upstream_modules(module)
        both = reaches & graph.find_downstream_modules(module)
        if both:
            circles.add(frozenset(both | {module}))
    return sorted(sorted(circle) for circle in circles)


def _path(graph: grimp.ImportGraph, circle: list[str]) -> str:
    """One way round `circle`, as `a -> b -> ... -> a`, for the failure message."""
    first = circle[0]
    for imported in sorted(graph.find_modules_directly_imported_by(first)):
        if imported in circle:
            back = graph.find_shortest_chain(importer=imported, imported=first)
            if back is not None:
                return " -> ".join((first, *back))
    return ", ".join(circle)


def test_no_gui_module_imports_itself_round_a_circle() -> None:
    # TYPE_CHECKING imports count: a circle of annotations is still two modules
    # that cannot be read, moved or tested one without the other.
    graph = grimp.build_graph("harvest_gui", cache_dir=None)
    circles = _circles(graph)
    assert not circles, "import circles in harvest_gui:\n" + "\n".join(
        _path(graph, circle) for circle in circles
    )


def test_no_gui_package_imports_a_sibling_that_imports_it_back() -> None:
    # One level up: `harvest_gui.session_base` using `harvest_gui.models` while the
    # models use the sessions is a circle of layers even when no two modules
    # import each other. Each entry names imports that would have to go.
    graph = grimp.build_graph("harvest_gui", cache_dir=None)
    packages = sorted(m for m in graph.modules if graph.find_children(m))
    breakers = {p: graph.nominate_cycle_breakers(p) for p in packages}
    circles = {p: sorted(found) for p, found in breakers.items() if found}
    assert not circles, f"sibling circles in harvest_gui (imports to remove): {circles}"
