"""`searchsvc search`."""

COMMANDS: list = []
