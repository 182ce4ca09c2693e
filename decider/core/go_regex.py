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
- Patterns over RE2's program limit (max_mem above), or longer than MAX_PATTERN_BYTES.
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
from dataclasses import dataclass, field
from typing import Any

import re2

from decider.core.go_regex_shape import go_shape

RE2_MAX_MEM = 24 << 20
# Compiling is linear in the pattern but not cheap: a Unicode class such as \pL costs RE2 about
# half a millisecond, so a long pattern of them costs seconds before it is known whether it fits.
# Real failure-message patterns are a few dozen characters; longer ones are refused.
MAX_PATTERN_BYTES = 8192

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
        size = len(pattern.encode())
    except UnicodeEncodeError as err:
        return f"invalid UTF-8: lone surrogate at offset {err.start}", False
    if size > MAX_PATTERN_BYTES:
        return (f"longer than {MAX_PATTERN_BYTES} bytes ({size}), the decider's limit on a "
                "failure-message pattern"), False
    try:
        re2.compile(pattern, _PARSE_OPTIONS)
    except re2.error as err:
        return _go_message(_text(err), pattern), False
    return go_shape(pattern)


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
