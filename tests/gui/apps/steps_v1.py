"""--app module: the `steps` workflow as recorded."""

from tests.gui.history_app import register_v1 as register

__all__ = ["register"]
