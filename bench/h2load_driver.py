"""Drive a gRPC unary method with h2load (nghttp2's HTTP/2 load generator, written in C).

The benchmarks' own client is Python: on a 2-core machine it takes most of a core, about what the
server does, so the server's ratios are measured through a busy machine. h2load costs a few
microseconds per call, which leaves the cores to the server. It speaks HTTP/2, not gRPC: a call
is a POST of the length-prefixed message with gRPC's headers, and since h2load cannot read
trailers (where grpc-status is), every answer's body is checked against the one a gRPC client
got for the same request: an error answer has no body. Install: `apt-get install nghttp2-client`.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

# Four connections of eight streams each: the Python client's 32 calls in flight.
CONNECTIONS, STREAMS = 4, 8


def available() -> bool:
    return shutil.which("h2load") is not None


def framed(message: bytes) -> bytes:
    """gRPC's length-prefixed message: no compression flag, a big-endian length, the bytes."""
    return b"\x00" + struct.pack(">I", len(message)) + message


def drive(target: str, path: str, request: bytes, answer: bytes, seconds: float
          ) -> tuple[int, list[float], float]:
    """(calls answered, their latencies in seconds, seconds taken); AssertionError if any
    answer was not `answer` (a failed call, or another body)."""
    with tempfile.TemporaryDirectory() as tmp:
        body, log = Path(tmp) / "request", Path(tmp) / "log"
        body.write_bytes(framed(request))
        done = subprocess.run(
            ["h2load", "-D", f"{seconds:g}", "-c", str(CONNECTIONS), "-m", str(STREAMS), "-t", "1",
             "-H", "content-type: application/grpc", "-H", "te: trailers",
             "-d", str(body), "--log-file", str(log), f"http://{target}{path}"],
            capture_output=True, text=True, check=True)
        rows = [line.split("\t") for line in log.read_text().splitlines() if line]
    stats = _stats(done.stdout)
    statuses = {row[1] for row in rows}
    assert statuses == {"200"}, f"h2load got HTTP statuses {statuses}: {done.stdout}"
    # Every answer's DATA frames must be the expected gRPC message, byte for byte in length.
    expected = len(rows) * len(framed(answer))
    assert stats["data"] == expected, (f"{path}: {stats['data']} bytes of answers for "
                                       f"{len(rows)} calls, expected {expected}")
    return len(rows), [int(row[2]) / 1e6 for row in rows], stats["seconds"]


def _stats(out: str) -> dict[str, float]:
    """Seconds taken and answer bytes from h2load's summary ("finished in 4.00s, ...",
    "traffic: 1.2MB (1234567) total, 12KB (12345) headers (space savings 90%), 1MB (1000) data")."""
    stats: dict[str, float] = {}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("finished in "):
            stats["seconds"] = float(line.split()[2].rstrip("s,"))
        elif line.startswith("traffic:"):
            parts = line.split(",")
            stats["data"] = int(parts[-1].split("(")[1].split(")")[0])
    return stats
