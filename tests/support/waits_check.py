"""Every test that waits on a process, a thread, a server or the clock is marked `waits`.

Those are the tests a busy machine can break (a bound it misses, a race it loses), so
bench/suite_under_load.py runs them again and again under contention (`-m waits`). The marker
is checked rather than remembered: while a test, or a fixture it uses, runs on the main thread,
starting a thread or a process, sleeping, waiting on a condition or a thread, or opening a socket,
a gRPC channel or a gRPC server is noted, and a test that did any of these without the marker
fails, naming the first one. Calls on other threads are not counted (a server left running by an
earlier fixture waits all the time, and a test that uses that fixture is charged through it),
nor calls from finalizers and garbage collection (what an earlier test left behind).

DECIDER_WAITS_REPORT=PATH writes, for every test run, what it waited on (or nothing) and
whether it is marked: the list to read when the marker seems to be on too many tests.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator
from typing import Any

import grpc
import grpc.aio
import pytest

MARKER = "waits"
_MAIN = threading.main_thread().ident


class _Tracker:
    def __init__(self) -> None:
        self.reason: str | None = None
        self.by_fixture: dict[int, str] = {}
        self.report: list[str] = []
        self.collecting = False

    def note(self, what: str) -> None:
        if self.reason is None and threading.get_ident() == _MAIN and not self.collecting \
                and not _finalizing():
            self.reason = what

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        self.collecting = phase == "start"


def _finalizing() -> bool:
    """Called from an object's finalizer: what an earlier test left behind (a Kubernetes
    ApiClient joins its thread pool when collected), not what this test does."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


TRACKER = _Tracker()


def _noting(what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        TRACKER.note(what)
        return fn(*args, **kwargs)

    return wrapper


def _async_noting(what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        TRACKER.note(what)
        return await fn(*args, **kwargs)

    return wrapper


_PATCHES: list[tuple[Any, str, str]] = [
    (threading.Thread, "start", "starts a thread"),
    (threading.Thread, "join", "joins a thread"),
    (threading.Condition, "wait", "waits on a condition (an Event, a Queue, a Future...)"),
    (subprocess.Popen, "__init__", "starts a process"),
    (time, "sleep", "sleeps"),
    (socket.socket, "connect", "connects a socket"),
    (socket.socket, "bind", "binds a socket"),
    (grpc, "insecure_channel", "opens a gRPC channel"),
    (grpc, "secure_channel", "opens a gRPC channel"),
    (grpc, "server", "starts a gRPC server"),
    (grpc.aio, "insecure_channel", "opens a gRPC channel"),
    (grpc.aio, "secure_channel", "opens a gRPC channel"),
    (grpc.aio, "server", "starts a gRPC server"),
]


def install() -> None:
    gc.callbacks.append(TRACKER.on_gc)
    for owner, name, what in _PATCHES:
        setattr(owner, name, _noting(what, getattr(owner, name)))
    for owner in (asyncio, asyncio.tasks):
        owner.sleep = _async_noting("sleeps", owner.sleep)  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    install()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any],
                         request: pytest.FixtureRequest) -> Generator[None, Any, Any]:
    outer, TRACKER.reason = TRACKER.reason, None
    try:
        return (yield)
    finally:
        if TRACKER.reason is not None:
            TRACKER.reason = TRACKER.by_fixture[id(fixturedef)] = (
                f"uses the fixture `{fixturedef.argname}`, which {TRACKER.reason}")
        TRACKER.reason = outer or TRACKER.reason


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    TRACKER.reason = None


def _what_it_waited_on(item: pytest.Item) -> str | None:
    if TRACKER.reason is not None:
        return TRACKER.reason
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        for fixturedef in defs:
            if id(fixturedef) in TRACKER.by_fixture:
                return TRACKER.by_fixture[id(fixturedef)]
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        result = yield
    finally:
        waited = _what_it_waited_on(item)
        marked = item.get_closest_marker(MARKER) is not None
        if os.environ.get("DECIDER_WAITS_REPORT"):
            TRACKER.report.append(f"{item.nodeid}\t{'marked' if marked else '-'}\t"
                                  f"{waited or '-'}")
    if waited is not None and not marked:
        raise pytest.fail.Exception(
            f"this test {waited} but is not marked `{MARKER}`: add "
            f"`pytestmark = pytest.mark.{MARKER}` to its module, or @pytest.mark.{MARKER} to it "
            "(tests/support/waits_check.py)", pytrace=False)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("DECIDER_WAITS_REPORT")
    if path:
        with open(path, "w") as out:
            out.write("\n".join(TRACKER.report) + "\n")
