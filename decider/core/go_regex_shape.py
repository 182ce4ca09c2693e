"""What Go's regexp parser refuses in a pattern RE2 C++ accepts (see go_regex for the list).

`outline` scans a pattern before RE2 sees it (a malformed one may make it raise IndexError or
ValueError: RE2 then says what is wrong), so that a pattern whose counted repeats expand it far
past the decider's budget is refused before RE2 spends time expanding them. Beside the
constructs RE2 takes and Go does not (`\\C`, non-ASCII group names, counts of a billion and
more), it rebuilds the outline of Go's parse tree to bound two of Go's limits from above
(regexp/syntax/parse.go): a tree deeper than 1000 levels, or a program of more than
128 MiB / 40 bytes instructions as Go sizes it. Where the outline cannot follow Go exactly it
errs high, so a pattern within the bounds is within Go's limits:
- every group and concatenation counts a level, though Go flattens a group into its parent;
- Go factors common prefixes out of alternatives, each round adding a concatenation and an
  alternation while stripping one leading element from two or more branches; the bound allows
  four levels per round, and as many rounds as the longest branch has elements (or the branches
  less one);
- sizes are taken before factoring, which only shrinks them.
Go's third limit, 32 million runes across classes and literals (26,000 `\\pL`), is not checked:
RE2's program limit (go_regex's max_mem) refuses patterns far smaller than that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

GO_MAX_REPEAT = 1000
GO_MAX_HEIGHT = 1000
GO_MAX_SIZE = (128 << 20) // 40  # Go's maxSize: 128 MiB of 40-byte instructions

# A repeat in Go's form: decimal counts without leading zeros, then an optional lazy '?'.
_BRACE = re.compile(r"\{(0|[1-9][0-9]*)(?:(,)(0|[1-9][0-9]*)?)?\}\??")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_OCTAL = "01234567"
# A run of characters that are literal wherever they stand (a '{' may open a repeat).
_PLAIN_RUN = re.compile(r"[^\\\[\](){}|*+?.^$]{2,}")


@dataclass(slots=True)
class _Node:
    """Go's parse tree for part of a pattern, as far as its limits see it: height and size."""

    height: int
    size: int
    # Unrepeated literal runes (`size` of them): Go merges a run of them into one node.
    literal: bool = False
    # Go's repeatIsValid: the least n for which the counted repeats nested in this node pass
    # (a{10} needs 10, (a{10}){20} 200); Go refuses a repeat that needs more than 1000.
    repeats: int = 0


# A flag group such as (?i) adds no node, but Go merges literals only under the same flags.
_FLAGS_CHANGE = None


@dataclass(slots=True)
class _Group:
    capture: bool
    items: list[_Node | None] = field(default_factory=list)
    branches: list[_Node] = field(default_factory=list)
    longest_branch: int = 0  # items in the longest branch

    def end_branch(self) -> None:
        nodes: list[_Node] = []
        merge = False
        for item in self.items:
            if item is None:
                merge = False
            elif item.literal and merge:
                nodes[-1] = _Node(1, nodes[-1].size + item.size, literal=True)
            else:
                nodes.append(item)
                merge = item.literal
        # Each literal rune counts as an element, as Go's factoring may strip them one by one.
        elements = sum(i.size if i.literal else 1 for i in self.items if i is not None)
        self.longest_branch = max(self.longest_branch, elements)
        self.items = []
        if not nodes:
            self.branches.append(_Node(1, 1))  # Go's empty match
        elif len(nodes) == 1:
            self.branches.append(_Node(nodes[0].height, nodes[0].size,
                                       repeats=nodes[0].repeats))
        else:
            self.branches.append(_Node(1 + max(n.height for n in nodes),
                                       sum(n.size for n in nodes),
                                       repeats=max(n.repeats for n in nodes)))

    def close(self) -> _Node:
        self.end_branch()
        if len(self.branches) == 1:
            body = self.branches[0]
        else:
            # Go factors common prefixes out of alternatives: each round adds a concatenation
            # and an alternation, and strips one element shared by two or more branches.
            rounds = min(len(self.branches) - 1, self.longest_branch)
            body = _Node(1 + max(b.height for b in self.branches) + 4 * rounds,
                         sum(b.size for b in self.branches) + len(self.branches) - 1,
                         repeats=max(b.repeats for b in self.branches))
        return _Node(body.height + 1, body.size + 2, repeats=body.repeats) if self.capture else body

    def pop_item(self) -> _Node:
        while self.items:
            item = self.items.pop()
            if item is not None:
                return item
        return _Node(1, 1)


