"""Listening on every address, IPv6 as well as IPv4, as gRPC does.

gRPC reads the wildcard `0.0.0.0` as every address and listens dual-stack; Python's HTTP servers
take it literally, IPv4 only. On an IPv6-only cluster the kubelet's probes and Prometheus reach a
pod on its IPv6 address, so the health, metrics and webhook ports must answer there too. Where
the node has no IPv6 at all, IPv4 alone is what is left.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from typing import TypeVar

WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
# Errors that say "no IPv6 here", not "this port is taken".
_NO_IPV6 = frozenset({errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL, errno.EPROTONOSUPPORT})

T = TypeVar("T")


def is_wildcard(host: str) -> bool:
    return host.strip() in WILDCARDS


def bind_every_address(bind: Callable[[str], T], host: str) -> T:
    """`bind(host)` for a specific host; for a wildcard, `bind("::")` (dual-stack: IPv4 arrives
    mapped) and, on a node without IPv6, `bind("0.0.0.0")`."""
    if not is_wildcard(host):
        return bind(host)
    if socket.has_ipv6:
        try:
            return bind("::")
        except OSError as exc:
            if exc.errno not in _NO_IPV6:
                raise
    return bind("0.0.0.0")
