"""Operator actions and reads: schedules, retention, listing, history transfer."""
