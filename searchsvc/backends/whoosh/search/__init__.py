"""Answering the read side of the contract on one snapshot of the index: search, suggestions,
author views and statistics."""
