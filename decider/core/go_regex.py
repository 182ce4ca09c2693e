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

What a pattern may cost (a deliberate difference: Go's regexp has no such budget). Go compiles
a pattern when a Job fails; the decider compiles it in every worker process that decides the
JobSet, so an admitted pattern must compile in milliseconds. RE2's compile time grows with its
program: `\\pL` alone is ~1,200 instructions, `\\pL{999}` 1.2 million, compiled twice (checked,
then wrapped to match) in 0.8 s on a quiet machine and 5-7 s of a loaded worker, for each new
count sent. The failure-message patterns of one JobSet share one budget (pattern_budget.py
spends it in document order):
- BUDGET_INSTRUCTIONS of RE2 program in all, each pattern counting INSTRUCTIONS_PER_PATTERN more
  (compiling even `a` costs about that much, so many tiny patterns cannot add up to seconds);
- BUDGET_BYTES of pattern text, which bounds RE2's parsing;
- BUDGET_UNICODE_CLASSES `\\p`/`\\P` classes: RE2 builds each from hundreds of ranges while
  parsing, ~0.1 ms, even where the program it yields is small (`[\\pL\\PL]` is any character).
The size is checked before RE2 does the costly part: `go_regex_shape.outline` bounds what counted
repeats expand to (RE2 expands `a{0,1000}` into a thousand nodes before compiling), and the check
compiles with a small max_mem (_CHECK_MAX_MEM), so RE2 gives up on a larger program after about
the work an admitted one costs; the exact program size (RE2's `programsize`) is then compared.
The matcher is compiled with a larger max_mem (_MATCH_MAX_MEM): its program is known to be small
by then, and the rest is room for RE2's DFA state cache.

Where RE2 C++ and Go's regexp still differ, the pattern is refused here, naming the construct.
Go refuses these, RE2 would accept them (so refusing keeps "valid exactly as Go"):
- `\\C` (any byte).
- Group names outside `[A-Za-z0-9_]` (RE2 takes Unicode letters in `(?P<name>...)`).
- Repeat counts of a billion or more (`a{1000000000}`): RE2 reads them as literal text, Go
  refuses every count above 1000.
- A parse tree deeper than 1000 levels ("expression nests too deeply") or a program above
  128 MiB of Go's instructions ("expression too large"): RE2 has no depth limit and simplifies
  empty repeats such as `(?:){1000}` away. `go_regex_shape` bounds Go's depth and size from above
  (Go's factoring of common prefixes out of alternatives is allowed for, not modelled), so a
  pattern admitted fits Go's limits; one near them may be refused though Go would take it.
Go accepts these, RE2 refuses them or cannot match them as Go does (deliberate differences):
- Patterns over the decider's budget (above).
- Go 1.25+'s loose Unicode class names (`\\p{greek}`, `\\p{Letter}`, `\\p{ASCII}`,
  `\\p{Assigned}`, `\\p{Cn}`, `\\p{LC}`): RE2 knows only the exact names.
- A lone surrogate in a pattern: not UTF-8 (Go's JSON decoding would have made it U+FFFD).
Both refuse nested repeat products above 1000 (`(a{1000}){1000}`), backreferences, lookaround,
atomic groups, possessive quantifiers and `\\Z`; RE2's errors are reported in Go's wording.

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

from decider.core.go_regex_shape import Outline, go_limits, outline

# The budget shared by the failure-message patterns of one JobSet (see above). The costliest
# pattern it admits, (?i)\pL{3}, checked and compiled cold in 2 ms, and its first Decide through
# a worker took 5 ms, on 2 cores at load average 2.5 (bench/patterns_bench.py --budget).
BUDGET_INSTRUCTIONS = 4096
INSTRUCTIONS_PER_PATTERN = 64
BUDGET_BYTES = 8192
BUDGET_UNICODE_CLASSES = 16
# The most one pattern may compile to: the whole budget less its own fixed share.
MAX_INSTRUCTIONS = BUDGET_INSTRUCTIONS - INSTRUCTIONS_PER_PATTERN
# RE2 allows a program about max_mem / 12 instructions (two thirds of max_mem, 8 bytes each)
# as it compiles, before removing the no-ops it wrote (`[a-q][^u-z]{500}x` passes 5,400 on its
# way to 4,013): 128 KiB stops it near 10,900, so refusing costs at most a few budgets' work.
_CHECK_MAX_MEM = 128 << 10
_CHECK_LIMIT = 10_900
# The matcher's program is known to fit by then: this is room for RE2's DFA state cache (a state
# of a 4,000-instruction program is ~16 KB, and RE2 wants room for 20 of them). A hostile message
# that thrashes the cache sends RE2 to its NFA, linear in the message (bench/patterns_bench.py).
_MATCH_MAX_MEM = 4 << 20
# Go's size of a pattern, bounded from above by go_regex_shape.outline, past which RE2 is not
# asked: RE2 expands counted repeats (a{0,1000} into a thousand nodes) before compiling, ~0.15 us
# each, work max_mem does not stop (a{0,1000} x 700: 110 ms). Go's size is near RE2's program
# for most patterns, but counts alternatives and empty repeats that RE2 compiles to nothing:
# the margin admits those.
_EXPANSION_LIMIT = 20_000
BUDGET_TEXT = (
    f"a JobSet's failure-message patterns may together compile to at most "
    f"{BUDGET_INSTRUCTIONS:,} RE2 instructions ({INSTRUCTIONS_PER_PATTERN} counted per pattern), "
    f"with at most {BUDGET_BYTES:,} bytes and {BUDGET_UNICODE_CLASSES} Unicode classes, so that "
    "compiling them costs a decision milliseconds (the decider's limit: Go's regexp accepts "
    "this pattern)"
)

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
# Go's encoding/json (and so the API server) decodes a lone surrogate escape as U+FFFD.
_SURROGATES_TO_FFFD = {cp: 0xFFFD for cp in range(0xD800, 0xE000)}
# An escape pair, or quoted text (\Q...\E, where \p is literal): \p and \P name Unicode classes.
_ESCAPES = re.compile(r"\\Q.*?(?:\\E|\Z)|\\(.)", re.DOTALL)


def _options(*, captures: bool, max_mem: int) -> re2.Options:
    opts = re2.Options()
    opts.posix_syntax = False  # RE2's Perl mode is Go's syntax.Perl (one_line etc. implied)
    opts.longest_match = False  # leftmost-first, as regexp.Compile
    opts.encoding = re2.Options.Encoding.UTF8  # Go matches runes of UTF-8 text
    opts.case_sensitive = True  # only (?i) folds
    opts.dot_nl = False  # only (?s) lets . match a newline
    opts.never_nl = False  # Go has no such mode
    opts.literal = False
    opts.never_capture = not captures
    opts.max_mem = max_mem
    opts.log_errors = False  # the core does no I/O
    return opts


# Validation parses with captures, as Go does (group names are checked); matching without.
_PARSE_OPTIONS = _options(captures=True, max_mem=_CHECK_MAX_MEM)
_MATCH_OPTIONS = _options(captures=False, max_mem=_MATCH_MAX_MEM)


@dataclass(frozen=True, slots=True)
class GoRegexp:
    """An admitted pattern; `matches` answers as Go's regexp.MatchString(pattern, message)."""

    pattern: str
    instructions: int  # RE2's program size for the pattern, charged to its JobSet's budget
    _anchored: Any = field(repr=False)  # re2's compiled `(?s:.)*?(?:pattern)`

    def matches(self, message: str) -> bool:
        try:
            data = message.encode()
        except UnicodeEncodeError:
            # The server refuses such text; should one get here, read it as Go would.
            data = message.translate(_SURROGATES_TO_FFFD).encode()
        return self._anchored.match(data) is not None


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a pattern is refused, and the compile work spent finding out (in RE2 instructions:
    a pattern over the budget has cost about the whole budget)."""

    message: str
    instructions: int = 0


def pattern_error(pattern: str) -> str | None:
    """The admission message for a pattern Go's regexp.Compile refuses, RE2 cannot match as Go
    does, or over the budget on its own; None when it is accepted. A JobSet's patterns share
    the budget: admission and decisions go through pattern_budget."""
    compiled = check_pattern(pattern)
    return compiled.message if isinstance(compiled, Refused) else None


def compile_go_regex(pattern: str) -> GoRegexp | None:
    """The matcher for an admitted pattern; None for one admission refuses (upstream treats a
    pattern that does not compile as never matching)."""
    compiled = check_pattern(pattern)
    return compiled if isinstance(compiled, GoRegexp) else None


def unicode_classes(pattern: str) -> int:
    """How many Unicode classes (`\\pL`, `\\P{Greek}`...) the pattern names, inside or outside
    brackets; quoted text is not counted."""
    return sum(m.group(1) in ("p", "P") for m in _ESCAPES.finditer(pattern))


@functools.lru_cache(maxsize=128)
def check_pattern(pattern: str) -> GoRegexp | Refused:
    """The pattern on its own: its matcher, or why it is refused."""
    why, open_quote, spent = _refusal(pattern)
    if why is None:
        wrapped = "(?s:.)*?(?:" + pattern + ("\\E" if open_quote else "") + ")"
        try:
            return GoRegexp(pattern, spent, re2.compile(wrapped, _MATCH_OPTIONS))
        except re2.error as err:
            # Not expected: the pattern compiled alone, within a far smaller max_mem.
            why = _go_message(_text(err), pattern)
    return Refused(f"invalid regular expression {shown_pattern(pattern)}: {why}", spent)


def shown_pattern(pattern: str, limit: int = 200) -> str:
    # A refused pattern can be megabytes long; the message names its start.
    if len(pattern) <= limit:
        return repr(pattern)
    return f"{pattern[:limit]!r}... ({len(pattern)} characters)"


def too_large(what: str) -> str:
    return f"too large for the decider: {what}; {BUDGET_TEXT}"


def _refusal(pattern: str) -> tuple[str | None, bool, int]:
    """Why the pattern is refused (None: accepted), whether it ends inside an open \\Q, and its
    RE2 program size (or the compile work spent refusing it). The cheap checks come first, so
    that no pattern costs RE2 more than about the budget before it is refused."""
    try:
        size = len(pattern.encode())
    except UnicodeEncodeError as err:
        return f"invalid UTF-8: lone surrogate at offset {err.start}", False, 0
    if size > BUDGET_BYTES:
        return too_large(f"{size:,} bytes long"), False, 0
    if (classes := unicode_classes(pattern)) > BUDGET_UNICODE_CLASSES:
        return too_large(f"{classes} Unicode classes (\\p, \\P)"), False, 0
    try:
        shape: Outline | None = outline(pattern)
    except (IndexError, ValueError):
        shape = None  # malformed: RE2 says where, having parsed at most the budget's bytes
    if shape is not None and shape.why is not None:
        return shape.why, False, 0
    if shape is not None and shape.size > _EXPANSION_LIMIT:
        return too_large(f"it expands to about {shape.size:,} instructions"), False, 0
    try:
        program = re2.compile(pattern, _PARSE_OPTIONS).programsize
    except re2.error as err:
        text = _text(err)
        if text.startswith("pattern too large"):
            return (too_large(f"RE2 compiles it to more than {MAX_INSTRUCTIONS:,} instructions"),
                    False, BUDGET_INSTRUCTIONS)
        return _go_message(text, pattern), False, 0
    if program > MAX_INSTRUCTIONS:
        return too_large(f"RE2 compiles it to {program:,} instructions"), False, program
    # RE2 accepted it, so the outline cannot fail now (a failure here is a bug, and raises).
    why, open_quote = go_limits(shape if shape is not None else outline(pattern))
    return why, open_quote, program


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
