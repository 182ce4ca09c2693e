"""What a decider of another version does not know of this client's contract.

The contract only gains fields, so any client talks to any decider. But proto3 drops on the wire
what it does not know, and "unset" means "absent" in the contract: a decider older than its
client answers PodSets without `PodSet.min_count` exactly as for a Job with no
`kueue.x-k8s.io/job-min-parallelism`, and ignores a request field it does not know as if it
were not set. The answer looks whole and is not. The decider's own contract, read over gRPC
server reflection (on unless `decider serve --no-reflection`), tells the two apart: `gaps`
names the fields of one RPC that this client knows and the server does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import grpc
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from decider_api.v1 import decider_pb2 as pb

SERVICE = "decider.v1.Decider"
_SERVICE = pb.DESCRIPTOR.services_by_name["Decider"]


@dataclass(frozen=True)
class Gaps:
    """One RPC's fields the server does not know, as `Message.field` names, in contract order.

    `answer`: fields of the response (and of messages in it) the server never fills; its answer
    leaves them unset whatever the input. `ignored`: fields set in the request that the server
    drops unread (only when a request was given).
    """

    answer: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.answer or self.ignored)

    def __str__(self) -> str:
        parts = []
        if self.ignored:
            parts.append(f"it ignores {', '.join(self.ignored)} of the request")
        if self.answer:
            parts.append(f"its answer never carries {', '.join(self.answer)}")
        return "; ".join(parts)


def server_fields(channel: grpc.Channel, timeout: float = 5.0) -> dict[str, set[int]] | None:
    """Field numbers of every decider.v1 message the server's contract has, by full name; None
    when the server does not serve reflection (or cannot be asked now)."""
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE)
    try:
        responses = list(stub.ServerReflectionInfo(iter([request]), timeout=timeout))
    except grpc.RpcError:
        return None
    fields: dict[str, set[int]] = {}
    for response in responses:
        if not response.HasField("file_descriptor_response"):
            return None
        for raw in response.file_descriptor_response.file_descriptor_proto:
            file = descriptor_pb2.FileDescriptorProto.FromString(raw)
            for message in file.message_type:
                _collect(fields, f"{file.package}.", message)
    return fields or None


def _collect(out: dict[str, set[int]], prefix: str,
             message: descriptor_pb2.DescriptorProto) -> None:
    name = prefix + message.name
    out[name] = {f.number for f in message.field}
    for nested in message.nested_type:
        _collect(out, f"{name}.", nested)


def _reachable(descriptor: Descriptor, seen: set[str]) -> Iterator[Descriptor]:
    if descriptor.full_name in seen or not descriptor.full_name.startswith("decider.v1."):
        return
    seen.add(descriptor.full_name)
    yield descriptor
    for field in descriptor.fields:
        if field.message_type is not None:
            yield from _reachable(field.message_type, seen)


def _unknown(descriptor: Descriptor, field_number: int, server: dict[str, set[int]]) -> bool:
    # A message the server lacks entirely is reached only through a field it lacks, which is
    # named already.
    known = server.get(descriptor.full_name)
    return known is not None and field_number not in known


def _ignored(message: Message, server: dict[str, set[int]], out: list[str]) -> None:
    for field, value in message.ListFields():
        if _unknown(message.DESCRIPTOR, field.number, server):
            name = f"{message.DESCRIPTOR.name}.{field.name}"
            if name not in out:
                out.append(name)
            continue
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        for item in (value if field.is_repeated else [value]):
            _ignored(item, server, out)


def gaps(server: dict[str, set[int]], method: str, request: Message | None = None) -> Gaps:
    """What the server with contract `server` (server_fields) does not know of RPC `method`
    ("PodSets", "Decide", ...) as this client has it."""
    rpc = _SERVICE.methods_by_name[method]
    answer = [
        f"{d.name}.{f.name}"
        for d in _reachable(rpc.output_type, set())
        for f in d.fields
        if _unknown(d, f.number, server)
    ]
    ignored: list[str] = []
    if request is not None:
        _ignored(request, server, ignored)
    return Gaps(tuple(answer), tuple(ignored))
