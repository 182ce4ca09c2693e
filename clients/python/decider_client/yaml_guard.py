"""YAML read with the limits Kubernetes' own YAML decoder keeps.

PyYAML's safe loader builds an alias as a second reference to the anchored object, so a
600-byte "billion laughs" document loads at once and then expands when anything walks it: the
JSON round trip of `decider decide -f` took minutes and gigabytes before giving up. go-yaml,
behind kubectl and the API server, refuses "excessive aliasing" instead; this loader applies the
same budget. Deep nesting ran PyYAML's recursive composer out of stack (a RecursionError
traceback); it is refused at a depth no Kubernetes object comes near.

Scalars are read and written as go-yaml v2 (kubectl's YAML) reads them, where PyYAML's YAML 1.1
differs in a way that changes a value: a timestamp-like scalar stays the text it is, and a
string go-yaml would read as a number or bool is written quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.composer import ComposerError

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


_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):
    # go-yaml v2, decoding into interface{} as kubectl does, keeps a timestamp-like scalar as
    # its text; PyYAML's datetime would come back re-spelled ("2026-01-01 10:00:00" as
    # "2026-01-01T10:00:00"). An explicit !!timestamp tag still makes a datetime.
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

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
    """Every document in `text`, as yaml.safe_load_all gives them (timestamps left as text),
    within the limits above; yaml.YAMLError (with the mark of the offending node) otherwise."""
    loader = _Loader(text)
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    finally:
        loader.dispose()


# go-yaml v2's resolve(): these words, then by the first character ('+', '-', a digit, '.') an
# int (strconv.ParseInt/ParseUint, base 0, underscores dropped) or a float.
_GO_WORDS = frozenset((
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
    "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
    "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN",
    ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"))
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# After a leading '.', go-yaml hands the scalar as it is to strconv.ParseFloat: Go's float
# syntax, underscores only between digits.
_GO_DOT_FLOAT = re.compile(r"\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?")


def go_yaml_v2_reads_as_string(text: str) -> bool:
    """Whether go-yaml v2 reads `text`, written as a plain scalar, back as a string."""
    if not text or text in _GO_WORDS:  # "" is null
        return False
    if text[0] == ".":
        return not (_GO_DOT_FLOAT.fullmatch(text) and _finite(text))
    if text[0] not in "+-0123456789":
        return True
    plain = text.replace("_", "")
    number = _GO_INT.fullmatch(plain)
    if number:
        value = int(plain, 8 if plain.lstrip("+-")[1:2].isdigit() else 0)
        # ParseInt takes int64; ParseUint, unsigned text only, takes the rest of uint64.
        if -(2**63) <= value < 2**63 or (not number[1] and value < 2**64):
            return False
    # Out of range, Go's ParseFloat fails and the scalar stays a string.
    return not (_GO_FLOAT.fullmatch(plain) and _finite(plain))


def _finite(text: str) -> bool:
    return abs(float(text)) != float("inf")


_STR = "tag:yaml.org,2002:str"
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
