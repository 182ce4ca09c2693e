"""The fuzz cases decided in this process, through the server's own dispatch (bytes in, status
out) but without a server: no webhook, no deadlines, no telemetry. Fast enough to try many
seeds for INTERNAL answers; it counts the refusals by the field they name, which shows where
most mutated requests are stopped.
"""

from __future__ import annotations

import collections
import random
import re
import time

from decider.contract.limits import Limits
from decider.service.dispatch import answer

from .case import WEBHOOK
from .findings import Findings, report
from .generate import make_case
from .seeds import Seed


def inproc(seeds: list[Seed], rng: random.Random, total: int, findings: Findings) -> None:
    """The same cases decided in this process (no server, no webhook, no deadlines): a quick
    look for INTERNAL answers, with the refusals' messages counted by their field."""
    import logging

    logging.disable(logging.CRITICAL)
    reasons: collections.Counter[str] = collections.Counter()
    names = {0: "OK", 3: "INVALID_ARGUMENT", 8: "RESOURCE_EXHAUSTED", 13: "INTERNAL"}
    started = time.monotonic()
    for _ in range(total):
        case = make_case(seeds, rng)
        if case.method in WEBHOOK:
            continue
        reply = answer(case.method, case.payload, Limits(), want=3)
        code = names.get(reply.code, str(reply.code))
        findings.codes[case.method][code] += 1
        if code == "INTERNAL":
            findings.save(case, code, reply.message)
        elif code != "OK":
            reasons[re.sub(r"\[[0-9]+\]", "[i]", reply.message.split(":")[0])[:70]] += 1
    report(findings, time.monotonic() - started, total, None)
    print("\nmost common refusals (field):")
    for reason, n in reasons.most_common(25):
        print(f"  {n:6,}  {reason}")
