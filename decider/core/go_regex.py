"""Failure-message patterns, compiled and matched as Go's regexp does, with Google's RE2.

Upstream calls Go's `regexp.MatchString(pattern, message)` when a Job fails: the pattern is
compiled with Go's default flags (syntax.Perl: ClassNL, OneLine, PerlX, UnicodeGroups) and
searched for anywhere in the message; a pattern that does not compile is logged and never
matches. We refuse such a pattern at admission instead (a deliberate difference), and match the
rest with RE2 (PyPI google-re2): Go's regexp syntax is RE2's, and both run in linear time, where
Python's backtracking `re` took days on `(a+)+$` against a Job's failure message.

RE2's options (`_options`): its non-POSIX mode parses exactly Go's syntax.Perl flags (`^`/`$`
at text start/end unless `(?m)`, `.` without `\\n` unless `(?s)`, `[^a]` and `[[:space:]]`
matching `\\n`, Perl classes and `\\b` ASCII-only, Unicode `\\pN`), so posix_syntax stays off and
one_line, perl_classes and word_boundary (POSIX-mode switches) are left alone. longest_match off:
leftmost-first, as regexp.Compile (not CompilePOSIX). UTF-8, case-sensitive unless `(?i)`,
dot_nl and never_nl off (Go has no such modes). log_errors off: the core does no I/O.
max_mem 24 MiB: RE2 refuses a pattern whose program would not fit. `\\pL{1000}`, which Go
accepts, needs about 1.2 million RE2 instructions and 20 MiB while compiling (RE2's 8 MiB default
refuses it); 24 MiB takes it with room for the match wrapper below. Once compiled it holds about
6 MiB; the compiled patterns kept (`_compile`'s cache and re2's own) are bounded in number.

Where RE2 C++ and Go still differ, a pattern is refused here, naming the construct:
- `\\C` (any byte): RE2 accepts it, Go does not.
- Group names: RE2 accepts Unicode letters in `(?P<name>...)`, Go only `[A-Za-z0-9_]`.
- Repeat counts of a billion or more (`a{1000000000}`): RE2 reads them as literal text, Go
  refuses every count above 1000.
- Go refuses a parse tree deeper than 1000 levels ("expression nests too deeply") or a program
  above 128 MiB of its instructions ("expression too large"); RE2 has no depth limit and
  simplifies away empty repeats such as `(?:){1000}`. `_go_shape` bounds Go's depth and size from
  above (it does not model Go's merging of alternatives' common prefixes, only allows for it)
  and refuses a pattern whose bound exceeds Go's limit, so anything admitted fits Go's.
- RE2's program-size limit (max_mem) refuses some large patterns Go accepts.
- Go 1.25+ also accepts loose Unicode class names (`\\p{greek}`, `\\p{Letter}`, `\\p{ASCII}`,
  `\\p{Assigned}`, `\\p{Cn}`, `\\p{LC}`); RE2 refuses them, so they are refused here too.
- A lone surrogate in a pattern is not UTF-8: refused (Go reports invalid UTF-8).
Nested repeat products above 1000 (`(a{1000}){1000}`) are refused by both, as are
backreferences, lookaround, atomic groups, possessive quantifiers and `\\Z`.

Matching: Go tries a match at each rune boundary; RE2's unanchored search steps bytes, so an
empty match can land inside a multi-byte character, where `\\B` holds (`\\B` found a match in
"kéa" for RE2, none for Go). The matcher therefore compiles `(?s:.)*?(?:pattern)` anchored at
the start: `.` consumes whole runes, so every position tried is a rune boundary, as in Go.
Captures never change whether a match exists, so the matcher compiles with never_capture.
RE2's Unicode tables may be a version newer than the Go release's: characters added in between
can differ in `\\pL`-style classes and case folding; not chased.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import re2

# Go's limits (regexp/syntax/parse.go): repeat counts, tree height, program size in instructions.
GO_MAX_REPEAT = 1000
GO_MAX_HEIGHT = 1000
GO_MAX_SIZE = (128 << 20) // 40
RE2_MAX_MEM = 24 << 20

_NOT_GO = "is not supported by Go's regexp, which the JobSet controller uses"
# RE2's error codes in Go's wording, so a message reads like Go's own "error parsing regexp".
_GO_WORDING = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": (
        f"pattern too large for RE2's program limit ({RE2_MAX_MEM >> 20} MiB)"
    ),
}
# What a Perl or Python user meant by a fragment RE2 refused.
_PERL_GROUPS = {
    "(?=": "lookahead (?=...)",
    "(?!": "negative lookahead (?!...)",
    "(?<=": "lookbehind (?<=...)",
    "(?<!": "negative lookbehind (?<!...)",
    "(?>": "atomic group (?>...)",
    "(?#": "comment group (?#...)",
    "(?(": "conditional group (?(...)...)",
}
# A repeat in Go's form: decimal counts without leading zeros, then an optional lazy '?'.
_BRACE = re.compile(r"\{(0|[1-9][0-9]*)(?:(,)(0|[1-9][0-9]*)?)?\}\??")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_OCTAL = "01234567"
# Go's encoding/json (and so the API server) decodes a lone surrogate escape as U+FFFD.
_SURROGATES_TO_FFFD = {cp: 0xFFFD for cp in range(0xD800, 0xE000)}


def _options(*, captures: bool) -> re2.Options:
    opts = re2.Options()
    opts.posix_syntax = False  # RE2's Perl mode is Go's syntax.Perl (one_line etc. implied)
    opts.longest_match = False  # leftmost-first, as regexp.Compile
    opts.encoding = re2.Options.Encoding.UTF8  # Go matches runes of UTF-8 text
    opts.case_sensitive = True  # only (?i) folds
    opts.dot_nl = False  # only (?s) lets . match a newline
    opts.never_nl = False  # Go has no such mode
    opts.literal = False
    opts.never_capture = not captures
    opts.max_mem = RE2_MAX_MEM
    opts.log_errors = False  # the core does no I/O
    return opts


# Validation parses with captures, as Go does (group names are checked); matching without.
_PARSE_OPTIONS = _options(captures=True)
_MATCH_OPTIONS = _options(captures=False)


@dataclass(frozen=True, slots=True)
class GoRegexp:
    """An admitted pattern; `matches` answers as Go's regexp.MatchString(pattern, message)."""

    pattern: str
    _anchored: Any = field(repr=False)  # re2's compiled `(?s:.)*?(?:pattern)`

    def matches(self, message: str) -> bool:
        try:
            data = message.encode()
        except UnicodeEncodeError:
            # The server refuses such text; should one get here, read it as Go would.
            data = message.translate(_SURROGATES_TO_FFFD).encode()
        return self._anchored.match(data) is not None


