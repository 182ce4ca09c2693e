"""An in-process fake Kubernetes API server and a simulated Job controller.

Used by the shim's tests and by bench/shim_reaction.py.
"""

from .errors import ApiError
from .faults import Fault, WatchFault
from .jobsim import JobSimulator
from .resources import DEFAULT_RESOURCES, ResourceType
from .server import AuditRecord, FakeKube
from .store import Store

__all__ = [
    "DEFAULT_RESOURCES",
    "ApiError",
    "AuditRecord",
    "FakeKube",
    "Fault",
    "JobSimulator",
    "ResourceType",
    "Store",
    "WatchFault",
]
