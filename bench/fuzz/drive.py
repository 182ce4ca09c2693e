"""The served run: each case sent over gRPC or to the webhook over HTTPS, as many in flight
as asked, the answer counted by its code and a bad one saved, the server's log watched.

Requests go as raw bytes (no stub serializes them) so that bytes no protobuf library would
build, bad UTF-8 above all, reach the server as sent.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import sys
import time
from collections.abc import Iterator
from typing import Any

import grpc

from .case import LONG_TIMEOUT, METHODS, WEBHOOK, Case
from .findings import BAD_CODES, Findings
from .server import LogWatch, Server

MUTATE_PATH = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
VALIDATE_PATH = "/validate-jobset-x-k8s-io-v1alpha2-jobset"


def identity(b: bytes) -> bytes:
    """A case's payload is already the request's bytes: the channel sends them as they are."""
    return b


async def call_grpc(calls: dict[str, Any], case: Case) -> tuple[str, str]:
    """The answer's code name and details. A long deadline that expires is the server's
    fault: HANG when the call used all of it, SLOW when the server gave up first."""
    started = time.monotonic()
    try:
        await calls[case.method](case.payload, timeout=case.timeout)
        return "OK", ""
    except grpc.aio.AioRpcError as exc:
        code = exc.code().name
        details = exc.details() or ""
        if code == "DEADLINE_EXCEEDED" and case.timeout >= LONG_TIMEOUT:
            took = time.monotonic() - started
            code = "HANG" if took >= case.timeout * 0.95 else "SLOW"
        return code, details


async def call_webhook(session: Any, base: str, case: Case) -> tuple[str, str]:
    """ALLOWED or DENIED for a review the API server could read (its patch too), BAD-ANSWER
    for a 200 it could not, HTTP-<status>, a hang, or a dropped connection."""
    import aiohttp

    path = MUTATE_PATH if case.method.endswith("mutate") else VALIDATE_PATH
    try:
        async with session.post(f"{base}{path}", data=case.payload,
                                headers={"Content-Type": "application/json"},
                                timeout=aiohttp.ClientTimeout(total=case.timeout)) as resp:
            body = await resp.read()
            text = body.decode("utf-8", "replace")
            if resp.status == 200:
                try:
                    doc = json.loads(body)
                    allowed = doc["response"]["allowed"]
                    if doc["response"].get("patch"):
                        json.loads(base64.b64decode(doc["response"]["patch"]))
                except Exception as exc:  # noqa: BLE001 - an answer the API server cannot read
                    return "BAD-ANSWER", f"{type(exc).__name__}: {exc}: {text[:500]}"
                return ("ALLOWED" if allowed else "DENIED"), text[:300]
            return f"HTTP-{resp.status}", text[:2000]
    except TimeoutError:
        return ("HANG" if case.timeout >= LONG_TIMEOUT else "CLIENT-TIMEOUT"), ""
    except aiohttp.ClientError as exc:
        return "DISCONNECTED", f"{type(exc).__name__}: {exc}"


async def drive(server: Server, cases: Iterator[Case], total: int, in_flight: int,
                findings: Findings) -> float:
    """Send `total` cases, `in_flight` at a time; the seconds it took."""
    import aiohttp

    options = [("grpc.max_receive_message_length", 256 << 20),
               ("grpc.max_send_message_length", 256 << 20)]
    watch = LogWatch(server.log_path)
    ssl_ctx = ssl.create_default_context(cafile=str(server.pki.ca))
    base = f"https://127.0.0.1:{server.webhook_port}"
    sent = 0
    started = time.monotonic()
    async with grpc.aio.insecure_channel(server.target, options=options) as channel, \
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl_ctx)) as session:
        calls = {m: channel.unary_unary(f"/decider.v1.Decider/{m}",
                                        request_serializer=identity,
                                        response_deserializer=identity) for m in METHODS}
        await channel.channel_ready()

        async def worker() -> None:
            nonlocal sent
            while sent < total:
                case = next(cases)
                sent += 1
                findings.recent.append(case)
                t = time.monotonic()
                if case.method in WEBHOOK:
                    code, message = await call_webhook(session, base, case)
                else:
                    code, message = await call_grpc(calls, case)
                findings.latency[case.method] = max(findings.latency[case.method],
                                                    time.monotonic() - t)
                findings.codes[case.method][code] += 1
                if code in BAD_CODES or code == "BAD-ANSWER":
                    findings.save(case, code, message)

        async def watcher() -> None:
            last = 0
            while True:
                await asyncio.sleep(1.0)
                for line in watch.poll():
                    print(f"  server log: {line[:200]}", file=sys.stderr)
                    if watch.first(line):
                        for case in list(findings.recent):
                            findings.save(case, "LOGGED", line)
                if sent - last >= 5000 or not server.alive():
                    last = sent
                    rate = sent / max(time.monotonic() - started, 1e-9)
                    print(f"  {sent:,}/{total:,} sent, {rate:.0f}/s, "
                          f"{len(findings.saved)} saved", file=sys.stderr)
                    if not server.alive():
                        raise SystemExit("the server died")

        watch_task = asyncio.ensure_future(watcher())
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        await asyncio.sleep(1.5)
        watch_task.cancel()
        for line in watch.poll():
            if watch.first(line):
                for case in list(findings.recent):
                    findings.save(case, "LOGGED", line)
    return time.monotonic() - started
