"""Fixtures for the shim end-to-end tests (defined in helpers, registered here)."""

from tests.shim.helpers import cluster, decider_server, shims

__all__ = ["cluster", "decider_server", "shims"]
