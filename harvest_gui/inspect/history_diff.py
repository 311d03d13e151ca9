"""Two runs' histories aligned side by side, with the first difference found (pure, no Qt)."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import HistoryEvent

if TYPE_CHECKING:
    from collections.abc import Sequence


# Attributes that differ between any two runs by construction (ids, wall-clock
# instants): comparing them would mark every pair of runs as different.
RUN_SPECIFIC_KEYS = frozenset(
    {
        "exec_id",
        "workflow_id",
        "fire_at",
        "predecessor",
        "parent_exec_id",
        "child_exec_id",
        "target",
    }
)

SAME = "same"
CHANGED = "changed"
LEFT_ONLY = "left-only"
RIGHT_ONLY = "right-only"


@dataclass(frozen=True)
class DiffRow:
    """One line of the side-by-side view.

    Attributes:
        left: the left run's event, or None where only the right has one.
        right: the right run's event, or None where only the left has one.
        kind: ``same``, ``changed``, ``left-only`` or ``right-only``.
        keys: for ``changed`` rows, the attribute names that differ (or ``type``).

    """

    left: HistoryEvent | None
    right: HistoryEvent | None
    kind: str
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class HistoryDiff:
    """The aligned histories and where they first part."""

    rows: list[DiffRow]
    first_difference: int | None

    @property
    def identical(self) -> bool:
        """Whether every row is the same."""
        return self.first_difference is None

    def summary(self) -> str:
        """One sentence for the view's header."""
        if self.first_difference is None:
            return (
                f"The histories match: {len(self.rows)} events, the same in both runs."
            )
        row = self.rows[self.first_difference]
        counts = {
            k: sum(1 for r in self.rows if r.kind == k)
            for k in (CHANGED, LEFT_ONLY, RIGHT_ONLY)
        }
        where = (
            row.left.seq
            if row.left is not None
            else row.right.seq
            if row.right
            else "?"
        )
        what = {
            CHANGED: f"{row.left.type if row.left else ''} differs in {', '.join(row.keys)}",
            LEFT_ONLY: f"only the left run has {row.left.type if row.left else ''}",
            RIGHT_ONLY: f"only the right run has {row.right.type if row.right else ''}",
        }[row.kind]
        return (
            f"First difference at event {where}: {what}. "
            f"{counts[CHANGED]} changed, {counts[LEFT_ONLY]} only left, "
            f"{counts[RIGHT_ONLY]} only right."
        )


def comparable(event: HistoryEvent, strict: bool = False) -> dict[str, Any]:
    """The attributes compared for `event` (run-specific ones dropped unless `strict`)."""
    if strict:
        return dict(event.attrs)
    return {k: v for k, v in event.attrs.items() if k not in RUN_SPECIFIC_KEYS}


def _key(event: HistoryEvent, strict: bool) -> str:
    return (
        event.type
        + " "
        + json.dumps(comparable(event, strict), sort_keys=True, default=str)
    )


def _changed_keys(
    left: HistoryEvent, right: HistoryEvent, strict: bool
) -> tuple[str, ...]:
    if left.type != right.type:
        return ("type",)
    a, b = comparable(left, strict), comparable(right, strict)
    return tuple(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))


def diff_histories(
    left: Sequence[HistoryEvent], right: Sequence[HistoryEvent], *, strict: bool = False
) -> HistoryDiff:
    """Align two histories (difflib over type + compared attributes).

    Equal stretches pair up; a replaced stretch pairs its events one to one
    (``changed``) and leaves the rest to one side. Times are never compared.
    """
    a = [_key(e, strict) for e in left]
    b = [_key(e, strict) for e in right]
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows.extend(
                DiffRow(left[i], right[j], SAME)
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):
            le, ri = left[i1 + k], right[j1 + k]
            rows.append(DiffRow(le, ri, CHANGED, _changed_keys(le, ri, strict)))
        rows.extend(DiffRow(left[i], None, LEFT_ONLY) for i in range(i1 + pairs, i2))
        rows.extend(DiffRow(None, right[j], RIGHT_ONLY) for j in range(j1 + pairs, j2))
    first = next((i for i, r in enumerate(rows) if r.kind != SAME), None)
    return HistoryDiff(rows, first)
