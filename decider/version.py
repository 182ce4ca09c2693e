"""The decider's version, as installed (pyproject.toml), for answers, logs and `--version`."""

from __future__ import annotations

from decider_api.version import VERSION

__all__ = ["VERSION"]