@dataclass(frozen=True, slots=True)
class Outline:
    """What one scan of a pattern found: a construct Go refuses (`why`), whether the pattern
    ends inside an open \\Q, and Go's parse tree's height and program size, bounded from above
    (0 when `why` stopped the scan)."""

    why: str | None
    open_quote: bool
    height: int = 0
    size: int = 0


def go_shape(pattern: str) -> tuple[str | None, bool]:
    """For a pattern RE2 accepted: why Go's parser would still refuse it (None: it would not),
    and whether it ends inside an open \\Q."""
    return go_limits(outline(pattern))


def go_limits(shape: Outline) -> tuple[str | None, bool]:
    """`go_shape` for an outline already taken: its refusal, or Go's depth and size limits."""
    if shape.why is not None:
        return shape.why, False
    if shape.height > GO_MAX_HEIGHT:
        return (f"expression nests too deeply (Go refuses a parse tree deeper than "
                f"{GO_MAX_HEIGHT} levels; this one may reach {shape.height})"), False
    if shape.size > GO_MAX_SIZE:
        return (f"expression too large (Go refuses a program above {GO_MAX_SIZE} "
                f"instructions; this one may reach {shape.size})"), False
    return None, shape.open_quote


def outline(pattern: str) -> Outline:
    """One pass over the pattern, iterative: a pattern may nest thousands of groups."""
    groups = [_Group(capture=False)]
    open_quote = False
    i, n = 0, len(pattern)
    while i < n:
        ch, top = pattern[i], groups[-1]
        if ch == "\\" and pattern.startswith("\\Q", i):
            end = pattern.find("\\E", i + 2)
            quoted = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
            _literal_run(top, len(quoted))
            if end < 0:
                open_quote = True
                break
            i = end + 2
        elif ch == "\\" and pattern.startswith("\\C", i):
            return Outline("invalid escape sequence: `\\C` (any byte: RE2 accepts it, Go does "
                           "not)", False)
        elif ch == "\\":
            i, node = _escape(pattern, i)
            top.items.append(node)
        elif ch == "[":
            i = _class_end(pattern, i)
            top.items.append(_Node(1, 1))
        elif ch == "(" and pattern.startswith(("(?P<", "(?<"), i):
            start = i + (4 if pattern[i + 2] == "P" else 3)
            end = pattern.index(">", start)
            if not set(pattern[start:end]) <= _NAME_CHARS:
                return Outline(f"invalid named capture: `{pattern[i:end + 1]}` (Go allows only "
                               "ASCII letters, digits and _ in group names)", False)
            groups.append(_Group(capture=True))
            i = end + 1
        elif ch == "(" and pattern.startswith("(?", i):
            end = min(j for j in (pattern.find(":", i), pattern.find(")", i)) if j >= 0)
            if pattern[end] == ")":
                top.items.append(_FLAGS_CHANGE)
            else:
                groups.append(_Group(capture=False))
            i = end + 1
        elif ch == "(":
            groups.append(_Group(capture=True))
            i += 1
        elif ch == ")":
            node = groups.pop().close()
            groups[-1].items.append(node)
            i += 1
        elif ch == "|":
            top.end_branch()
            i += 1
        elif ch in "*+?":
            sub = top.pop_item()
            top.items.append(_Node(sub.height + 1, sub.size + (2 if ch == "*" else 1),
                                   repeats=sub.repeats))
            i += 2 if pattern.startswith("?", i + 1) else 1
        elif (run := _PLAIN_RUN.match(pattern, i)) is not None:
            _literal_run(top, run.end() - i)
            i = run.end()
        elif ch == "{" and (brace := _BRACE.match(pattern, i)) is not None:
            lo, comma, hi = brace.groups()
            counts = [lo] if hi is None else [lo, hi]
            if any(len(c) > 4 or int(c) > GO_MAX_REPEAT for c in counts):
                return Outline(f"invalid repeat count: `{brace.group(0)}` (Go refuses counts "
                               f"above {GO_MAX_REPEAT}; RE2 would read this one as literal text)",
                               False)
            sub = top.pop_item()
            node = _repeat(sub, int(lo), int(hi) if hi else (-1 if comma else int(lo)))
            if node.repeats > GO_MAX_REPEAT and (int(lo) >= 2 or int(hi or 0) >= 2):
                return Outline(f"invalid repeat count: `{brace.group(0)}` (Go refuses repeats "
                               f"nested to more than {GO_MAX_REPEAT} copies)", False)
            top.items.append(node)
            i = brace.end()
        else:
            top.items.append(_Node(1, 1, literal=ch not in ".^$"))
            i += 1
    while len(groups) > 1:  # not reached for a pattern RE2 accepted; kept total
        node = groups.pop().close()
        groups[-1].items.append(node)
    tree = groups[0].close()
    return Outline(None, open_quote, tree.height, tree.size)


