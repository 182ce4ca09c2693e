"""The front process's memory under large requests it only passes on (issue 20, item 4).

Starts `decider serve`, warms it with small Decides, then sends N concurrent requests of SIZE MiB
(PodSets with that much object JSON: under the 64 MiB --max-message-bytes, refused by a worker as
over --max-object-bytes, so every byte goes through the front process and on to a worker, or is
refused at --max-inflight-bytes). Prints the front process's RSS idle, its peak while the
requests are in flight (sampled every 20 ms), and after: one second after the last answer, and
once it is back within 100 MiB of idle (or --settle seconds have passed). The workers' RSS is
printed beside it; it is not the front process's.

--cwd runs another checkout (e.g. a `git worktree` of an older commit) for a before/after pair.

Usage: python bench/front_memory.py [--concurrent 16] [--size-mib 60] [--rounds 1]
       [--settle 30] [--cwd DIR] [-- serve flags...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def podsets(size: int) -> bytes:
    # Field 1 (object_json), length-delimited: written by hand so as not to build a 60 MiB str.
    header, n = bytearray([0x0A]), size
    while True:
        byte, n = n & 0x7F, n >> 7
        header.append(byte | (0x80 if n else 0))
        if not n:
            break
    return bytes(header) + b"a" * size


def small_decide() -> bytes:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_server_hardening import _request

    return _request().SerializeToString()


async def burst(target: str, payload: bytes, n: int, pid: int) -> tuple[dict[str, int], float]:
    peak = 0.0
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mib(pid))
            await asyncio.sleep(0.02)

    options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    async with grpc.aio.insecure_channel(target, options) as channel:
        call = channel.unary_unary("/decider.v1.Decider/PodSets")

        async def one() -> str:
            try:
                await call(payload, timeout=300)
                return "OK"
            except grpc.aio.AioRpcError as exc:
                why = "budget" if "--max-inflight-bytes" in (exc.details() or "") else \
                    "object limit" if "per object" in (exc.details() or "") else ""
                return exc.code().name + (f" ({why})" if why else "")

        sampler = asyncio.ensure_future(sample())
        codes = await asyncio.gather(*(one() for _ in range(n)))
        done.set()
        await sampler
    return {c: codes.count(c) for c in sorted(set(codes))}, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--size-mib", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--settle", type=float, default=30.0)
    parser.add_argument("--cwd", type=Path, default=ROOT)
    parser.add_argument("serve_flags", nargs="*")
    args = parser.parse_args()
    cwd = args.cwd.resolve()
    env = dict(os.environ, PYTHONPATH=f"{cwd}:{cwd / 'clients' / 'python'}")
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--log-level", "WARNING", *args.serve_flags],
                            cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        target = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
        with grpc.insecure_channel(target) as channel:
            call = channel.unary_unary("/decider.v1.Decider/Decide")
            small = small_decide()
            for _ in range(50):
                call(small, timeout=60, wait_for_ready=True)
        time.sleep(1)
        idle = rss_mib(proc.pid)
        print(f"checkout {cwd}; serve flags: {' '.join(args.serve_flags) or '(defaults)'}")
        print(f"front process idle: {idle:.0f} MiB")
        payload = podsets(int(args.size_mib * MiB))
        for round_ in range(1, args.rounds + 1):
            started = time.monotonic()
            codes, peak = asyncio.run(burst(target, payload, args.concurrent, proc.pid))
            answered = time.monotonic()
            time.sleep(1)
            one_second = rss_mib(proc.pid)
            while (now := rss_mib(proc.pid)) > idle + 100 and \
                    time.monotonic() - answered < args.settle:
                time.sleep(0.1)
            settled = time.monotonic() - answered
            workers = sum(rss_mib(p) for p in children(proc.pid))
            print(f"round {round_}: {args.concurrent} x {args.size_mib:g} MiB in "
                  f"{answered - started:.1f}s: {codes}")
            print(f"  front process RSS: idle {idle:.0f} MiB, peak {peak:.0f} MiB, "
                  f"1 s after {one_second:.0f} MiB, "
                  + (f"within 100 MiB of idle after {settled:.1f}s ({now:.0f} MiB)"
                     if now <= idle + 100 else
                     f"still {now:.0f} MiB after {args.settle:g}s")
                  + f"; workers {workers:.0f} MiB")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
