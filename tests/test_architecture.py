"""The layout rules of DESIGN.md "Layout, third wave", checked on the source.

No class declares state it never sets (a mixin split), no file is past the size
of one job.

Import circles are tests/test_import_cycles.py's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harvest_engine", "harvest_gui")
# The facade is the API table: one line per public call (DESIGN "Layout, third wave").
LONG_FILES_ALLOWED = {"harvest_engine/runtime/runtime.py"}
MAX_LINES = 400
ERRORS = ROOT / "harvest_engine" / "errors"


def _declared_but_never_set(cls: ast.ClassDef) -> list[str]:
    """Bare annotations (`x: T`) in a plain class that no `self.x = ...` in it assigns."""
    bases = " ".join(ast.unparse(b) for b in cls.bases)
    decorators = " ".join(ast.unparse(d) for d in cls.decorator_list)
    if any(word in bases for word in ("Protocol", "NamedTuple", "TypedDict", "Enum")):
        return []
    if "dataclass" in decorators:
        return []
    declared = [
        s.target.id
        for s in cls.body
        if isinstance(s, ast.AnnAssign)
        and s.value is None
        and isinstance(s.target, ast.Name)
        and not ast.unparse(s.annotation).startswith("ClassVar")
    ]
    assigned = {
        t.attr
        for node in ast.walk(cls)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for t in ast.walk(target)
        if isinstance(t, ast.Attribute)
        and isinstance(t.value, ast.Name)
        and t.value.id == "self"
    }
    return [name for name in declared if name not in assigned]


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_no_class_declares_state_it_never_sets() -> None:
    offenders = []
    for path in _sources():
        if path.is_relative_to(ERRORS):
            continue  # HarvestError.__init__ sets the fields each error declares, from keywords
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (
                missing := _declared_but_never_set(node)
            ):
                offenders.append(
                    f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {missing}"
                )
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_source_file_past_the_size_of_one_job(package: str) -> None:
    long_files = [
        f"{rel} ({n} lines)"
        for path in sorted((ROOT / package).rglob("*.py"))
        if (rel := path.relative_to(ROOT).as_posix()) not in LONG_FILES_ALLOWED
        and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert not long_files, long_files
