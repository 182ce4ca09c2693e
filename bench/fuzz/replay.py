"""Saved findings sent again, one at a time: to see whether a fix holds, or what one request
does alone to a fresh server (whose log then holds only what it caused).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import tempfile
import time
from pathlib import Path

import grpc

from .case import LONG_TIMEOUT, WEBHOOK, Case
from .drive import call_grpc, call_webhook, identity
from .server import LogWatch, Server
from .values import NEW_GATES


def replay(files: list[str], target: str | None, workers: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = None if target else Server(Path(tmp), workers, dict.fromkeys(NEW_GATES, True))
        try:
            address = target or server.target  # type: ignore[union-attr]
            for path in files:
                meta = json.loads(Path(path).with_suffix(".json").read_text())
                case = Case(meta["method"], Path(path).read_bytes(), LONG_TIMEOUT, meta["seed"])
                if case.method in WEBHOOK and server is None:
                    # The webhook's certificate is the fresh server's own: a running one's
                    # CA is not known here.
                    print(f"{path}: {case.method} -> skipped: a webhook request is replayed "
                          "against a fresh server only (without --target)")
                    continue
                if case.method in WEBHOOK:
                    async def one(case: Case = case) -> tuple[str, str]:
                        import aiohttp

                        ctx = ssl.create_default_context(cafile=str(server.pki.ca))  # type: ignore[union-attr]
                        async with aiohttp.ClientSession(
                                connector=aiohttp.TCPConnector(ssl=ctx)) as session:
                            return await call_webhook(
                                session, f"https://127.0.0.1:{server.webhook_port}", case)  # type: ignore[union-attr]
                else:
                    async def one(case: Case = case) -> tuple[str, str]:
                        async with grpc.aio.insecure_channel(address) as channel:
                            call = channel.unary_unary(f"/decider.v1.Decider/{case.method}",
                                                       request_serializer=identity,
                                                       response_deserializer=identity)
                            return await call_grpc({case.method: call}, case)
                code, message = asyncio.run(one())
                print(f"{path}: {case.method} -> {code}: {message[:500]}")
            if server is not None:
                time.sleep(1)
                errors = [line for line in server.log_path.read_text().splitlines()
                          if LogWatch.PATTERN.search(line)]
                print("server log errors:", *errors[:20], sep="\n  ")
        finally:
            if server is not None:
                server.stop()
