"""Signal and handler names a run is likely to want, read from its workflow code and history."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import typing
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


_TYPED_SIGNAL_CALLS = {"receive_signal": 1, "receive_signal_timeout": 2}
"""Calls whose payload type is an argument: its position (it may also be ``type=``)."""


def signal_types_in_code(fn: Callable[..., Any] | None) -> dict[str, Any]:
    """The payload type each signal is read as, where the code says it.

    ``ctx.receive_signal("approve", Approval)`` gives ``{"approve": Approval}``;
    ``ctx.register_signal_handler("note", on_note)`` gives the annotation of
    ``on_note``'s first parameter when ``on_note`` is a module-level function.
    A type is looked up by name in the workflow's module only (nothing is
    evaluated), so an expression or a local class gives no type.
    """
    if fn is None:
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return {}
    scope = getattr(fn, "__globals__", {})
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            continue
        name, call = node.args[0].value, node.func.attr
        expr: ast.expr | None = None
        if call in _TYPED_SIGNAL_CALLS:
            at = _TYPED_SIGNAL_CALLS[call]
            expr = node.args[at] if len(node.args) > at else None
            for kw in node.keywords:
                if kw.arg == "type":
                    expr = kw.value
            hint = _resolve(expr, scope)
        elif call == "register_signal_handler" and len(node.args) > 1:
            hint = _first_param_type(_resolve(node.args[1], scope))
        else:
            continue
        if hint is not None and name not in found:
            found[name] = hint
    return found


def _resolve(expr: ast.expr | None, scope: dict[str, Any]) -> Any:
    """A dotted name looked up in `scope` (then builtins); None for anything else."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.insert(0, expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    value = scope.get(expr.id, getattr(builtins, expr.id, None))
    for part in parts:
        value = getattr(value, part, None)
    return value


def _first_param_type(handler: Any) -> Any:
    if not callable(handler):
        return None
    try:
        hints = typing.get_type_hints(handler)
        params = list(inspect.signature(handler).parameters)
    except (NameError, TypeError, ValueError):
        return None
    return hints.get(params[0]) if params else None
