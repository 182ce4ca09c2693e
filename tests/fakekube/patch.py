"""Patch formats the API server accepts: JSON merge patch, strategic merge patch, JSON patch."""

from __future__ import annotations

import copy
from typing import Any

# Merge keys of the strategic-merge lists the fake knows. A list not named here is replaced
# wholesale, which is what the real server does for lists without a patchMergeKey.
_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "conditions": "type",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "schedulingGates": "name",
}
# Lists the real server merges as sets of scalars.
_SET_LISTS = {"finalizers"}


class PatchError(Exception):
    """The patch cannot be applied; the server answers 422 (or 400 for malformed patches)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, field: str = "") -> Any:
    if isinstance(patch, dict):
        if patch.get("$patch") == "replace":
            return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
        if patch.get("$patch") == "delete":
            return None
        result = copy.deepcopy(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if key.startswith("$"):
                continue
            if value is None:
                result.pop(key, None)
            else:
                merged = strategic_merge_patch(result.get(key), value, key)
                if merged is None:
                    result.pop(key, None)
                else:
                    result[key] = merged
        return result
    if isinstance(patch, list):
        if field in _SET_LISTS and isinstance(target, list):
            out = list(target)
            out.extend(item for item in patch if item not in out)
            return out
        merge_key = _MERGE_KEYS.get(field)
        if merge_key is None or not isinstance(target, list):
            return [
                {k: v for k, v in item.items() if not k.startswith("$")}
                if isinstance(item, dict)
                else item
                for item in copy.deepcopy(patch)
            ]
        out = copy.deepcopy(target)
        for item in patch:
            if not isinstance(item, dict) or merge_key not in item:
                raise PatchError(f"map: {item!r} does not contain declared merge key: {merge_key}")
            index = next(
                (i for i, cur in enumerate(out) if cur.get(merge_key) == item[merge_key]), None
            )
            if item.get("$patch") == "delete":
                if index is not None:
                    out.pop(index)
                continue
            if index is None:
                out.append({k: v for k, v in copy.deepcopy(item).items() if k != "$patch"})
            else:
                out[index] = strategic_merge_patch(out[index], item, "")
        return out
    return copy.deepcopy(patch)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: add, remove, replace, test (what clients send in practice)."""
    if not isinstance(operations, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid operation {op!r}")
        parts = _pointer(op["path"])
        if not parts:
            raise PatchError("operations on the document root are not supported")
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.get(part)
            if parent is None:
                raise PatchError(f"path {op['path']!r} does not exist")
        last = parts[-1]
        kind = op["op"]
        if kind == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op.get("value"):
                raise PatchError(f"test failed at {op['path']!r}")
        elif kind == "remove":
            try:
                if isinstance(parent, list):
                    parent.pop(int(last))
                else:
                    del parent[last]
            except (KeyError, IndexError, ValueError) as exc:
                raise PatchError(f"path {op['path']!r} does not exist") from exc
        elif kind in ("add", "replace"):
            value = copy.deepcopy(op.get("value"))
            if isinstance(parent, list):
                if last == "-":
                    parent.append(value)
                elif kind == "add":
                    parent.insert(int(last), value)
                else:
                    parent[int(last)] = value
            else:
                if kind == "replace" and last not in parent:
                    raise PatchError(f"path {op['path']!r} does not exist")
                parent[last] = value
        else:
            raise PatchError(f"unsupported operation {kind!r}")
    return doc
