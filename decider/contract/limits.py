"""How much one request may ask of the decider, checked before any work starts.

Every limit is one that a JobSet or Job served by a real API server stays far inside; they exist
so that a careless or hostile caller cannot make one request cost minutes of CPU or gigabytes of
memory and starve every other caller. Each default and its reason is in docs/serving.md
("Limits"); each is a `decider serve` flag.

Sheer size (bytes, counts of observed objects, an answer too large to send) is answered
RESOURCE_EXHAUSTED (`TooLarge`); a value out of range is INVALID_ARGUMENT (`InvalidInput`);
both name the field and the limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from decider.contract.json_input import DEFAULT_MAX_DEPTH
from decider.core.errors import FieldError, InvalidInput, TooLarge
from decider_api.v1 import decider_pb2 as pb

KiB = 1024
MiB = 1024 * KiB

# google.protobuf.Timestamp's documented range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
MIN_TIMESTAMP_SECONDS = -62_135_596_800
MAX_TIMESTAMP_SECONDS = 253_402_300_799
# Object names are DNS subdomains (RFC 1123) at most; a UID or resourceVersion is far shorter.
MAX_NAME_BYTES = 253


@dataclass(frozen=True, slots=True)
class Limits:
    # gRPC's own ceiling on a request and on an answer.
    max_message_bytes: int = 64 * MiB
    # kube-apiserver refuses a request body over 3 MiB, and etcd stores at most 1.5 MiB per
    # object: no JobSet, Job or gang object the API server serves is larger.
    max_object_bytes: int = 3 * MiB
    # Replicated Jobs of one JobSet: with a name and a pod template each (~150 bytes at the
    # very least) no more fit in one stored object.
    max_replicated_jobs: int = 10_000
    # Jobs of one replicated Job, and of the whole JobSet: 10^5 is the Kubernetes Job API's
    # own cap on an Indexed Job's parallelism, and no cluster has more nodes than that.
    max_replicas: int = 100_000
    max_jobs: int = 100_000
    # Observed Jobs, objects and pods, each list: a restart's old attempt may still be
    # terminating beside the new one, and in-place restart sends every pod.
    max_observed: int = 1_000_000
    # Any one string in the typed part of a request: 256 KiB is what Kubernetes allows all of
    # an object's annotations together, the longest text an object carries outside its spec.
    max_string_bytes: int = 256 * KiB
    max_json_depth: int = DEFAULT_MAX_DEPTH


DEFAULT = Limits()


def _utf8_len(text: str) -> int:
    # A character is one to four bytes: the exact count is only needed near the limit.
    return len(text.encode("utf-8", "surrogatepass"))


def check_object_bytes(text: str, field: str, limits: Limits) -> None:
    if len(text) > limits.max_object_bytes or (
            len(text) * 4 > limits.max_object_bytes and _utf8_len(text) > limits.max_object_bytes):
        raise TooLarge(field, f"{_utf8_len(text):,} bytes, over the limit of "
                              f"{limits.max_object_bytes:,} bytes per object")


def check_count(n: int, field: str, limit: int, what: str) -> None:
    if n > limit:
        raise TooLarge(field, f"{n:,} {what}, over the limit of {limit:,}")


def check_now(now: Any, field: str = "now") -> None:
    """A Timestamp the core can turn into a time: seconds and nanos within the documented range."""
    if not MIN_TIMESTAMP_SECONDS <= now.seconds <= MAX_TIMESTAMP_SECONDS:
        raise InvalidInput.at(f"{field}.seconds", f"{now.seconds} is outside the Timestamp range "
                                                  "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z")
    if not 0 <= now.nanos <= 999_999_999:
        raise InvalidInput.at(f"{field}.nanos", f"{now.nanos} is outside 0..999999999")


def _long_strings(msg: Any, field: str, limit: int) -> None:
    """Walk one message that is larger than `limit` for the string that makes it so."""
    for fd, value in msg.ListFields():
        name = f"{field}.{fd.name}"
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            for key, item in value.items():
                for text, what in ((key, "key"), (item, "value")):
                    if isinstance(text, str) and _utf8_len(text) > limit:
                        raise InvalidInput.at(f"{name}[{key[:63]}]", _too_long(what, text, limit))
        elif fd.type == fd.TYPE_MESSAGE:
            items = value if fd.is_repeated else [value]
            for k, item in enumerate(items):
                sub = f"{name}[{k}]" if fd.is_repeated else name
                if item.ByteSize() > limit:
                    _long_strings(item, sub, limit)
        elif fd.type == fd.TYPE_STRING:
            items = value if fd.is_repeated else [value]
            for k, text in enumerate(items):
                if _utf8_len(text) > limit:
                    sub = f"{name}[{k}]" if fd.is_repeated else name
                    raise InvalidInput.at(sub, _too_long("value", text, limit))


def _too_long(what: str, text: str, limit: int) -> str:
    return f"{what} is {_utf8_len(text):,} bytes long, over the limit of {limit:,}"


def check_strings(messages: Iterable[Any], field: str, limits: Limits) -> None:
    """No string in the typed messages is longer than max_string_bytes.

    A message no larger than the limit cannot hold a longer string, and ByteSize() is computed
    in C: a Job costs well under a microsecond unless it is itself oversized.
    """
    limit = limits.max_string_bytes
    for i, msg in enumerate(messages):
        if msg.ByteSize() > limit:
            _long_strings(msg, f"{field}[{i}]", limit)


def _element_sizes() -> type[Message]:
    """A message reading a DecideRequest's Jobs, objects and pods as bytes: parsing the
    received request with it gives each one's encoded size at C speed."""
    fields = pb.DecideRequest.DESCRIPTOR.fields_by_name
    proto = descriptor_pb2.FileDescriptorProto(name="decider/internal/sizes.proto",
                                               package="decider.internal", syntax="proto3")
    message = proto.message_type.add(name="DecideRequestSizes")
    for name in ("jobs", "objects", "pods"):
        message.field.add(name=name, number=fields[name].number,
                          type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("decider.internal.DecideRequestSizes"))


