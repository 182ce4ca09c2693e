"""The decider's version, as installed (pyproject.toml), for answers, logs and `--version`."""

from __future__ import annotations

from importlib import metadata

try:
    VERSION = metadata.version("jobset-decider")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    VERSION = "0+unknown"
