"""The workflow core's import graph: no circle among its modules, type-only imports counted."""

from __future__ import annotations

import grimp

PACKAGE = "harvest_engine.workflow"


def _import_circles(graph: grimp.ImportGraph, prefix: str) -> list[list[str]]:
    """The strongly connected components (more than one module) among modules under `prefix`."""
    modules = sorted(m for m in graph.modules if m.startswith(prefix))
    inside = set(modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.find_modules_directly_imported_by(module)):
            if target not in inside:
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return circles


def test_the_workflow_core_has_no_import_circle() -> None:
    # grimp counts imports under TYPE_CHECKING too: a type-only circle is a
    # real coupling (the context naming the instance that makes it).
    graph = grimp.build_graph("harvest_engine", include_external_packages=False)
    assert _import_circles(graph, PACKAGE) == []


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
