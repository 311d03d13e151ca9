"""Running workflow code deterministically: the loop, the context, commands and replay."""
