"""OpenTelemetry for the decider and the shim: the SDK set up from the standard OTEL_*
environment (sdk.py, config.py), the metrics they declare (metrics.py) and the metrics port
Prometheus scrapes (scrape.py).

It lives beside the server rather than in the Python client: the server and the shim share
it, neither imports its client for it, and the client installs without OpenTelemetry.
"""

from decider_telemetry.config import TelemetryConfigError
from decider_telemetry.metrics import SECONDS_BUCKETS, MetricSpec
from decider_telemetry.sdk import Telemetry, disabled, setup

__all__ = ["SECONDS_BUCKETS", "MetricSpec", "Telemetry", "TelemetryConfigError", "disabled",
           "setup"]
