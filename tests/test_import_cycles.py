"""No import circle inside the packages listed here, type-only imports included.

The graph is grimp's (import-linter's library) with `TYPE_CHECKING` imports
kept: a type-only import is still a coupling, and a circle of them means no
module in it says what it needs. A failure prints every circle (each strongly
connected component of more than one module) with the imports that close it.
It covers both whole packages: the store, the workflow core and the GUI
broke their circles in the same change as the runtime (issue 25).
"""

from __future__ import annotations

import grimp
import pytest

CHECKED = ["harvest_engine", "harvest_gui"]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # No cache: grimp's cache in the working folder can outlive a checkout
    # or a merge and answer with yesterday's imports.
    return grimp.build_graph(
        "harvest_engine",
        "harvest_gui",
        exclude_type_checking_imports=False,
        cache_dir=None,
    )


def circles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """The strongly connected components of more than one module inside `package` (Tarjan)."""
    modules = {package} | graph.find_descendants(package)
    edges = {
        m: sorted(graph.find_modules_directly_imported_by(m) & modules) for m in modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:
        nonlocal counter
        # Iterative Tarjan: (module, position in its edge list).
        work = [(root, 0)]
        while work:
            module, i = work.pop()
            if i == 0:
                index[module] = low[module] = counter
                counter += 1
                stack.append(module)
                on_stack.add(module)
            targets = edges[module]
            if i < len(targets):
                work.append((module, i + 1))
                target = targets[i]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def shown(graph: grimp.ImportGraph, component: list[str]) -> str:
    members = set(component)
    lines = [f"circle of {len(component)} modules:"]
    for module in component:
        for target in sorted(graph.find_modules_directly_imported_by(module) & members):
            lines.append(f"  {module} -> {target}")
    return "\n".join(lines)


def test_the_circle_finder_reports_a_circle() -> None:
    fake = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        fake.add_module(module)
    fake.add_import(importer="pkg.a", imported="pkg.b")
    fake.add_import(importer="pkg.b", imported="pkg.a")
    fake.add_import(importer="pkg.b", imported="pkg.c")
    assert circles(fake, "pkg") == [["pkg.a", "pkg.b"]]


@pytest.mark.parametrize("package", CHECKED)
def test_no_import_circle_inside(graph: grimp.ImportGraph, package: str) -> None:
    found = circles(graph, package)
    assert not found, "\n".join(shown(graph, c) for c in found)
