"""A client channel whose TLS follows its files.

Python's gRPC has no channel credentials that re-read files (only C++, Java and Go have a
file-watching certificate provider), and a channel's credentials are fixed when it is made.
So the channel is made again: before a call, at most every few seconds, the files are looked
at (decider_api/tls_files.py); when they hold a new usable set, a new channel replaces
the old one for the calls that follow, and the old one is closed once the calls it carries
have returned (closing it at once would cancel them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import grpc

from decider_api.tls_files import FileWatch, Material, TLSPaths

Stub = TypeVar("Stub")


def channel_credentials(material: Material) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(root_certificates=material.ca,
                                        private_key=material.key,
                                        certificate_chain=material.cert)


class _Generation(Generic[Stub]):
    __slots__ = ("calls", "channel", "retired", "stub")

    def __init__(self, channel: grpc.Channel, stub: Stub) -> None:
        self.channel = channel
        self.stub = stub
        self.calls = 0
        self.retired = False


class Channels(Generic[Stub]):
    """One channel at a time to `target`, and the stub over it.

    `tls`: files to follow (a new channel when they change; no file at all: the system's
    CAs); `credentials`: fixed TLS; neither: plaintext.
    """

    def __init__(self, target: str, make_stub: Callable[[grpc.Channel], Stub], *,
                 options: Sequence[tuple[str, Any]] = (),
                 credentials: grpc.ChannelCredentials | None = None,
                 tls: TLSPaths | None = None, check_seconds: float | None = None,
                 what: str = "decider client TLS") -> None:
        if tls is not None and credentials is not None:
            raise ValueError("pass credentials or TLS files, not both")
        self.target = target
        self.options = list(options)
        self._make_stub = make_stub
        self._watch: FileWatch | None = None
        if tls is not None and tls.paths():
            self._watch = FileWatch(tls, what=what, check_seconds=check_seconds)
            credentials = channel_credentials(self._watch.material)
        elif tls is not None:
            credentials = grpc.ssl_channel_credentials()  # the system's CAs: nothing to follow
        self._credentials = credentials
        self._lock = threading.Lock()
        self._current = self._open()
        self._closed = False

    def _open(self) -> _Generation[Stub]:
        channel = (grpc.secure_channel(self.target, self._credentials, self.options)
                   if self._credentials is not None
                   else grpc.insecure_channel(self.target, self.options))
        return _Generation(channel, self._make_stub(channel))

    @property
    def channel(self) -> grpc.Channel:
        return self._current.channel

    @contextmanager
    def stub(self) -> Iterator[Stub]:
        """The current stub, its channel kept open until the block is left."""
        self._renew_if_files_changed()
        with self._lock:
            generation = self._current
            generation.calls += 1
        try:
            yield generation.stub
        finally:
            with self._lock:
                generation.calls -= 1
                done = generation.retired and generation.calls == 0
            if done:
                generation.channel.close()

    def _renew_if_files_changed(self) -> None:
        if self._watch is None or self._closed:
            return
        material = self._watch.poll()
        if material is None:
            return
        # Made outside the lock: nothing is connected until the first call on it.
        credentials = channel_credentials(material)
        with self._lock:
            if self._closed:
                return
            self._credentials = credentials
            old, self._current = self._current, self._open()
            old.retired = True
            idle = old.calls == 0
        if idle:
            old.channel.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            current = self._current
        current.channel.close()
