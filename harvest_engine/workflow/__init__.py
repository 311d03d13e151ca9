"""Running workflow code deterministically: the loop, the context, the commands, replay."""
