"""Python client of the jobset-decider contract (decider.v1).

Depends on the generated stubs only, never on the decider's core: the shim and any other
client get exactly what other languages get.
"""

from decider_client import observe, render
from decider_client.client import DeciderClient
from decider_client.errors import ObservationError

__all__ = ["DeciderClient", "ObservationError", "observe", "render"]
