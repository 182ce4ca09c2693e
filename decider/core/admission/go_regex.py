"""Moved to decider.core.go_regex: the core's failure policy matches with it too, and the core
must not depend on admission's internals. Kept as an alias so existing imports keep working."""

from __future__ import annotations

from decider.core.go_regex import compile_go_regex, pattern_error, re2_incompatibility

__all__ = ["compile_go_regex", "pattern_error", "re2_incompatibility"]
