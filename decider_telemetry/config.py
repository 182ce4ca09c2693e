"""What the OTEL_* environment asks for, read where the SDK leaves it to the application.

The SDK reads endpoints, headers, timeouts, batch sizes, the export interval and the resource
itself. It does not choose exporters for a provider built in code, nor the exporter's protocol
(OTEL_EXPORTER_OTLP_PROTOCOL, pitfalls.md), and it takes an unknown sampler name or a bad
sampler argument with a warning and goes on with another sampler. Those are read here, and a
value this build cannot honour is refused at start, naming the variable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

PROTOCOLS = ("grpc", "http/protobuf")
SIGNAL_EXPORTERS = {"traces": ("otlp", "console", "none"),
                    "metrics": ("otlp", "console", "prometheus", "none"),
                    "logs": ("otlp", "console", "none")}
# The SDK's built-in samplers, by the names OTEL_TRACES_SAMPLER gives them; the second item
# says whether OTEL_TRACES_SAMPLER_ARG is its ratio.
SAMPLERS = {"always_on": False, "always_off": False, "parentbased_always_on": False,
            "parentbased_always_off": False, "traceidratio": True,
            "parentbased_traceidratio": True}
DEFAULT_SAMPLER = "parentbased_always_on"


class TelemetryConfigError(ValueError):
    """An OTEL_* variable names an exporter, protocol or sampler this build does not offer."""


def exporters(env: Mapping[str, str], signal: str) -> list[str]:
    """OTEL_{signal}_EXPORTER, without `none`; unset means none: a span costs CPU on every RPC,
    so nobody pays for telemetry without asking."""
    name = f"OTEL_{signal.upper()}_EXPORTER"
    chosen = [e.strip().lower() for e in env.get(name, "none").split(",") if e.strip()]
    for e in chosen:
        if e not in SIGNAL_EXPORTERS[signal]:
            raise TelemetryConfigError(f"{name}: unsupported exporter {e!r} (supported: "
                                       f"{', '.join(SIGNAL_EXPORTERS[signal])})")
    return [e for e in chosen if e != "none"]


def protocol(env: Mapping[str, str], signal: str) -> str:
    """The OTLP protocol of one signal: its own variable, else the common one, else grpc."""
    name = f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL"
    value = (env.get(name) or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc").strip().lower()
    if value not in PROTOCOLS:
        raise TelemetryConfigError(f"{name if env.get(name) else 'OTEL_EXPORTER_OTLP_PROTOCOL'}:"
                                   f" unsupported protocol {value!r} (supported: "
                                   f"{', '.join(PROTOCOLS)})")
    return value


def sampler(env: Mapping[str, str]) -> Any:
    """The SDK's sampler that OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name, as the SDK
    maps them (a ratio sampler without an argument samples everything)."""
    from opentelemetry.sdk.trace import sampling

    name = (env.get("OTEL_TRACES_SAMPLER") or DEFAULT_SAMPLER).strip().lower()
    if name not in SAMPLERS:
        raise TelemetryConfigError(f"OTEL_TRACES_SAMPLER: unsupported sampler {name!r} "
                                   f"(supported: {', '.join(SAMPLERS)})")
    if not SAMPLERS[name]:
        return {"always_on": sampling.ALWAYS_ON, "always_off": sampling.ALWAYS_OFF,
                "parentbased_always_on": sampling.DEFAULT_ON,
                "parentbased_always_off": sampling.DEFAULT_OFF}[name]
    text = (env.get("OTEL_TRACES_SAMPLER_ARG") or "").strip()
    try:
        rate = float(text) if text else 1.0
    except ValueError:
        rate = math.nan
    if not 0.0 <= rate <= 1.0:
        raise TelemetryConfigError(f"OTEL_TRACES_SAMPLER_ARG: {text!r} is not a ratio "
                                   f"between 0 and 1 (the share of traces {name} keeps)")
    if name == "traceidratio":
        return sampling.TraceIdRatioBased(rate)
    return sampling.ParentBasedTraceIdRatio(rate)


# The batch processors' and the periodic reader's settings (the SDK's names and defaults). The
# SDK parses them itself, but a value it cannot use makes its constructor raise (a traceback at
# start) or logs a traceback and goes on with the default: refused here instead, naming them.
_BATCH_DEFAULTS = {"MAX_QUEUE_SIZE": 2048, "SCHEDULE_DELAY": 5000, "MAX_EXPORT_BATCH_SIZE": 512,
                   "EXPORT_TIMEOUT": 30000}
_BATCH_PREFIXES = {"traces": "OTEL_BSP_", "logs": "OTEL_BLRP_"}


def _number(env: Mapping[str, str], name: str, default: float, kind: type) -> float:
    text = (env.get(name) or "").strip()
    if not text:
        return default
    try:
        return kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise TelemetryConfigError(f"{name}: {text!r} is not {what} (milliseconds or "
                                   "items, as the OpenTelemetry specification has it)") from None


def batch_settings(env: Mapping[str, str], signal: str) -> None:
    """OTEL_BSP_* (traces) or OTEL_BLRP_* (logs) as the SDK's batch processor accepts them:
    integers, a queue, batch and delay above zero, a batch no larger than the queue."""
    prefix = _BATCH_PREFIXES[signal]
    values = {key: _number(env, prefix + key, default, int)
              for key, default in _BATCH_DEFAULTS.items()}
    for key in ("MAX_QUEUE_SIZE", "SCHEDULE_DELAY", "MAX_EXPORT_BATCH_SIZE"):
        if values[key] <= 0:
            raise TelemetryConfigError(f"{prefix}{key}: {values[key]} must be above 0")
    if values["MAX_EXPORT_BATCH_SIZE"] > values["MAX_QUEUE_SIZE"]:
        raise TelemetryConfigError(
            f"{prefix}MAX_EXPORT_BATCH_SIZE: {values['MAX_EXPORT_BATCH_SIZE']} is more than "
            f"{prefix}MAX_QUEUE_SIZE ({values['MAX_QUEUE_SIZE']}): a batch is taken from the "
            "queue")


def reader_settings(env: Mapping[str, str]) -> None:
    """OTEL_METRIC_EXPORT_INTERVAL and _TIMEOUT as the SDK's periodic reader accepts them."""
    interval = _number(env, "OTEL_METRIC_EXPORT_INTERVAL", 60000.0, float)
    if not interval > 0 or math.isinf(interval):
        raise TelemetryConfigError(f"OTEL_METRIC_EXPORT_INTERVAL: {interval:g} must be above 0 "
                                   "(milliseconds between exports)")
    _number(env, "OTEL_METRIC_EXPORT_TIMEOUT", 30000.0, float)


def prometheus_port(env: Mapping[str, str], default: int) -> int:
    text = (env.get("OTEL_EXPORTER_PROMETHEUS_PORT") or "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise TelemetryConfigError(f"OTEL_EXPORTER_PROMETHEUS_PORT: {text!r} is not a port "
                                   "(0-65535)")
    return int(text)
