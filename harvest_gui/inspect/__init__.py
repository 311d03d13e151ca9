"""The inspector's Qt-free logic: timelines, history as of an event, diffs, filters, reports."""
