"""Processes the tool starts and stops, recorded in <dir>/state.json so that `down` (another
process, maybe) stops exactly them: each runs in a session of its own, is known by its pid and
its start time (a pid reused by someone else's process is left alone), and is stopped by its
process group, so a child it started goes with it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

STATE = "state.json"


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now: all held open at once so that they differ; the kernel
    hands out ephemeral ports in turn, so another run picking at the same moment gets others."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        try:
            s.connect((host, port))
        except OSError:
            return False
        return True


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot): a pid plus this names a process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[19]


def alive(record: Mapping[str, Any]) -> bool:
    """Running (a zombie is not: it is reaped here when it is this process's child)."""
    pid = record["pid"]
    if start_time(pid) != record["start"]:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat[stat.rindex(")") + 2] == "Z":
        _reap(pid)
        return False
    return True


def group_members(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


class State:
    """<dir>/state.json: what is running, on which ports, with which credentials."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / STATE
        self.data: dict[str, Any] = (json.loads(self.path.read_text()) if self.path.is_file()
                                     else {"processes": []})

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1) + "\n")
        tmp.rename(self.path)

    @property
    def processes(self) -> list[dict[str, Any]]:
        return self.data["processes"]

    def start(self, name: str, argv: Sequence[str], ports: Iterable[int] = (),
              env: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict[str, Any]:
        log_dir = self.dir / "logs"
        log_dir.mkdir(exist_ok=True)
        log = log_dir / f"{name}.log"
        # What a process writes to a temporary directory stays in the run's directory.
        tmp = self.dir / "tmp"
        tmp.mkdir(exist_ok=True)
        full_env = dict(os.environ) if env is None else dict(env)
        full_env.setdefault("TMPDIR", str(tmp))
        with open(log, "ab") as out:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    env=full_env, cwd=cwd)
        # env and cwd too, so that one process can be started again as it was (restart.py).
        record = {"name": name, "pid": proc.pid, "start": start_time(proc.pid),
                  "ports": list(ports), "log": str(log), "argv": list(argv),
                  "env": dict(env) if env is not None else None,
                  "cwd": str(cwd) if cwd is not None else None}
        # Popen's object would reap it; `down` may run in another process, so forget it here
        # and let the session leader be reaped by init once this process exits.
        proc.returncode = 0
        self.processes.append(record)
        self.save()
        return record

    def find(self, name: str) -> dict[str, Any]:
        for record in self.processes:
            if record["name"] == name:
                return record
        raise KeyError(name)

    def stop(self, name: str, grace: float = 10.0) -> None:
        """Stop one process (its group) and forget it."""
        record = self.find(name)
        stop_records([record], grace)
        self.processes.remove(record)
        self.save()

    def kill(self, name: str) -> None:
        """SIGKILL one process (its group), as a crash or an OOM kill would end it; it stays
        recorded, so `restart` brings it back as it was."""
        record = self.find(name)
        _signal_group(record, signal.SIGKILL)
        stop_records([record], 5)

    def restart(self, name: str, grace: float = 10.0) -> dict[str, Any]:
        """Stop one process (unless it is already gone) and start it again as it was: same
        command, environment and ports, its log continued. The new record."""
        record = self.find(name)
        if alive(record) or group_members(record["pid"]):
            stop_records([record], grace)
        index = self.processes.index(record)
        self.processes.remove(record)
        new = self.start(name, record["argv"], record["ports"], record.get("env"),
                         Path(record["cwd"]) if record.get("cwd") else None)
        # Keep the start order: `stop_all` stops newest first.
        self.processes.remove(new)
        self.processes.insert(index, new)
        self.save()
        return new

    def stop_all(self, grace: float = 10.0) -> list[str]:
        """Stop everything, newest first; what is left behind (empty when all went)."""
        records = list(reversed(self.processes))
        # One at a time, newest first: an API server whose etcd went at the same moment waits
        # out its whole grace period instead of the second it takes otherwise.
        for record in records:
            stop_records([record], grace)
        leftovers = leftovers_of(records)
        self.data["processes"] = []
        self.save()
        return leftovers


def _reap(pid: int) -> None:
    # A child of this very process (started by `up` run in-process) is reaped here; otherwise
    # it is init's child and waitpid says ECHILD.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _signal_group(record: Mapping[str, Any], sig: int) -> None:
    pid = record["pid"]
    if alive(record):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
    elif group_members(pid):
        # The leader went; what it started may still run in its group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)


def stop_records(records: Sequence[Mapping[str, Any]], grace: float) -> None:
    for record in records:
        _signal_group(record, signal.SIGTERM)
    _await_gone(records, grace)
    for record in records:
        if alive(record) or group_members(record["pid"]):
            _signal_group(record, signal.SIGKILL)
    _await_gone(records, 5)


def _await_gone(records: Sequence[Mapping[str, Any]], seconds: float) -> None:
    """Reap and wait until no process of the records' groups is left, at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for record in records:
            _reap(record["pid"])
        if not any(alive(r) or group_members(r["pid"]) for r in records):
            return
        time.sleep(0.1)


def leftovers_of(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every process still running and every port still listening, one line each."""
    found = []
    for record in records:
        if alive(record):
            found.append(f"process {record['name']} (pid {record['pid']}) still runs")
        for pid in group_members(record["pid"]):
            if pid != record["pid"]:
                found.append(f"process {pid} of {record['name']}'s group still runs")
        for port in record["ports"]:
            if listening(port):
                found.append(f"port {port} of {record['name']} still accepts connections")
    return found


def wait_for(what: str, check: Any, timeout: float, log: Path | None = None,
             record: Mapping[str, Any] | None = None) -> Any:
    """Poll check() until it returns something truthy; a process that exits first, or the
    timeout, is an error that names what was awaited and ends with the log's last lines."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except Exception as exc:  # noqa: BLE001 - not ready yet, whatever the reason
            last = exc
        else:
            if result:
                return result
            last = result
        if record is not None and not alive(record):
            _reap(record["pid"])
            raise RuntimeError(f"{record['name']} exited while waiting for {what}"
                               + tail(log))
        time.sleep(0.2)
    raise TimeoutError(f"{what}: not after {timeout:.0f} s (last: {last!r})" + tail(log))


def tail(log: Path | None, lines: int = 25) -> str:
    if log is None or not log.is_file():
        return ""
    text = log.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- last lines of {log}:\n" + "\n".join(text)

