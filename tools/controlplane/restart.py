"""One component of a running control plane stopped, killed, paused or started again, as a
kubelet would restart a container or an operator would restart a static pod: the same command,
environment and ports as the first start (state.json keeps them), the log appended to.

What `down` stops is still exactly what state.json lists: a component started again replaces
its record there.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tools.controlplane.processes import (
    State,
    alive,
    group_members,
    listening,
    stop_records,
    wait_for,
)

Record = dict[str, Any]


def stop(state: State, name: str, grace: float = 30.0) -> Record:
    """SIGTERM (SIGKILL after `grace`), wait until it and its ports are gone; its record, to
    start it again with."""
    record = state.find(name)
    stop_records([record], grace)
    _forget(state, record)
    return record


def kill(state: State, name: str) -> Record:
    """SIGKILL its whole group at once: no shutdown handler runs (a crash, an OOM kill)."""
    record = state.find(name)
    if alive(record) or group_members(record["pid"]):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record["pid"], signal.SIGKILL)
    stop_records([record], grace=0.0)
    _forget(state, record)
    return record


def pause(state: State, name: str) -> Record:
    """SIGSTOP its group: the kernel still accepts its connections, nothing answers them (a
    decider stuck or starved)."""
    record = state.find(name)
    os.killpg(record["pid"], signal.SIGSTOP)
    return record


def resume(state: State, name: str) -> Record:
    record = state.find(name)
    os.killpg(record["pid"], signal.SIGCONT)
    return record


def start_again(state: State, record: Record, ready: Callable[[], Any] | None = None,
                argv: Sequence[str] | None = None, ports: Sequence[int] = (),
                timeout: float = 180.0) -> Record:
    """Start a stopped component as it was (or with `argv`, listening on `ports` more), once
    its ports are free; wait for `ready()` when given. The new record."""
    wait_for(f"{record['name']}'s ports free", lambda: not any(
        listening(p) for p in record["ports"]), 60)
    cwd = record.get("cwd")
    new = state.start(record["name"], argv if argv is not None else record["argv"],
                      ports=[*record["ports"], *ports], env=record.get("env"),
                      cwd=Path(cwd) if cwd else None)
    if ready is not None:
        wait_for(f"{record['name']} ready again", ready, timeout, Path(new["log"]), new)
    return new


def restart(state: State, name: str, ready: Callable[[], Any] | None = None,
            argv: Sequence[str] | None = None, ports: Sequence[int] = (),
            grace: float = 30.0) -> Record:
    return start_again(state, stop(state, name, grace), ready, argv, ports)


def _forget(state: State, record: Record) -> None:
    state.processes.remove(record)
    state.save()
