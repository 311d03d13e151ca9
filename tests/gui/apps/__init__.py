"""--app modules for GUI tests."""
