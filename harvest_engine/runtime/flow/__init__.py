"""Flow control: queues, workflow and activity limits, admission (issue 26)."""
