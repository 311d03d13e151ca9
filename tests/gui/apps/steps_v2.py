"""--app module: the `steps` workflow after a code change."""

from tests.gui.history_app import register_v2 as register

__all__ = ["register"]
