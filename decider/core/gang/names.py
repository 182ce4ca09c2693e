"""Deterministic names for gang objects, reproduced bit for bit from upstream.

Two families exist:

* the Kubernetes Job controller (KEP-5547, 1.36 and 1.37): FNV-32a hashes printed in decimal and
  passed through the vowel-free alphabet of ``k8s.io/apimachinery/pkg/util/rand.SafeEncodeString``;
* the JobSet controller (KEP-969 "WAS integration"): truncated SHA-1 hex digests over a
  ``Kind/namespace/name`` identity, so names stay within a 63-character DNS label.

Names matter because a restart of the shim must find the same objects again, and because the
acceptance bar for ``scheduling.k8s.io/v1alpha2`` is byte-identical names to a real 1.36 cluster.
"""

from __future__ import annotations

import hashlib

# k8s.io/apimachinery/pkg/util/rand: vowels are left out so generated names never spell words.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

DNS1123_SUBDOMAIN_MAX = 253
DNS1123_LABEL_MAX = 63

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193

# JobSet's scheduling names hash this many hex characters of SHA-1.
JOBSET_HASH_LEN = 10


def fnv32a(data: bytes) -> int:
    h = _FNV32_OFFSET
    for byte in data:
        h ^= byte
        h = (h * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """Map every byte onto the safe alphabet, as the apimachinery helper does."""
    return "".join(_SAFE_ALPHABET[b % len(_SAFE_ALPHABET)] for b in text.encode())


def uid_hash(uid: str) -> str:
    """The Job controller hashes ``spew.Sprintf("%#v", job.UID)``.

    With ``%#v`` spew prefixes the Go type and prints a string kind unquoted, so the bytes hashed
    are ``(types.UID)<uid>`` with no space and no quotes.
    """
    return safe_encode(str(fnv32a(b"(types.UID)" + uid.encode())))


def job_template_name(job_name: str) -> str:
    """The single PodGroupTemplate a Job's Workload carries (alpha has exactly one)."""
    return f"{job_name}-pgt-0"


def job_workload_name(job_name: str, uid: str) -> str:
    digest = uid_hash(uid)
    max_prefix = DNS1123_SUBDOMAIN_MAX - len(digest) - 1
    return f"{job_name[:max_prefix]}-{digest}"


def job_podgroup_name(workload_name: str, template_name: str) -> str:
    """``<workload>-<template>-<hash>``, both parts shortened by "fair share" when too long."""
    digest = safe_encode(str(fnv32a((workload_name + template_name).encode())))
    room = DNS1123_SUBDOMAIN_MAX - len(digest) - 2
    wl, tpl = workload_name, template_name
    if len(wl) + len(tpl) > room:
        half = room // 2
        if len(wl) <= half:
            tpl = tpl[: room - len(wl)]
        elif len(tpl) <= half:
            wl = wl[: room - len(tpl)]
        else:
            # Both are long: the workload part keeps the odd character.
            wl = wl[: room - half]
            tpl = tpl[:half]
    return f"{wl}-{tpl}-{digest}"


def sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def identity_hash(kind: str, namespace: str, name: str) -> str:
    return sha1_hex(f"{kind}/{namespace}/{name}")[:JOBSET_HASH_LEN]


def hashed_name(prefix: str, digest: str) -> str:
    name = f"{prefix}-{digest}"
    if len(name) <= DNS1123_LABEL_MAX:
        return name
    return f"{prefix[: DNS1123_LABEL_MAX - 1 - len(digest)]}-{digest}"


def jobset_workload_name(namespace: str, jobset: str) -> str:
    return hashed_name(jobset, identity_hash("JobSet", namespace, jobset))


def jobset_top_level_template(namespace: str, jobset: str) -> str:
    # Upstream uses the very same string as the Workload name for the single top-level template.
    return jobset_workload_name(namespace, jobset)


def jobset_rjob_template(namespace: str, jobset: str, rjob: str) -> str:
    return hashed_name(rjob, identity_hash("ReplicatedJob", namespace, f"{jobset}/{rjob}"))


def jobset_group_template(namespace: str, jobset: str, targets: list[str]) -> str:
    group = "-".join(targets)
    return hashed_name(group, identity_hash("ReplicatedJobGroup", namespace, f"{jobset}/{group}"))


def jobset_job_template(namespace: str, jobset: str, rjob: str, index: int) -> str:
    return hashed_name(
        f"{rjob}-{index}", identity_hash("Job", namespace, f"{jobset}/{rjob}/{index}")
    )


def jobset_podgroup_name(jobset: str, template: str) -> str:
    """``<jobset>-<template>``; past 63 characters ``<jobset[:52]>-<sha1(js/template)[:10]>``."""
    name = f"{jobset}-{template}"
    if len(name) <= DNS1123_LABEL_MAX:
        return name
    digest = sha1_hex(f"{jobset}/{template}")[:JOBSET_HASH_LEN]
    return f"{jobset[: DNS1123_LABEL_MAX - 1 - JOBSET_HASH_LEN]}-{digest}"
