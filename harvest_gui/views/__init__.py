"""The inspector's widgets: main window, run list, run detail tabs, schedules, status bar."""
