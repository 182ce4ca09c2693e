"""YAML read with the limits Kubernetes' own YAML decoder keeps.

PyYAML's safe loader builds an alias as a second reference to the anchored object, so a
600-byte "billion laughs" document loads at once and then expands when anything walks it: the
JSON round trip of `decider decide -f` took minutes and gigabytes before giving up. go-yaml,
behind kubectl and the API server, refuses "excessive aliasing" instead; this loader applies the
same budget. Deep nesting ran PyYAML's recursive composer out of stack (a RecursionError
traceback); it is refused at a depth no Kubernetes object comes near. A key set twice in one
mapping is refused (`cat a.yaml b.yaml` without a `---` between them had merged two JobSets into
one, the second's values over the first's).

Scalars are read and written as go-yaml v2 (kubectl's YAML, through sigs.k8s.io/yaml) reads
them, since a file must mean the same values to the decider as to kubectl: a plain scalar is
null, a bool, an int, a float or a string by go-yaml v2's resolve() (`y` and `on` are bools,
`1e2`, `0o17` and `1_000` numbers; `1:30`, `=` and timestamps stay text, where PyYAML's YAML 1.1
reads 90, fails, or builds a datetime), and a string go-yaml would read as anything else is
written quoted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

# Far above any Kubernetes object and the decider's --max-json-depth default (100), far below
# where PyYAML's recursive composer and constructor exhaust Python's stack (~400).
MAX_DEPTH = 200
# go-yaml's alias budget (decode.go): documents under 1,000 decoded nodes or 100 nodes reached
# through aliases are never policed; above, the share of nodes that may come from aliases
# tapers from 99% at 400,000 decoded nodes to 10% at 4,000,000.
_ALIASED_FLOOR, _DECODED_FLOOR = 100, 1000
_RATIO_LOW, _RATIO_HIGH = 400_000, 4_000_000


def allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"
# A plain scalar go-yaml v2 reads as a bool, an int or a float. A tag of its own, not !!bool,
# !!int or !!float, whose PyYAML constructors read text by YAML 1.1 (`y` is no bool to them,
# `0o17` no int): those keep serving explicitly tagged scalars as they always have.
_GO_SCALAR = "tag:go-yaml-v2:plain-scalar"


class _Loader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._root: yaml.Node | None = None

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        # Every plain scalar (implicit[0]: untagged or tagged "!", as go-yaml's plain_implicit)
        # is resolved by go-yaml v2's rules, none of PyYAML's implicit resolvers consulted.
        # A quoted one (implicit[0] false) is a string to both, as are PyYAML's defaults here.
        if kind is not yaml.ScalarNode or not implicit[0]:
            return super().resolve(kind, value, implicit)
        if value == "<<":  # go-yaml's merge key, as PyYAML's; a string anywhere but as a key
            return _MERGE
        resolved = go_yaml_v2_value(value)
        if resolved is None:
            return _NULL
        return _STR if isinstance(resolved, str) else _GO_SCALAR

    def compose_scalar_node(self, anchor: str | None) -> yaml.ScalarNode:
        event = self.peek_event()
        # "!" is YAML's non-specific tag: go-yaml v2 cannot resolve it and keeps the text
        # (`! 12` is "12"), where PyYAML would resolve it as if it were plain (12). Its
        # plain_implicit still makes `! <<` a merge key, as PyYAML's resolving does.
        if event.tag == "!" and event.value != "<<":
            event.tag = _STR
        return super().compose_scalar_node(anchor)

    def construct_go_scalar(self, node: yaml.ScalarNode) -> bool | int | float:
        # Only scalars resolve() found a bool, an int or a float are tagged so.
        return go_yaml_v2_value(node.value)

    def construct_merge_value(self, node: yaml.ScalarNode) -> str:
        # A plain `<<` anywhere but as a mapping key (`a: <<`, `[<<]`) is the string "<<" to
        # go-yaml v2 (PyYAML found no constructor for it and failed).
        return str(node.value)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Merge keys applied where they stand, as go-yaml v2 decodes a mapping: its keys in
        document order, a `<<` setting the merged mapping's keys over those before it and
        under those after it (`{a: 1, <<: {a: 2}}` is a: 2 to kubectl; PyYAML's YAML 1.1
        merge, like go-yaml v3, gave the mapping's own keys precedence wherever they stood).
        Of a list of mappings merged, the first wins, as in both. The merged pairs take the
        place of the `<<`, so the constructor's last-one-wins assignment gives go-yaml's
        values."""
        pairs: list[tuple[yaml.Node, yaml.Node]] = []
        seen: dict[tuple[type, Any], yaml.Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _VALUE:  # an explicit !!value key: a string, as PyYAML has it
                key_node.tag = _STR
            if key_node.tag != _MERGE:
                self._check_unique(node, key_node, seen)
                pairs.append((key_node, value_node))
                continue
            if isinstance(value_node, yaml.MappingNode):
                sources = [value_node]
            elif isinstance(value_node, yaml.SequenceNode):
                sources = list(reversed(value_node.value))  # go-yaml merges the last first
            else:
                raise ConstructorError("while constructing a mapping", node.start_mark,
                                       "expected a mapping or list of mappings for merging, "
                                       f"but found {value_node.id}", value_node.start_mark)
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise ConstructorError("while constructing a mapping", node.start_mark,
                                           "expected a mapping for merging, but found "
                                           f"{source.id}", source.start_mark)
                self.flatten_mapping(source)
                pairs.extend(source.value)
        node.value = pairs

    def _check_unique(self, node: yaml.MappingNode, key_node: yaml.Node,
                      seen: dict[tuple[type, Any], yaml.Node]) -> None:
        """A key written twice in one mapping is refused, as go-yaml's strict decoding and the
        API server's strict field validation refuse it; PyYAML, like kubectl's own YAML to JSON
        conversion, kept the last. Keys are compared as values (`1` and `0x1` are one key, the
        string "1" another). A merge (`<<`) may still set a key the mapping sets itself."""
        key = self.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault((type(key), key), key_node)
        except TypeError:  # a mapping or list as a key: the constructor refuses it
            return
        if first is key_node:
            return
        shown = json.dumps(key) if isinstance(key, str) else str(key)
        hint = ""
        if node is self._root and key in ("apiVersion", "kind"):
            hint = ": two objects run together? Separate YAML documents with a '---' line"
        raise ConstructorError(
            None, None, f"key {shown} already set in map (first at line "
            f"{first.start_mark.line + 1}){hint}", key_node.start_mark)

    def construct_document(self, node: yaml.Node) -> Any:
        self._root = node
        return super().construct_document(node)

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep",
                                    self.peek_event().start_mark)
            if self.check_event(yaml.AliasEvent):
                self._aliases += 1
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        self._aliases = 0
        node = super().compose_document()
        if self._aliases:  # without one, the document is a tree as written
            _check_expansion(node)
        return node