def _literal_run(group: _Group, n: int) -> None:
    """n literal runes: the last one apart, as a repeat operator after it takes it alone."""
    if n > 1:
        group.items.append(_Node(1, n - 1, literal=True))
    if n > 0:
        group.items.append(_Node(1, 1, literal=True))


def _repeat(sub: _Node, lo: int, hi: int) -> _Node:
    """x{lo,hi} (hi -1: unbounded), sized as Go's parser sizes it."""
    if hi == -1:
        size = 2 + sub.size if lo == 0 else 1 + lo * sub.size
    else:
        size = hi * sub.size + (hi - lo)
    most = lo if hi == -1 else hi
    return _Node(sub.height + 1, max(1, size), repeats=most * max(1, sub.repeats) if most else 0)


def _escape(pattern: str, i: int) -> tuple[int, _Node]:
    """The end of the escape at i (outside a class) and its node."""
    c = pattern[i + 1]
    if c in "pPx":
        if pattern.startswith("{", i + 2):
            end = pattern.index("}", i + 2) + 1
        else:
            end = i + (3 if c != "x" else 4)
        return end, _Node(1, 1, literal=c == "x")
    if c in _OCTAL:
        end = i + 2
        while end < min(i + 4, len(pattern)) and pattern[end] in _OCTAL:
            end += 1
        return end, _Node(1, 1, literal=True)
    # \A \z \b \B are empty-width, \d \s \w and negations are classes; the rest are literals.
    return i + 2, _Node(1, 1, literal=c not in "AzbBdDsSwW")


def _class_end(pattern: str, i: int) -> int:
    """The index just past the character class opening at i, read as Go and RE2 read it: a ']'
    first is a member, `[:name:]` a POSIX class, and `x-y` a range whose end may be '['."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    first = True
    while first or pattern[j] != "]":
        first = False
        if pattern.startswith("[:", j) and (named := pattern.find(":]", j + 2)) >= 0:
            j = named + 2
            continue
        j, single = _class_member(pattern, j)
        if single and pattern.startswith("-", j) and pattern[j + 1] != "]":
            j, _ = _class_member(pattern, j + 1)
    return j + 1


def _class_member(pattern: str, j: int) -> tuple[int, bool]:
    """The end of the class member at j, and whether it is one character (may start a range)
    rather than a class such as \\pL or \\d."""
    if pattern[j] != "\\":
        return j + 1, True
    c = pattern[j + 1]
    if c in "pP":
        return (pattern.index("}", j) + 1 if pattern.startswith("{", j + 2) else j + 3), False
    if c in "dDsSwW":
        return j + 2, False
    if c == "x":
        return (pattern.index("}", j) + 1 if pattern.startswith("{", j + 2) else j + 4), True
    if c in _OCTAL:
        end = j + 2
        while end < min(j + 4, len(pattern)) and pattern[end] in _OCTAL:
            end += 1
        return end, True
    return j + 2, True
