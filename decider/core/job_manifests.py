"""The Jobs a pass creates, written as JSON without being built first.

Every Job of one replicated Job is the same manifest but for a few strings: its name, its
index, its key (a digest of its name), its global and group index, its restart attempt and its
namespaced-job node selector. A pass creating ten thousand Jobs built ten thousand dicts of
some sixty entries and wrote each out; here the manifest is built and written once, with a
marker in place of each of those strings, and split at the markers: a Job's JSON is the pieces
joined around its own strings (a few microseconds, not tens).

The CreateJob action of such a Job (`LazyJobAction`) builds its manifest only if someone reads
`object` (the gang step, the simulator, a Python caller); the adapter asks `wire_json()` first,
which is the same bytes as writing the built manifest (tests/support/spec_cache_check.py
compares the two on every Job the upstream tables and property tests create).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any, Protocol

import orjson

from decider.core import constants as c
from decider.core.jobset import JobSet, ReplicatedJob
from decider.core.model import Action

_FIELDS = tuple(f.name for f in dataclasses.fields(Action))


class ReplicatedJobBuilder(Protocol):
    """What the Jobs' JSON is made from: child_jobs.ReplicatedJobBuilder, which imports this
    module to hand out its Jobs lazily (so the dependency is named here, not imported back)."""

    js: JobSet
    rjob: ReplicatedJob
    global_offset: int
    group_offset: int
    job_restarts: list[int] | None

    @property
    def plain(self) -> bool: ...

    def manifest(self, name: str, index_keys: dict[str, str], namespaced: str
                 ) -> dict[str, Any]: ...

    def build(self, index: int) -> dict[str, Any]: ...

    def json(self, index: int) -> bytes | None: ...

# A marker is a whole JSON string value no real manifest holds (it starts with a NUL).
_MARKER = "\x00jobset-decider:{}\x00"
_MARKED = re.compile(rb'"\\u0000jobset-decider:([a-z]+)\\u0000"')
_MARKER_PREFIX = b"\\u0000jobset-decider:"
_INDEX_KEYS = {c.JOB_RESTART_ATTEMPT: "attempt", c.JOB_INDEX: "index", c.JOB_KEY: "key",
               c.JOB_GLOBAL_INDEX: "global", c.JOB_GROUP_INDEX: "group"}


def _open_string(text: str) -> bytes:
    """`text` as the start of a JSON string: its encoding without the closing quote (a JSON
    string's encoding is its characters' encodings in turn, and digits encode as themselves)."""
    return orjson.dumps(text)[:-1]


class JobJson:
    """The JSON of every Job one builder makes: fixed pieces, and which string goes between."""

    def __init__(self, builder: ReplicatedJobBuilder, pieces: list[bytes],
                 slots: list[str]) -> None:
        self.builder = builder
        self.pieces = pieces
        self.slots = slots
        js = builder.js
        prefix = f"{js.name}-{builder.rjob.name}-"
        self.name_prefix = prefix
        self.key_prefix = f"{js.namespace}/{prefix}"
        self.open_name = _open_string(prefix)
        self.open_namespaced = _open_string(f"{js.namespace}_{prefix}")

    @classmethod
    def of(cls, builder: ReplicatedJobBuilder, sample: bytes) -> JobJson | None:
        """sample: a Job of this builder as the answer writes it. None when the manifest
        cannot be split exactly (something in it reads like a marker, or orjson refuses it):
        its Jobs are then built and written one by one."""
        # The sample is the marked manifest but for the per-Job strings: without a marker's
        # text in it, every marker in the marked one is one placed here.
        if _MARKER_PREFIX in sample:
            return None
        marked_keys = {key: _MARKER.format(slot) for key, slot in _INDEX_KEYS.items()
                       if key != c.JOB_RESTART_ATTEMPT or builder.job_restarts is not None}
        manifest = builder.manifest(_MARKER.format("name"), marked_keys,
                                    _MARKER.format("namespaced"))
        try:
            text = orjson.dumps(manifest)
        except orjson.JSONEncodeError:
            return None
        parts = _MARKED.split(text)
        pieces, slots = parts[0::2], [p.decode() for p in parts[1::2]]
        if text.count(_MARKER_PREFIX) != len(slots):
            return None
        return cls(builder, pieces, slots)

    def render(self, index: int) -> bytes:
        builder = self.builder
        digits = str(index)
        values = {
            "name": b"%s%s\"" % (self.open_name, digits.encode()),
            "namespaced": b"%s%s\"" % (self.open_namespaced, digits.encode()),
            "index": b'"%d"' % index,
            "key": b'"%s"' % hashlib.sha1(
                f"{self.key_prefix}{digits}".encode()).hexdigest().encode(),
            "global": b'"%d"' % (builder.global_offset + index),
            "group": b'"%d"' % (builder.group_offset + index),
        }
        restarts = builder.job_restarts
        if restarts is not None:
            values["attempt"] = b'"%d"' % (restarts[index] if index < len(restarts) else 0)
        pieces = self.pieces
        out = [pieces[0]]
        for slot, piece in zip(self.slots, pieces[1:], strict=True):
            out.append(values[slot])
            out.append(piece)
        return b"".join(out)


class LazyJobAction(Action):
    """A CreateJob action whose manifest is built the first time `object` is read."""

    __slots__ = ("_builder", "_index", "_object")

    def __init__(self, builder: ReplicatedJobBuilder, index: int) -> None:  # no Action.__init__
        self._builder = builder
        self._index = index
        self._object: dict[str, Any] | None = None
        rjob = builder.rjob.name
        self.type = "CreateJob"
        self.name = f"{builder.js.name}-{rjob}-{index}"
        self.namespace = ""
        self.api_version = "batch/v1"
        self.kind = "Job"
        self.uid = ""
        self.patch = None
        self.clear_start_time = False
        self.propagation_policy = ""
        self.reason = f"replica {index} of replicated job {rjob} is missing"
        self.event = None
        self.status = None
        self.on_failure = None
        self.plain_json = builder.plain

    @property  # type: ignore[override]
    def object(self) -> dict[str, Any] | None:
        if self._object is None:
            self._object = self._builder.build(self._index)
        return self._object

    @object.setter
    def object(self, value: dict[str, Any] | None) -> None:
        self._object = value

    def __eq__(self, other: object) -> bool:
        # Equal to an Action with the same fields, lazy or not (the dataclass's own __eq__
        # compares only objects of one class).
        if not isinstance(other, Action):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def wire_json(self) -> bytes | None:
        """The manifest as the answer writes it, while nobody has read (and so perhaps
        changed) `object`; else None."""
        if self._object is not None:
            return None
        return self._builder.json(self._index)
