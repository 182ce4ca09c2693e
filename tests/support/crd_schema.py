"""A CRD's structural schema as the API server applies it, enough to check our own CRD and to
validate JobSets against it offline: structural rules, pruning (unknown fields, reported rather
than dropped), types, enums, bounds, list keys, and defaulting.

CEL rules (x-kubernetes-validations) are not evaluated: they need a CEL implementation; the
webhook tests cover the admission checks they express.
"""

from __future__ import annotations

import copy
import re
from typing import Any

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def structural_errors(schema: dict[str, Any], path: str = "") -> list[str]:
    """Where a schema is not structural (apiextensions' rules that matter here): every node
    has a type, unless it preserves unknown fields or is int-or-string; `metadata` at the
    root is a plain object; defaults are not under an anyOf."""
    errors: list[str] = []
    node_type = schema.get("type")
    if node_type is None and not (schema.get("x-kubernetes-int-or-string")
                                  or schema.get("x-kubernetes-preserve-unknown-fields")):
        errors.append(f"{path or '<root>'}: type is required")
    if node_type not in (None, "object", "array", "string", "integer", "number", "boolean"):
        errors.append(f"{path}: unknown type {node_type!r}")
    if path == ".metadata" and set(schema) - {"type"}:
        errors.append(".metadata: may only say `type: object` at the root")
    if node_type == "array" and "items" not in schema:
        errors.append(f"{path}: an array needs items")
    if schema.get("x-kubernetes-list-type") == "map" and not schema.get(
            "x-kubernetes-list-map-keys"):
        errors.append(f"{path}: a map list needs x-kubernetes-list-map-keys")
    for key in schema.get("x-kubernetes-list-map-keys") or ():
        item = schema.get("items") or {}
        if key not in (item.get("required") or ()) and "default" not in (
                (item.get("properties") or {}).get(key) or {}):
            errors.append(f"{path}: list map key {key!r} must be required or defaulted")
    for name, sub in (schema.get("properties") or {}).items():
        errors.extend(structural_errors(sub, f"{path}.{name}"))
    if isinstance(schema.get("items"), dict):
        errors.extend(structural_errors(schema["items"], f"{path}[]"))
    if isinstance(schema.get("additionalProperties"), dict):
        errors.extend(structural_errors(schema["additionalProperties"], f"{path}{{}}"))
    if "default" in schema:
        errors.extend(f"{path}: default: {e}" for e in validate(schema["default"], schema, path))
    return errors


def validate(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """The errors of `value` against `schema`, fields the API server would prune included."""
    errors: list[str] = []
    node_type = schema.get("type")
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: null is not allowed"]
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, int | str):
            errors.append(f"{path}: must be an integer or a string")
        return errors
    if node_type == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{path}: must be an integer"]
        if schema.get("format") == "int32" and not -(2**31) <= value < 2**31:
            errors.append(f"{path}: out of the int32 range")
    elif node_type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return [f"{path}: must be a number"]
    elif node_type in _TYPES and not isinstance(value, _TYPES[node_type]):
        return [f"{path}: must be of type {node_type}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: must be at least {schema['minimum']}")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if schema.get("format") == "date-time" and not _DATE_TIME.fullmatch(value):
            errors.append(f"{path}: not a date-time")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        keys = schema.get("x-kubernetes-list-map-keys")
        seen: set[tuple[Any, ...]] = set()
        for i, item in enumerate(value):
            errors.extend(validate(item, schema.get("items") or {}, f"{path}[{i}]"))
            if keys and isinstance(item, dict):
                key = tuple(item.get(k) for k in keys)
                if key in seen:
                    errors.append(f"{path}[{i}]: duplicate list map key {key}")
                seen.add(key)
    if isinstance(value, dict) and node_type == "object":
        props = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value:
                errors.append(f"{path}.{name}: required")
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                errors.extend(validate(item, props[name], f"{path}.{name}"))
            elif isinstance(extra, dict):
                errors.extend(validate(item, extra, f"{path}.{name}"))
            elif not schema.get("x-kubernetes-preserve-unknown-fields") and not (
                    path == "" and name == "metadata") and path != ".metadata":
                errors.append(f"{path}.{name}: unknown field (the API server would prune it)")
    return errors


def apply_defaults(value: Any, schema: dict[str, Any]) -> Any:
    """A copy with the schema's defaults applied, as the API server does when it decodes an
    object: a missing property with a default gets it, and defaulting goes on inside it."""
    out = copy.deepcopy(value)
    _default(out, schema)
    return out


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default(value[name], sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])
