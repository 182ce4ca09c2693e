"""Reading Kubernetes objects from YAML or JSON, as `kubectl get -o yaml|json` prints them."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from decider_client import yaml_guard
from decider_client.errors import ObservationError


def load_objects(text: str, source: str = "input") -> list[dict[str, Any]]:
    """Every object in `text`: YAML documents, JSON values, or `kind: List`s of them.

    Raises ObservationError with a one-line reason when the text is not YAML/JSON objects.
    """
    from_json = _JSON_START.match(text) is not None
    try:
        docs = _json_values(text) if from_json else yaml_guard.load_all(text)
    except DuplicateField as exc:
        where = f"{source}: document {exc.document + 1}" if exc.documents > 1 else source
        raise ObservationError(where, f"duplicate field {json.dumps(exc.path)} (the API server "
                                      "refuses an object that sets a field twice under "
                                      "kubectl's default --validate=strict)") from None
    except json.JSONDecodeError as exc:
        raise ObservationError(source, f"not valid YAML or JSON at line {exc.lineno}, "
                                       f"column {exc.colno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ObservationError(source, f"not valid YAML or JSON{where}: {problem}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ObservationError(source, f"cannot be read: {exc}") from None
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ObservationError(f"{source}: document {i + 1}",
                                   "must be a Kubernetes object (a mapping)")
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List")
                                         and isinstance(doc.get("items"), list)):
            items = doc.get("items")
            if not isinstance(items, list):
                raise ObservationError(f"{source}: document {i + 1}.items", "must be a list")
            for j, item in enumerate(items):
                if not isinstance(item, dict):
                    raise ObservationError(f"{source}: document {i + 1}.items[{j}]",
                                           "must be a Kubernetes object (a mapping)")
                out.append(item)
        else:
            out.append(doc)
    # Round-trip through JSON so YAML-only values (dates, non-string keys) cannot reach anything
    # downstream in a form the API server would never send. A key YAML told apart from another
    # only by its type (`1` and `"1"`) is the same field once written as JSON.
    try:
        as_json = json.dumps(out, default=_reject)
        if from_json:  # every key a string already: nothing new can repeat
            return json.loads(as_json, parse_float=_as_sent)  # type: ignore[no-any-return]
        # One level deeper than read (the list of objects): the depth was checked then.
        return _json_values(as_json, _as_sent, limit_depth=False)[0]  # type: ignore[no-any-return]
    except DuplicateField as exc:
        index, _, path = exc.path.partition(".")
        raise ObservationError(f"{source}: object {int(index.strip('[]')) + 1}",
                               f"duplicate field {json.dumps(path)} once its keys are written "
                               "as JSON strings (a YAML key that is not a string)") from None
    except ValueError as exc:
        raise ObservationError(source, str(exc)) from None


# kubectl (k8s.io/apimachinery's YAMLOrJSONDecoder) reads a text that starts with `{` or `[`
# as JSON, where YAML 1.1 would misread numbers: `1e5` is a float to JSON, a string to PyYAML.
_JSON_START = re.compile(r"\s*[{\[]")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
# Strings (brackets in them do not count) and brackets: what nesting depth the text reaches.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{\[\]}]')


class DuplicateField(ValueError):
    """A JSON object that sets a field twice: the first such field, as a path."""

    def __init__(self, document: int, documents: int, path: str) -> None:
        super().__init__(path)
        self.document, self.documents, self.path = document, documents, path


class _Duplicated(dict):  # type: ignore[type-arg]
    """An object read from JSON that set `key` more than once (the last value kept)."""

    key: str


def _first_repeated(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    raise AssertionError("no key repeats")


def _duplicate_path(value: Any, path: str = "") -> str | None:
    """The path of the first field set twice, in document order, as the API server names it
    (`spec.template.spec.containers[0].imagePullPolicy`)."""
    if isinstance(value, dict):
        if isinstance(value, _Duplicated):
            return f"{path}.{value.key}" if path else value.key
        for key, item in value.items():
            if (found := _duplicate_path(item, f"{path}.{key}" if path else key)) is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if (found := _duplicate_path(item, f"{path}[{i}]")) is not None:
                return found
    return None


def _json_values(text: str, parse_float: Any = None, *, limit_depth: bool = True) -> list[Any]:
    """The JSON values in `text`, one after another as Go's json.Decoder reads a stream;
    json.JSONDecodeError, with the place, when it is not JSON or is nested more than
    yaml_guard.MAX_DEPTH levels deep (a node at that depth counted as the YAML reader does);
    DuplicateField when an object sets a field twice, as the API server's strict decoding
    (kubectl's default) refuses it."""
    deep = _too_deep_at(text) if limit_depth else None
    duplicated: list[_Duplicated] = []

    def read_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        marked = _Duplicated(obj)
        marked.key = _first_repeated(pairs)
        duplicated.append(marked)
        return marked

    decoder = json.JSONDecoder(object_pairs_hook=read_object, parse_float=parse_float)
    values: list[Any] = []
    pos = _JSON_SPACE.match(text).end()
    try:
        while pos < len(text):
            value, pos = decoder.raw_decode(text, pos)
            values.append(value)
            pos = _JSON_SPACE.match(text, pos).end()
    except json.JSONDecodeError as exc:
        # The first fault in the text is the one named, as the YAML reader does.
        if deep is None or exc.pos < deep:
            raise
    except RecursionError:  # json's parser recurses: only far past the depth found above
        deep = pos if deep is None else deep
    if deep is not None:
        raise json.JSONDecodeError(f"nested more than {yaml_guard.MAX_DEPTH} levels deep",
                                   text, deep)
    for i, value in enumerate(values if duplicated else ()):
        if (path := _duplicate_path(value)) is not None:
            raise DuplicateField(i, len(values), path)
    return values


def _too_deep_at(text: str) -> int | None:
    """Where the first node deeper than yaml_guard.MAX_DEPTH starts, if any: the first thing in
    a container MAX_DEPTH deep (the YAML reader counts every node, scalars and keys too)."""
    if text.count("{") + text.count("[") < yaml_guard.MAX_DEPTH:
        return None  # cannot nest that deep: spares the scan for most texts
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        if token[0] in ("{", "["):
            depth += 1
            if depth == yaml_guard.MAX_DEPTH:
                inside = _JSON_SPACE.match(text, token.end()).end()
                if text[inside:inside + 1] not in ("}", "]"):
                    return inside
        elif token[0] in ("}", "]"):
            depth -= 1
    return None


def _as_sent(text: str) -> float | int:
    """A number as kubectl sends it: it decodes the file into Go values and encodes them
    again, and Go writes a whole float64 below 1e21 without a fraction (`replicas: 1e2` and
    `2.0` go out as 100 and 2), which the API server then reads as an integer when it fits
    int64. Read as a float here, the decider would refuse what the cluster takes."""
    value = float(text)
    if value.is_integer() and -(2**63) <= value < 2**63:
        return int(value)
    return value


def _reject(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    raise ValueError(f"value of type {type(value).__name__} is not JSON")


def split_jobset(objects: list[dict[str, Any]], source: str = "input"
                 ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The one JobSet among `objects`, and the rest."""
    jobsets = [o for o in objects if o.get("kind") == "JobSet"]
    if len(jobsets) != 1:
        raise ObservationError(source, f"must hold exactly one JobSet, found {len(jobsets)}")
    return jobsets[0], [o for o in objects if o is not jobsets[0]]


def split_subject(objects: list[dict[str, Any]], source: str = "input"
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The one JobSet (or, without one, the one batch/v1 Job) among `objects`, and the rest."""
    jobsets = [o for o in objects if o.get("kind") == "JobSet"]
    jobs = [o for o in objects if o.get("kind") == "Job"
            and str(o.get("apiVersion", "")).startswith("batch/")]
    subject = jobsets if jobsets else jobs
    if len(subject) != 1:
        raise ObservationError(source, "must hold exactly one batch/v1 Job or one JobSet, "
                                       f"found {len(jobsets)} JobSet(s) and {len(jobs)} Job(s)")
    return subject[0], [o for o in objects if o is not subject[0]]


JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def jobset_key(jobset: dict[str, Any]) -> str:
    """`namespace/name`, as kubectl names an object (no namespace: `default`)."""
    meta = jobset.get("metadata") if isinstance(jobset.get("metadata"), dict) else {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def group_by_jobset(objects: list[dict[str, Any]], source: str = "input"
                    ) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each JobSet among `objects` with the objects that may be its own, in input order.

    What `kubectl get jobset,jobs,svc -A -o yaml` prints holds many JobSets. An object goes to
    the JobSet of its namespace that its controller reference names (by UID), else to the one
    its `jobset.sigs.k8s.io/jobset-name` label names (a Pod); an object tied to none (a Workload
    of someone else named like a JobSet's gang object, say) goes to every JobSet of its
    namespace, as the shim sends it: the decider itself keeps only what each JobSet controls,
    and the request only the pods labelled with its name (summarize.pod_of).
    """
    jobsets = [o for o in objects if o.get("kind") == "JobSet"]
    if not jobsets:
        raise ObservationError(source, "holds no JobSet")
    keys = [jobset_key(j) for j in jobsets]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ObservationError(source, f"holds JobSet {duplicates[0]} more than once")
    groups: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [(j, []) for j in jobsets]
    by_uid: dict[tuple[str, str], int] = {}
    by_name: dict[tuple[str, str], int] = {}
    for i, j in enumerate(jobsets):
        ns, name = keys[i].split("/", 1)
        meta = j.get("metadata") if isinstance(j.get("metadata"), dict) else {}
        if meta.get("uid"):
            by_uid[(ns, str(meta["uid"]))] = i
        by_name[(ns, name)] = i
    for obj in objects:
        if obj.get("kind") == "JobSet":
            continue
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        ns = meta.get("namespace") or "default"
        if not isinstance(ns, str):  # a list or a map here was a TypeError traceback
            raise ObservationError(source, f"{obj.get('kind') or 'an object'} "
                                           f"{meta.get('name')!r}: metadata.namespace: must be "
                                           f"a string, got {type(ns).__name__}")
        owner = _controller_uid(meta)
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        target = by_uid.get((ns, owner)) if owner else None
        if target is None and labels.get(JOBSET_NAME_LABEL):
            # Pods: their controller is a Job, their label names the JobSet.
            target = by_name.get((ns, str(labels[JOBSET_NAME_LABEL])))
        if target is not None:
            groups[target][1].append(obj)
            continue
        for i, key in enumerate(keys):
            if key.split("/", 1)[0] == ns:
                groups[i][1].append(obj)
    return groups


def _controller_uid(meta: dict[str, Any]) -> str:
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return ""