_Loader.add_constructor(_GO_SCALAR, _Loader.construct_go_scalar)
_Loader.add_constructor(_MERGE, _Loader.construct_merge_value)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes the document decodes to, as go-yaml does, without expanding it: a node
    met again is an alias, worth its whole (memoized) subtree. Walked with a stack, in
    document order, so an anchor is always met before its aliases."""
    finished: dict[int, tuple[int, int]] = {}  # id -> (nodes decoded, depth)
    open_nodes: set[int] = {id(root)}
    decoded, aliased = 1, 0
    # Frames: node, its children still to visit, nodes decoded under it so far, its depth.
    stack: list[tuple[yaml.Node, Iterator[yaml.Node], int, int]] = [
        (root, iter(_children(root)), 1, 1)]
    while stack:
        node, rest, count, depth = stack[-1]
        child = next(rest, None)
        if child is None:
            stack.pop()
            open_nodes.discard(id(node))
            finished[id(node)] = (count, depth)
            if stack:
                parent, prest, pcount, pdepth = stack[-1]
                stack[-1] = (parent, prest, pcount + count, max(pdepth, depth + 1))
            continue
        if id(child) in open_nodes:
            raise ComposerError(None, None, "an alias refers to a node that contains it",
                                child.start_mark)
        if id(child) in finished:
            size, below = finished[id(child)]
            decoded += size
            aliased += size
            if (aliased > _ALIASED_FLOOR and decoded > _DECODED_FLOOR
                    and aliased / decoded > allowed_alias_ratio(decoded)):
                raise ComposerError(None, None, "the document contains excessive aliasing "
                                    "(its aliases expand it past what Kubernetes accepts)",
                                    child.start_mark)
            if below + len(stack) > MAX_DEPTH:
                raise ComposerError(None, None, "aliases nest it more than "
                                    f"{MAX_DEPTH} levels deep", child.start_mark)
            stack[-1] = (node, rest, count + size, max(depth, below + 1))
            continue
        open_nodes.add(id(child))
        decoded += 1
        stack.append((child, iter(_children(child)), 1, 1))


def load_all(text: str) -> list[Any]:
    """Every document in `text`, as kubectl's go-yaml v2 reads it into interface{} (plain
    scalars resolved by go_yaml_v2_value, timestamps left as text, merge keys in document
    order), within the limits above; yaml.YAMLError (with the mark of the offending node)
    otherwise."""
    loader = _Loader(text)
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    finally:
        loader.dispose()


# go-yaml v2's resolve() (resolve.go, the same in go.yaml.in/yaml/v2 v2.4.2 that
# sigs.k8s.io/yaml, kubectl's YAML, decodes with): a plain scalar found in this map is its value,
# whatever its first character ("" is null).
_GO_WORDS: dict[str, bool | float | None] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE",
                     "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE",
                     "off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), float("nan")),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), float("inf")),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), float("-inf")),
}
# Otherwise, by its first character: a sign or digit tries strconv.ParseInt(text, 0, 64) with
# every underscore dropped (Go's base 0: 0x, 0b, 0o or a leading 0 for octal, both cases of the
# letter), then ParseUint for unsigned text, then yamlStyleFloat below.
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")  # yamlStyleFloat
# After those fail, a "0b" prefix is tried once more as ParseInt(rest, 2): a sign may follow
# it ("0b-101" is -5). Its "-0b" twin adds nothing base 0 has not read already.
_GO_SIGNED_BINARY = re.compile(r"0b([-+][01]+)")
# A leading '.': the scalar as it is (underscores kept) to strconv.ParseFloat, so Go's float
# syntax, an underscore only between digits.
_GO_DOT_FLOAT = re.compile(r"\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?")
_INT64 = range(-(2**63), 2**63)
_UINT64 = range(2**64)


def go_yaml_v2_value(text: str) -> Any:
    """The value go-yaml v2 gives `text`, a plain (unquoted, untagged) scalar, decoding into
    interface{} as kubectl does: None, a bool, an int, a float, or else `text` itself.

    A timestamp-like scalar is text to it too (go-yaml keeps a timestamp's text in an
    interface{}); one never reads as a number, as a timestamp starts "YYYY-". Nor do base 60
    numbers (`1:30`, 90 to YAML 1.1), which go-yaml left out on purpose.
    """
    if text in _GO_WORDS:
        return _GO_WORDS[text]
    if text[0] == ".":
        if _GO_DOT_FLOAT.fullmatch(text):
            return _go_float(text.replace("_", ""), text)
        return text
    if text[0] not in "+-0123456789":
        return text
    plain = text.replace("_", "")
    number = _GO_INT.fullmatch(plain)
    if number:
        digits = number[2]
        # Go's base 0 reads "017" as octal, where Python's wants "0o17".
        value = int(plain, 8 if digits[:1] == "0" and digits[1:2].isdigit() else 0)
        # ParseInt takes int64; ParseUint, unsigned text only, takes the rest of uint64.
        if value in _INT64 or (not number[1] and value in _UINT64):
            return value
    if _GO_FLOAT.fullmatch(plain):
        return _go_float(plain, text)
    binary = _GO_SIGNED_BINARY.fullmatch(plain)
    if binary and int(binary[1], 2) in _INT64:
        return int(binary[1], 2)
    return text


def _go_float(number: str, text: str) -> float | str:
    """`number` as strconv.ParseFloat reads it; out of float64's range (1e999) it fails there
    and the scalar stays `text`. Underflow (1e-999) is 0 to both."""
    value = float(number)
    return text if value in (float("inf"), float("-inf")) else value


def go_yaml_v2_reads_as_string(text: str) -> bool:
    """Whether go-yaml v2 reads `text`, written as a plain scalar, back as a string."""
    return isinstance(go_yaml_v2_value(text), str)


_GO_NON_STRING = "tag:go-yaml-v2:non-string"  # any tag but !!str: only the emitter sees it


class _Dumper(yaml.SafeDumper):
    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        tag = super().resolve(kind, value, implicit)
        # The emitter writes a string plain only when its plain form resolves back to !!str:
        # a string kubectl would read as a number or bool (1e3, y, 0o17, 08: plain text to
        # PyYAML's YAML 1.1) is told apart, so it is quoted. Done here rather than with
        # implicit resolvers because go-yaml's ranges are not regular (1e999 stays a string).
        if (kind is yaml.ScalarNode and implicit[0] and tag == _STR
                and not go_yaml_v2_reads_as_string(value)):
            return _GO_NON_STRING
        return tag


def dump(data: Any) -> str:
    """`data` as block YAML, keys in their order, that kubectl reads back to the same values."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False)
