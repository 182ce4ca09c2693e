"""decider_api.v1.decider_pb2 under its first published name (see decider/v1/__init__.py)."""

from decider_api.v1.decider_pb2 import *  # noqa: F403
from decider_api.v1.decider_pb2 import DESCRIPTOR  # noqa: F401
