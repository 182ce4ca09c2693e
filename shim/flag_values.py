"""Checked values for the shim's flags and their environment fallbacks.

argparse's `float` takes "nan" and "inf", `int` takes any sign, and a default computed from the
environment with `float(...)` fails with a traceback; a boolean read as "anything but true is
false" turns a mistyped SHIM_LEADER_ELECT=ture into a second active replica. Each value here is
refused with the flag (or variable) named instead, exit code 2 through argparse.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping

# strconv.ParseBool's spellings (what Kubernetes components accept), plus yes/no and on/off.
_TRUE = frozenset({"1", "t", "true", "yes", "y", "on"})
_FALSE = frozenset({"0", "f", "false", "no", "n", "off"})


def boolean(text: str) -> bool:
    """A boolean as Kubernetes flags spell it; ValueError naming the accepted spellings."""
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean (true or false)")


def env_boolean(parser: argparse.ArgumentParser, env: Mapping[str, str], name: str,
                default: bool) -> bool:
    value = env.get(name, "")
    if value == "":
        return default
    try:
        return boolean(value)
    except ValueError as exc:
        parser.error(f"environment variable {name}: {exc}")


def number(kind: type[int] | type[float], *, at_least: float | None = None,
           above: float | None = None, at_most: float | None = None,
           env: str = "") -> Callable[[str], float]:
    """An argparse `type` for a finite int or float within bounds. Given as a string default
    (the environment's value), argparse converts it the same way, so `env` is named too."""
    where = f" (the flag or {env})" if env else ""
    noun = "an integer" if kind is int else "a number"

    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}{where} is not {noun}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r}{where} is not a finite number")
        if at_least is not None and value < at_least:
            raise argparse.ArgumentTypeError(f"must be at least {at_least:g}, got {text}{where}")
        if above is not None and value <= above:
            raise argparse.ArgumentTypeError(f"must be greater than {above:g}, got {text}{where}")
        if at_most is not None and value > at_most:
            raise argparse.ArgumentTypeError(f"must be at most {at_most:g}, got {text}{where}")
        return value

    return convert


def port(env: str = "") -> Callable[[str], float]:
    convert = number(int, at_least=0, env=env)

    def checked(text: str) -> float:
        value = convert(text)
        if value > 65535:
            raise argparse.ArgumentTypeError(f"{text} is not a port (0..65535)")
        return value

    return checked
