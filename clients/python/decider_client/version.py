"""The installed jobset-decider version (the client ships in the same distribution)."""

from __future__ import annotations

from importlib import metadata

try:
    VERSION = metadata.version("jobset-decider")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    VERSION = "0+unknown"
