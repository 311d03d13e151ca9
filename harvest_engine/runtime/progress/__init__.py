"""Progress out of a run, read in-process: its events and streams, waited on until they come."""
