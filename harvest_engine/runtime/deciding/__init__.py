"""One decision cycle: decide, record outcomes, cancel, children, retry, panics, mutex."""
