"""Golden histories: recorded runs that today's code must keep replaying."""
