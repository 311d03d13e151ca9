"""pydantic v2 models as payloads: dumped to JSON going in, validated from the type hint coming out.

pydantic is an optional extra (`harvest[pydantic]`) and nothing here imports
it: a model instance or class exists only once the user's code imported
pydantic, so the checks look for it in `sys.modules`. Histories stay plain
JSON (a model is stored as its `model_dump(mode="json")`), so a file written
with models reads anywhere, with or without pydantic.
"""

from __future__ import annotations

import sys
from typing import Any

from harvest_engine.errors import PayloadInvalid


def _base_model() -> type | None:
    """The BaseModel class of pydantic when pydantic is loaded, else None."""
    module = sys.modules.get("pydantic")
    base = getattr(module, "BaseModel", None) if module is not None else None
    return base if isinstance(base, type) else None


def is_model(value: Any) -> bool:
    """Whether `value` is a pydantic model instance."""
    base = _base_model()
    return base is not None and isinstance(value, base)


def is_model_class(hint: Any) -> bool:
    """Whether a type hint is a pydantic model class."""
    base = _base_model()
    return base is not None and isinstance(hint, type) and issubclass(hint, base)


def dump(model: Any) -> Any:
    """The model's JSON value (what is stored)."""
    return model.model_dump(mode="json")


def validate(value: Any, hint: type, what: str) -> Any:
    """The model `hint` built from the JSON `value`.

    Raises:
        PayloadInvalid: naming `what`, the model and the first failing field.
    """
    if isinstance(value, hint):
        return value
    errors = sys.modules["pydantic"].ValidationError
    try:
        return hint.model_validate(value)  # type: ignore[attr-defined]
    except errors as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "(root)"
        raise PayloadInvalid(
            what=what, model=hint.__name__, field=field, reason=str(first.get("msg"))
        ) from None


def check_input(value: Any, hint: Any, what: str) -> None:
    """Refuse a value coming in whose hint is a model it does not validate as (others pass)."""
    if value is not None and is_model_class(hint):
        validate(value, hint, what)
