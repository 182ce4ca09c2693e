"""TLS material read from PEM files, and read again when the files change.

cert-manager renews a certificate at about 2/3 of its lifetime and the kubelet swaps the
mounted Secret's files in place (a symlink, `..data`, points at a new directory). A process
that read its files once keeps presenting, or trusting, the old certificate until it expires,
and then every handshake fails. So both ends of the decider's channel watch their files: read
at most every few seconds (a few small files), compared with what is in use, and switched to
only when what was read is a usable set (a certificate and the key that belongs to it, CAs
that parse): a rotation caught half-way keeps the old material until the rest arrives.

Shared by the decider server (decider/service/tls_files.py) and its clients (the shim), which must
not import the decider itself. The files are checked with OpenSSL through the standard
library's ssl module, so the client needs no cryptography package.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

log = logging.getLogger("decider_client.tls_files")

# How stale a process's view of its files may be; the files change every few weeks or days,
# so this only bounds how long after a renewal new connections still get the old material.
CHECK_SECONDS = 5.0


class TLSFileError(ValueError):
    """The files do not make a usable set; the message names the file and the problem."""


@dataclass(frozen=True)
class Material:
    cert: bytes | None = None
    key: bytes | None = None
    ca: bytes | None = None


@dataclass(frozen=True)
class TLSPaths:
    """Where the material is; an empty path is material not used (a client without a
    certificate of its own, a server that asks for none)."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""

    def paths(self) -> tuple[str, ...]:
        return tuple(p for p in (self.cert_file, self.key_file, self.ca_file) if p)

    def read(self) -> tuple[bytes | None, bytes | None, bytes | None]:
        """The files' bytes as they are now: certificate, key, CA (None: no such path)."""
        return _read(self.cert_file), _read(self.key_file), _read(self.ca_file)

    def load(self) -> Material:
        """Read and check every file; TLSFileError if they are not a usable set now."""
        return self.check(*self.read())

    def check(self, cert: bytes | None, key: bytes | None, ca: bytes | None) -> Material:
        if (cert is None) != (key is None):
            raise TLSFileError("a certificate and its key go together")
        if cert is not None and key is not None:
            _check_pair(cert, key, self.cert_file, self.key_file)
        if ca is not None:
            _certificates(ca, self.ca_file)
        return Material(cert=cert, key=key, ca=ca)


def _read(path: str) -> bytes | None:
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise TLSFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _certificates(data: bytes, path: str) -> None:
    """The bytes hold PEM certificates (OpenSSL reads them, through the ssl module)."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise TLSFileError(f"{path}: not PEM certificates: not ASCII text") from None
    if not text.strip():
        raise TLSFileError(f"{path}: no certificate in it")
    try:
        _lenient(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)).load_verify_locations(cadata=text)
    except (ssl.SSLError, ValueError) as exc:
        raise TLSFileError(f"{path}: not PEM certificates: {exc}") from None


def _check_pair(cert: bytes, key: bytes, cert_file: str, key_file: str) -> None:
    """The certificate parses and the key is the one that belongs to it: OpenSSL's own check
    (X509_check_private_key) as the ssl module loads a pair. It reads a pair only from files:
    the bytes go to anonymous in-memory files (memfd), never to disk, where the system has
    them; else to a private temporary directory, removed at once."""
    _certificates(cert, cert_file)

    def refuse_encrypted() -> bytes:
        # Called only for a key with a password; without this OpenSSL would prompt on the
        # terminal for one.
        raise TLSFileError(f"{key_file}: not a PEM private key without a password: it is "
                           "encrypted")

    context = _lenient(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    try:
        with _as_files(cert, key) as (cert_path, key_path):
            context.load_cert_chain(cert_path, key_path, password=refuse_encrypted)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise TLSFileError(f"{key_file} is not the key of the certificate in "
                               f"{cert_file}") from None
        raise TLSFileError(f"{key_file}: not a PEM private key without a password: "
                           f"{exc}") from None


def _lenient(context: ssl.SSLContext) -> ssl.SSLContext:
    """Security level 0: the question is whether the files parse and go together, not whether
    this system's OpenSSL policy likes a key's size (gRPC has its own TLS library and policy)."""
    with contextlib.suppress(ssl.SSLError):
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
    return context


@contextlib.contextmanager
def _as_files(*contents: bytes) -> Iterator[list[str]]:
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds = []
        try:
            for data in contents:
                fd = os.memfd_create("decider-tls", os.MFD_CLOEXEC)
                fds.append(fd)
                with open(fd, "wb", closefd=False) as fh:
                    fh.write(data)
            yield [f"/proc/self/fd/{fd}" for fd in fds]
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="decider-tls-") as directory:  # mode 0700
        paths = []
        for index, data in enumerate(contents):
            path = os.path.join(directory, str(index))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            paths.append(path)
        yield paths


class FileWatch:
    """Material from files, with `poll()` saying when the files hold a new usable set.

    Thread-safe; `poll()` never raises, and is cheap enough to call before every call or on
    every handshake: it reads the files at most every `check_seconds`. They are compared by
    content, not by modification time, which the kernel keeps in ticks of a few milliseconds:
    two writes within one tick looked alike.
    """

    def __init__(self, paths: TLSPaths, *, what: str = "TLS",
                 check_seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger | None = None) -> None:
        self.paths = paths
        self.what = what
        self.log = logger or log
        # None: the module's CHECK_SECONDS as it is now (tests shorten it).
        self.check_seconds = CHECK_SECONDS if check_seconds is None else check_seconds
        self._clock = clock
        self._seen = paths.read()
        self.material = paths.check(*self._seen)
        self._refused: object = None
        self._next_check = clock() + self.check_seconds
        self._lock = threading.Lock()

    def poll(self) -> Material | None:
        """The new material if the files changed into a usable set since the last switch,
        else None (unchanged, or changed into something that cannot be used yet)."""
        if self._clock() < self._next_check:
            return None
        # A check under way elsewhere will switch if there is anything to switch to.
        if not self._lock.acquire(blocking=False):
            return None
        try:
            self._next_check = self._clock() + self.check_seconds
            return self._check()
        except Exception:  # never into a handshake or a call: the old material still works
            self.log.exception("%s files %s: checking them failed", self.what,
                          ", ".join(self.paths.paths()))
            return None
        finally:
            self._lock.release()

    def _check(self) -> Material | None:
        try:
            seen = self.paths.read()
        except TLSFileError as exc:
            # A file missing for a moment (a rename under way): as refused as a bad one.
            self._refuse(str(exc), exc)
            return None
        if seen == self._seen or seen == self._refused:
            return None
        try:
            material = self.paths.check(*seen)
        except TLSFileError as exc:
            self._refuse(seen, exc)
            return None
        self._seen, self._refused = seen, None
        self.material = material
        self.log.info("%s certificates reloaded from %s", self.what, ", ".join(self.paths.paths()))
        return material

    def _refuse(self, seen: object, exc: TLSFileError) -> None:
        # Said once per change; the next change (the rest of the rotation) is tried anew.
        if seen != self._refused:
            self._refused = seen
            self.log.warning("%s files changed but cannot be used yet, keeping the ones loaded "
                        "before: %s", self.what, exc)
