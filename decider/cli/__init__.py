"""The `decider` command line: one module per command (decide, simulate, validate, gang and
podsets, serve, replay), the parser in main.py, what commands share in common.py and calls.py."""
