"""Python client of the jobset-decider contract (decider.v1).

Depends on the generated stubs only, never on the decider's core: the shim and any other
client get exactly what other languages get.
"""

from typing import TYPE_CHECKING, Any

from decider_client import observe, render
from decider_client.errors import ObservationError

if TYPE_CHECKING:
    from decider_client.client import DeciderClient

__all__ = ["DeciderClient", "ObservationError", "observe", "render"]


def __getattr__(name: str) -> Any:
    # The gRPC client is imported when first named: reading and rendering objects (the decider
    # CLI deciding in its own process) needs no grpc.
    if name == "DeciderClient":
        from decider_client.client import DeciderClient

        return DeciderClient
    raise AttributeError(f"module 'decider_client' has no attribute {name!r}")
