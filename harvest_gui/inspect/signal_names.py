"""Signal and handler names a run is likely to want, read from its workflow code and history."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvest_engine import HistoryEvent

_SIGNAL_CALLS = frozenset(
    {
        "wait_for_signal",
        "receive_signal",
        "drain_signals",
        "try_receive_signal",
        "wait_for_signal_timeout",
        "receive_signal_timeout",
        "register_signal_handler",
    }
)
_QUERY_CALLS = frozenset({"register_query"})
_UPDATE_CALLS = frozenset({"register_update_handler"})


def _literal_first_args(fn: Callable[..., Any], calls: frozenset[str]) -> list[str]:
    """String literals passed first to ``ctx.<call>(...)`` in `fn`'s source, in order."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return []
    names: list[str] = []
    calls_in_order = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for node in calls_in_order:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in calls
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and node.args[0].value not in names
        ):
            names.append(node.args[0].value)
    return names


def signals_in_code(fn: Callable[..., Any] | None) -> list[str]:
    """Signal names the workflow function waits on or handles (literal names only)."""
    return [] if fn is None else _literal_first_args(fn, _SIGNAL_CALLS)


def queries_in_code(fn: Callable[..., Any] | None) -> list[str]:
    """Query names the workflow body registers."""
    return [] if fn is None else _literal_first_args(fn, _QUERY_CALLS)


def updates_in_code(fn: Callable[..., Any] | None) -> list[str]:
    """Update names the workflow body registers."""
    return [] if fn is None else _literal_first_args(fn, _UPDATE_CALLS)


def suggest_signals(
    fn: Callable[..., Any] | None,
    history: Sequence[HistoryEvent],
    staged: Sequence[str] = (),
) -> list[str]:
    """Names for the signal form: the code's first, then staged and received ones."""
    out: list[str] = []
    received = [str(e.attrs.get("name")) for e in history if e.type == "SignalReceived"]
    for name in [*signals_in_code(fn), *staged, *received]:
        if name and name not in out:
            out.append(name)
    return out
