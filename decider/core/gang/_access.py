"""Typed reads from ``kubectl get -o json`` shaped dicts.

Every read names the full field path, so malformed input becomes an ``InvalidInput`` that says
where the problem is instead of a ``KeyError``/``TypeError`` from deep inside the planner.
"""

from __future__ import annotations

from typing import Any

from decider.core.errors import InvalidInput

_INT32_MAX = 2**31 - 1


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


def child(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    return as_map(obj.get(key), f"{path}.{key}" if path else key)


def items(obj: dict[str, Any], key: str, path: str) -> list[Any]:
    return as_list(obj.get(key), f"{path}.{key}" if path else key)


def string(obj: dict[str, Any], key: str, path: str, default: str = "") -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        where = f"{path}.{key}" if path else key
        raise InvalidInput.at(where, f"must be a string, got {type(value).__name__}")
    return value


def integer(obj: dict[str, Any], key: str, path: str, *, minimum: int = 0) -> int | None:
    """An int32 field, or None when absent. JSON booleans are not integers here."""
    value = obj.get(key)
    if value is None:
        return None
    where = f"{path}.{key}" if path else key
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput.at(where, f"must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise InvalidInput.at(where, f"must be greater than or equal to {minimum}")
    if value > _INT32_MAX:
        raise InvalidInput.at(where, f"must fit in int32 (at most {_INT32_MAX})")
    return value


def boolean(obj: dict[str, Any], key: str, path: str) -> bool:
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        where = f"{path}.{key}" if path else key
        raise InvalidInput.at(where, f"must be a boolean, got {type(value).__name__}")
    return value


def string_map(obj: dict[str, Any], key: str, path: str) -> dict[str, str]:
    where = f"{path}.{key}" if path else key
    value = as_map(obj.get(key), where)
    for k, v in value.items():
        if not isinstance(v, str):
            raise InvalidInput.at(f"{where}[{k}]", "must be a string")
    return value


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


def clamp_int32(value: int) -> int:
    return max(-(2**31), min(_INT32_MAX, value))
