"""decider_api.v1.decider_pb2_grpc under its first published name (decider/v1/__init__.py)."""

from decider_api.v1.decider_pb2_grpc import *  # noqa: F403