def pattern_error(pattern: str) -> str | None:
    """The admission message for a pattern Go's regexp.Compile refuses or RE2 cannot match as Go
    does; None when it is accepted."""
    compiled = _compile(pattern)
    return compiled if isinstance(compiled, str) else None


def compile_go_regex(pattern: str) -> GoRegexp | None:
    """The matcher for an admitted pattern; None for one admission refuses (upstream treats a
    pattern that does not compile as never matching)."""
    compiled = _compile(pattern)
    return compiled if isinstance(compiled, GoRegexp) else None


@functools.lru_cache(maxsize=128)
def _compile(pattern: str) -> GoRegexp | str:
    why, open_quote = _refusal(pattern)
    if why is None:
        wrapped = "(?s:.)*?(?:" + pattern + ("\\E" if open_quote else "") + ")"
        try:
            return GoRegexp(pattern, re2.compile(wrapped, _MATCH_OPTIONS))
        except re2.error as err:
            # Only RE2's program limit can refuse the wrapper of a pattern that compiled alone.
            why = _go_message(_text(err), pattern)
    return f"invalid regular expression {_shown(pattern)}: {why}"


def _shown(pattern: str, limit: int = 200) -> str:
    # A refused pattern can be megabytes long; the message names its start.
    if len(pattern) <= limit:
        return repr(pattern)
    return f"{pattern[:limit]!r}... ({len(pattern)} characters)"


def _refusal(pattern: str) -> tuple[str | None, bool]:
    """Why the pattern is refused (None: accepted), and whether it ends inside an open \\Q."""
    try:
        pattern.encode()
    except UnicodeEncodeError as err:
        return f"invalid UTF-8: lone surrogate at offset {err.start}", False
    try:
        re2.compile(pattern, _PARSE_OPTIONS)
    except re2.error as err:
        return _go_message(_text(err), pattern), False
    return _go_shape(pattern)


def _text(err: re2.error) -> str:
    arg = err.args[0] if err.args else ""
    return arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)


def _go_message(re2_error: str, pattern: str) -> str:
    code, _, fragment = re2_error.partition(": ")
    message = f"{_GO_WORDING.get(code, code)}: `{fragment}`" if fragment else _GO_WORDING.get(
        code, code)
    hint = _hint(code, fragment, pattern)
    return f"{message} ({hint})" if hint else message


def _hint(code: str, fragment: str, pattern: str) -> str | None:
    if code == "invalid perl operator":
        for prefix, what in _PERL_GROUPS.items():
            if fragment.startswith(prefix):
                return f"{what} {_NOT_GO}"
        if fragment.startswith("(?P") and "(?P=" in pattern:
            return f"named backreference (?P=name) {_NOT_GO}"
        if fragment[2:3].isalpha():
            return ("Go's inline flags are i, m, s and U only; x, a, u, L and the like are not "
                    "supported by Go's regexp, which the JobSet controller uses")
    if code == "invalid escape sequence":
        if len(fragment) == 2 and fragment[1] in "123456789":
            return f"backreference {fragment} {_NOT_GO}"
        if fragment == "\\Z":
            return f"\\Z {_NOT_GO}: end of text is \\z (and $ outside (?m))"
    if code == "bad repetition operator" and fragment.endswith("+") and len(fragment) > 1:
        return f"possessive quantifier {fragment} {_NOT_GO}"
    if code == "invalid character class range" and fragment[1:2] in ("p", "P"):
        return ("RE2 knows Unicode classes by their exact names, such as \\pL, \\p{Lu} or "
                "\\p{Greek}; Go 1.25+ also accepts aliases and other spellings, refused here")
    return None


