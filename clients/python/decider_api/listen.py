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


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port, not yet listening: for a wildcard, every address
    (bind_every_address); a name or a bracketed IPv6 address is resolved as a server's."""
    if is_wildcard(host):
        return bind_every_address(lambda addr: _bound(addr, port), host)
    return _bound(host.strip().strip("[]"), port)


def _bound(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and host == "::":
            # Dual-stack whatever the node's net.ipv6.bindv6only says.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


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
