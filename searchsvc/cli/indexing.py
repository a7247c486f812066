"""`searchsvc index`, `stats` and `export`."""

COMMANDS: list = []