@dataclass(slots=True)
class _Node:
    """Go's parse tree for part of a pattern, as far as its limits see it: height and size."""

    height: int
    size: int
    literal: bool = False  # one unrepeated literal rune: Go merges a run of them into one node


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
                nodes[-1] = _Node(1, nodes[-1].size + 1, literal=True)
            else:
                nodes.append(item)
                merge = item.literal
        self.longest_branch = max(self.longest_branch, sum(i is not None for i in self.items))
        self.items = []
        if not nodes:
            self.branches.append(_Node(1, 1))  # Go's empty match
        elif len(nodes) == 1:
            self.branches.append(_Node(nodes[0].height, nodes[0].size))
        else:
            self.branches.append(_Node(1 + max(n.height for n in nodes),
                                       sum(n.size for n in nodes)))

    def close(self) -> _Node:
        self.end_branch()
        if len(self.branches) == 1:
            body = self.branches[0]
        else:
            # Go factors common prefixes out of alternatives: each round adds a concatenation
            # and an alternation, and strips one element shared by two or more branches.
            rounds = min(len(self.branches) - 1, self.longest_branch)
            body = _Node(1 + max(b.height for b in self.branches) + 4 * rounds,
                         sum(b.size for b in self.branches) + len(self.branches) - 1)
        return _Node(body.height + 1, body.size + 2) if self.capture else body

    def pop_item(self) -> _Node:
        while self.items:
            item = self.items.pop()
            if item is not None:
                return item
        return _Node(1, 1)


def _go_shape(pattern: str) -> tuple[str | None, bool]:
    """For a pattern RE2 accepted: why Go's parser would still refuse it (None: it would not),
    and whether it ends inside an open \\Q. Iterative: a pattern may nest thousands of groups."""
    groups = [_Group(capture=False)]
    open_quote = False
    i, n = 0, len(pattern)
    while i < n:
        ch, top = pattern[i], groups[-1]
        if ch == "\\" and pattern.startswith("\\Q", i):
            end = pattern.find("\\E", i + 2)
            quoted = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
            top.items.extend(_Node(1, 1, literal=True) for _ in quoted)
            if end < 0:
                open_quote = True
                break
            i = end + 2
        elif ch == "\\" and pattern.startswith("\\C", i):
            return "invalid escape sequence: `\\C` (any byte: RE2 accepts it, Go does not)", False
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
                return (f"invalid named capture: `{pattern[i:end + 1]}` (Go allows only ASCII "
                        "letters, digits and _ in group names)"), False
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
            top.items.append(_Node(sub.height + 1, sub.size + (2 if ch == "*" else 1)))
            i += 2 if pattern.startswith("?", i + 1) else 1
        elif ch == "{" and (brace := _BRACE.match(pattern, i)) is not None:
            lo, comma, hi = brace.groups()
            counts = [lo] if hi is None else [lo, hi]
            if any(len(c) > 4 or int(c) > GO_MAX_REPEAT for c in counts):
                return (f"invalid repeat count: `{brace.group(0)}` (Go refuses counts above "
                        f"{GO_MAX_REPEAT}; RE2 would read this one as literal text)"), False
            sub = top.pop_item()
            top.items.append(_repeat(sub, int(lo), int(hi) if hi else (-1 if comma else int(lo))))
            i = brace.end()
        else:
            top.items.append(_Node(1, 1, literal=ch not in ".^$"))
            i += 1
    while len(groups) > 1:  # not reached for a pattern RE2 accepted; kept total
        node = groups.pop().close()
        groups[-1].items.append(node)
    tree = groups[0].close()
    if tree.height > GO_MAX_HEIGHT:
        return (f"expression nests too deeply (Go refuses a parse tree deeper than "
                f"{GO_MAX_HEIGHT} levels; this one may reach {tree.height})"), False
    if tree.size > GO_MAX_SIZE:
        return (f"expression too large (Go refuses a program above {GO_MAX_SIZE} "
                f"instructions; this one may reach {tree.size})"), False
    return None, open_quote


def _repeat(sub: _Node, lo: int, hi: int) -> _Node:
    """x{lo,hi} (hi -1: unbounded), sized as Go's parser sizes it."""
    if hi == -1:
        size = 2 + sub.size if lo == 0 else 1 + lo * sub.size
    else:
        size = hi * sub.size + (hi - lo)
    return _Node(sub.height + 1, max(1, size))


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
    """The index just past the character class opening at i."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):
        j += 1  # a ']' first in the class is a member
    while pattern[j] != "]":
        if pattern.startswith("[:", j) and (named := pattern.find(":]", j + 2)) >= 0:
            j = named + 2
        elif pattern[j] == "\\" and pattern[j + 1] in "pPx" and pattern.startswith("{", j + 2):
            j = pattern.index("}", j) + 1
        else:
            j += 2 if pattern[j] == "\\" else 1
    return j + 1
