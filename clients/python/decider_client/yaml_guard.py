"""YAML read with the limits Kubernetes' own YAML decoder keeps.

PyYAML's safe loader builds an alias as a second reference to the anchored object, so a
600-byte "billion laughs" document loads at once and then expands when anything walks it: the
JSON round trip of `decider decide -f` took minutes and gigabytes before giving up. go-yaml,
behind kubectl and the API server, refuses "excessive aliasing" instead; this loader applies the
same budget. Deep nesting ran PyYAML's recursive composer out of stack (a RecursionError
traceback); it is refused at a depth no Kubernetes object comes near.
"""

from __future__ import annotations

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


class _Loader(yaml.SafeLoader):
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
    """Every document in `text`, as yaml.safe_load_all gives them, within the limits above;
    yaml.YAMLError (with the mark of the offending node) otherwise."""
    loader = _Loader(text)
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    finally:
        loader.dispose()
