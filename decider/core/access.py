"""Typed reads from JSON shaped like ``kubectl get -o json`` output.

Every read names the full field path, so malformed input becomes an ``InvalidInput`` that says
where the problem is instead of a ``KeyError``/``TypeError`` deep inside a decision. The ``as_*``
functions read a value; the keyed ones (``child``, ``string``, ...) read ``obj[key]``.
"""

from __future__ import annotations

from typing import Any

from decider.core.constants import MAX_INT32, MAX_INT64
from decider.core.errors import InvalidInput


def _where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def as_map(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput.at(path, f"must be an object, got {type(value).__name__}")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput.at(path, f"must be a list, got {type(value).__name__}")
    return value


def as_str(value: Any, path: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidInput.at(path, f"must be a string, got {type(value).__name__}")
    return value


def as_int(value: Any, path: str, default: int | None = None,
           minimum: int | None = None) -> Any:
    """An int32, or `default` when absent. JSON booleans are not integers here."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput.at(path, f"must be an integer, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise InvalidInput.at(path, f"must be greater than or equal to {minimum}")
    if value > MAX_INT32:
        raise InvalidInput.at(path, f"must be less than or equal to {MAX_INT32}")
    if value < -MAX_INT32 - 1:
        raise InvalidInput.at(path, f"must be greater than or equal to {-MAX_INT32 - 1}")
    return value


def as_int64(value: Any, path: str, minimum: int | None = None) -> int | None:
    """An int64 (activeDeadlineSeconds, tolerationSeconds), or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput.at(path, f"must be an integer, got {type(value).__name__}")
    floor = -MAX_INT64 - 1 if minimum is None else minimum
    if value < floor:
        raise InvalidInput.at(path, f"must be greater than or equal to {floor}")
    if value > MAX_INT64:
        raise InvalidInput.at(path, f"must be less than or equal to {MAX_INT64}")
    return value


def as_bool(value: Any, path: str) -> bool | None:
    """A boolean, or None when absent (some fields mean something different when unset)."""
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidInput.at(path, f"must be a boolean, got {type(value).__name__}")
    return value


def as_str_map(value: Any, path: str) -> dict[str, str]:
    out = as_map(value, path)
    for k, v in out.items():
        if not isinstance(v, str):
            raise InvalidInput.at(f"{path}[{k}]", "must be a string")
    return out


def child(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    return as_map(obj.get(key), _where(path, key))


def items(obj: dict[str, Any], key: str, path: str) -> list[Any]:
    return as_list(obj.get(key), _where(path, key))


def string(obj: dict[str, Any], key: str, path: str, default: str = "") -> str:
    return as_str(obj.get(key), _where(path, key), default)


def integer(obj: dict[str, Any], key: str, path: str, *, minimum: int = 0) -> int | None:
    """An int32 field, or None when absent."""
    return as_int(obj.get(key), _where(path, key), None, minimum)


def boolean(obj: dict[str, Any], key: str, path: str) -> bool:
    return bool(as_bool(obj.get(key), _where(path, key)))


def string_map(obj: dict[str, Any], key: str, path: str) -> dict[str, str]:
    return as_str_map(obj.get(key), _where(path, key))


def controller_ref(meta: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true``, as ``metav1.GetControllerOf`` finds it."""
    for i, ref in enumerate(items(meta, "ownerReferences", path)):
        ref_path = f"{path}.ownerReferences[{i}]"
        ref = as_map(ref, ref_path)
        if boolean(ref, "controller", ref_path):
            string(ref, "apiVersion", ref_path)
            string(ref, "kind", ref_path)
            string(ref, "name", ref_path)
            string(ref, "uid", ref_path)
            return ref
    return None


def incremented(value: int, path: str) -> int:
    """One more than a counter the API server stores as an int32 (restarts, execution
    attempts, a Job's restarts). Upstream's Go adds one and wraps to -2147483648; the decider
    refuses the input instead, naming the counter, rather than write what no status holds."""
    if value >= MAX_INT32:
        raise InvalidInput.at(path, f"is {value}: one more does not fit the int32 it is stored "
                                    f"in (at most {MAX_INT32})")
    return value + 1


def clamp_int32(value: int) -> int:
    return max(-(2**31), min(MAX_INT32, value))