_SIZES = _element_sizes()


def check_decide_request(req: pb.DecideRequest, limits: Limits,
                         received: bytes | None = None) -> None:
    """Everything about a DecideRequest that can be checked before parsing its JSON.

    received: the bytes `req` was parsed from, when it was. Every string in it was read from
    them, so none is longer than they are, nor than the Job or pod that holds it is there:
    those sizes come from one more parse (ByteSize() serializes what it measures: 6 ms for
    10,000 Jobs, and as much again for their sizes one by one).
    """
    check_object_bytes(req.jobset_json, "jobset_json", limits)
    check_count(len(req.jobs), "jobs", limits.max_observed, "observed Jobs")
    check_count(len(req.objects), "objects", limits.max_observed, "observed objects")
    check_count(len(req.pods), "pods", limits.max_observed, "observed pods")
    if req.HasField("now"):
        check_now(req.now)
    limit = limits.max_string_bytes
    if (len(received) if received is not None else req.ByteSize()) <= limit:
        return
    sizes = None
    if received is not None:
        sizes = _SIZES()
        sizes.ParseFromString(received)
    if sizes is None or max(map(len, sizes.jobs), default=0) > limit:
        check_strings(req.jobs, "jobs", limits)
    if sizes is None or max(map(len, sizes.pods), default=0) > limit:
        check_strings(req.pods, "pods", limits)
    for i, obj in enumerate(req.objects):
        check_object_bytes(obj.object_json, f"objects[{i}].object_json", limits)


def check_objects(objects: Iterable[pb.ObservedObject], limits: Limits) -> None:
    objects = list(objects)
    check_count(len(objects), "objects", limits.max_observed, "observed objects")
    for i, obj in enumerate(objects):
        check_object_bytes(obj.object_json, f"objects[{i}].object_json", limits)


def jobset_replica_errors(obj: Any, limits: Limits) -> list[tuple[str, str]]:
    """(field, message) for each replica count of a JobSet over the limits.

    Reads only well-typed values: the core reports a malformed spec in its own words.
    """
    spec = obj.get("spec") if isinstance(obj, dict) else None
    rjobs = spec.get("replicatedJobs") if isinstance(spec, dict) else None
    if not isinstance(rjobs, list):
        return []
    errors: list[tuple[str, str]] = []
    if len(rjobs) > limits.max_replicated_jobs:
        errors.append(("spec.replicatedJobs", f"must have at most {limits.max_replicated_jobs:,} "
                                              f"items (the decider's limit), has {len(rjobs):,}"))
        return errors
    total = 0
    for i, rjob in enumerate(rjobs):
        replicas = rjob.get("replicas") if isinstance(rjob, dict) else None
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            continue
        if replicas > limits.max_replicas:
            errors.append((f"spec.replicatedJobs[{i}].replicas",
                           f"must be less than or equal to {limits.max_replicas:,} (the "
                           f"decider's limit), is {replicas:,}"))
        total += max(replicas, 0)
    if total > limits.max_jobs and not errors:
        errors.append(("spec.replicatedJobs", f"the JobSet would have {total:,} Jobs in all, over "
                                              f"the decider's limit of {limits.max_jobs:,}"))
    return errors


def check_jobset_replicas(obj: Any, limits: Limits) -> None:
    errors = jobset_replica_errors(obj, limits)
    if errors:
        raise InvalidInput([FieldError(f, m) for f, m in errors])
