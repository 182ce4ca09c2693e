"""Calls that end mid-decision: what one careless client costs everyone else.

A client whose deadline passes while a worker decides its request (or that cancels the call)
gets its answer at once; the worker may finish for --kill-grace seconds before it is killed and
a new one started (~0.4 s of CPU). This runs a steady load of 10-Job Decides (8 in flight) beside
a second client that sends the same Decides with a 3 ms deadline, or cancels each 1 ms after
sending it (4 in flight), against a server with the default grace and one with --kill-grace 0
(kill at once, the behaviour before the grace), in interleaved rounds.

Usage: python bench/abandon_bench.py [--seconds 5] [--rounds 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import grpc  # noqa: E402
from soak import Server, _steady_request  # noqa: E402

DECIDE = "/decider.v1.Decider/Decide"
STEADY, CARELESS = 8, 4


def _identity(b: bytes) -> bytes:
    return b


async def _run(target: str, mode: str, seconds: float) -> tuple[float, float]:
    """(steady Decides answered per second, careless calls per second)."""
    payload = _steady_request(10)
    stop = time.monotonic() + seconds
    steady = careless = 0
    async with grpc.aio.insecure_channel(target) as ch, grpc.aio.insecure_channel(
            target, options=[("grpc.use_local_subchannel_pool", 1)]) as other:
        call = ch.unary_unary(DECIDE, request_serializer=_identity,
                              response_deserializer=_identity)
        rude = other.unary_unary(DECIDE, request_serializer=_identity,
                                 response_deserializer=_identity)
        await call(payload, timeout=30, wait_for_ready=True)

        async def well_behaved() -> None:
            nonlocal steady
            while time.monotonic() < stop:
                await call(payload, timeout=30)
                steady += 1

        async def badly_behaved() -> None:
            nonlocal careless
            while time.monotonic() < stop:
                if mode == "deadline":
                    with contextlib.suppress(grpc.aio.AioRpcError):
                        await rude(payload, timeout=0.003)
                else:
                    pending = rude(payload, timeout=30)
                    await asyncio.sleep(0.001)
                    pending.cancel()
                    # The call is cancelled (or ended first): either is what this client does.
                    with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                        await pending
                careless += 1

        tasks = [well_behaved() for _ in range(STEADY)]
        if mode != "alone":
            tasks += [badly_behaved() for _ in range(CARELESS)]
        started = time.monotonic()
        await asyncio.gather(*tasks)
        took = time.monotonic() - started
    return steady / took, careless / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    servers = [Server("--kill-grace 0.5 (default)", ROOT, args.workers),
               Server("--kill-grace 0 (kill at once)", ROOT, args.workers,
                      flags=("--kill-grace", "0"))]
    modes = {"alone": "no other client", "deadline": "beside 3 ms deadlines",
             "cancel": "beside calls cancelled after 1 ms"}
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for _ in range(args.rounds):
            for mode in modes:
                for server in servers:
                    results.setdefault((mode, server.label), []).append(
                        asyncio.run(_run(server.target, mode, args.seconds)))
    finally:
        for server in servers:
            server.stop()
    print(f"# calls ended mid-decision, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, "
          f"{args.workers} workers; {args.rounds} interleaved rounds of {args.seconds:g} s; "
          f"steady client {STEADY} in flight, careless client {CARELESS}\n")
    print("| steady 10-Job Decides | server | steady RPC/s | careless calls/s | "
          "share of alone |")
    print("|---|---|---:|---:|---:|")
    for mode, text in modes.items():
        for server in servers:
            rows = results[(mode, server.label)]
            rate = statistics.mean(r[0] for r in rows)
            alone = statistics.mean(r[0] for r in results[("alone", server.label)])
            print(f"| {text} | {server.label} | {rate:,.0f} | "
                  f"{statistics.mean(r[1] for r in rows):,.0f} | {rate / alone:.2f} |")


if __name__ == "__main__":
    main()
