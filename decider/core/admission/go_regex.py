"""Checks that a failure-policy message pattern means the same to Python's `re` and Go's RE2.

Upstream compiles onJobFailureMessagePatterns with Go's regexp (RE2) at match time, logs a bad
pattern and treats it as never matching, so a typo silently disables a failure rule. We reject
such patterns at admission instead. Python's `re` accepts constructs RE2 rejects
(backreferences, lookaround, atomic groups, possessive quantifiers, conditionals, comments,
some flags), and reads a few spellings differently (`x{,3}` is a quantifier in Python but
literal text in Go); those are rejected too, so any pattern we accept compiles in both engines.
Some valid RE2 spellings that Python cannot parse (`\\z`, `\\Q...\\E`, `\\x{263a}`, `\\pL`,
`(?U)`) are rejected as well: conservative, and documented in DELIBERATE_DIFFERENCES.

Matching semantics still differ in two places callers must handle: Python's `$` also matches
before a final newline (use `\\Z`-free patterns or search with a fullmatch-aware helper), and
`\\d`, `\\w`, `\\s`, `\\b` are Unicode-aware unless compiled with re.ASCII (Go's are ASCII).
compile_go_regex() compiles with re.ASCII for that reason.
"""

from __future__ import annotations

import re

# Python-only group openers after "(?" and why RE2 refuses them.
_GROUP_PREFIXES: tuple[tuple[str, str], ...] = (
    ("<=", "lookbehind (?<=...)"),
    ("<!", "negative lookbehind (?<!...)"),
    ("=", "lookahead (?=...)"),
    ("!", "negative lookahead (?!...)"),
    ("P=", "named backreference (?P=name)"),
    ("(", "conditional group (?(...)...)"),
    (">", "atomic group (?>...)"),
    ("#", "comment group (?#...)"),
)
# Inline flags RE2 and Python share; Go also has U (ungreedy), which Python lacks.
_SHARED_FLAGS = frozenset("ims")
# RE2 refuses {n,m} bounds above this.
_RE2_MAX_REPEAT = 1000
_NOT_RE2 = "is not supported by Go's RE2 regular expressions, which the JobSet controller uses"


def re2_incompatibility(pattern: str) -> str | None:
    """Why `pattern` would not compile, or would mean something else, under Go's RE2; None if
    nothing Python-only was found. Scans escapes and groups outside character classes."""
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1] if i + 1 < n else ""
            if not in_class and nxt in "123456789" and nxt:
                return f"backreference \\{nxt} {_NOT_RE2}"
            if nxt == "Z":
                return f"\\Z {_NOT_RE2} (RE2 spells end of text \\z)"
            if nxt in ("u", "U", "N") and nxt:
                return f"escape \\{nxt} {_NOT_RE2} (RE2 spells it \\x{{...}})"
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            i += 1
            continue
        if ch == "[":
            in_class = True
            i += 1
            # A ']' right after '[' or '[^' is a literal member, in both engines.
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1
            continue
        if ch == "(" and pattern.startswith("(?", i):
            rest = pattern[i + 2 :]
            for prefix, what in _GROUP_PREFIXES:
                if rest.startswith(prefix):
                    return f"{what} {_NOT_RE2}"
            if not rest.startswith(("P<", "<", ":")):
                flags = re.match(r"[A-Za-z-]*", rest)
                used = set(flags.group(0)) - {"-"} if flags else set()
                if used - _SHARED_FLAGS:
                    bad = "".join(sorted(used - _SHARED_FLAGS))
                    return (
                        f"inline flag(s) '{bad}' {_NOT_RE2} (only i, m and s mean the same in both)"
                    )
        if ch in "*+?}" and i + 1 < n and pattern[i + 1] == "+":
            return f"possessive quantifier '{ch}+' {_NOT_RE2}"
        if ch == "{" and re.match(r"\{,\d+\}", pattern[i:]):
            return (
                "'{,n}' is a repetition in Python but literal text in Go's RE2; "
                "write '{0,n}' instead"
            )
        repeat = re.match(r"\{(\d+)(?:,(\d*))?\}", pattern[i:]) if ch == "{" else None
        # Compare by length first: int() refuses digit strings longer than 4300 characters.
        bounds = [g for g in repeat.groups() if g] if repeat else []
        if any(len(g) > 4 or int(g) > _RE2_MAX_REPEAT for g in bounds):
            return f"repeat count above {_RE2_MAX_REPEAT}, which Go's RE2 rejects"
        i += 1
    return None


def pattern_error(pattern: str) -> str | None:
    """The admission message for a bad pattern, or None when it is accepted."""
    why = re2_incompatibility(pattern)
    if why is not None:
        return f"invalid regular expression {pattern!r}: {why}"
    try:
        re.compile(pattern, re.ASCII)
    except (re.error, OverflowError, RecursionError, ValueError) as err:
        return f"invalid regular expression {pattern!r}: {err}"
    return None


def compile_go_regex(pattern: str) -> re.Pattern[str] | None:
    """Compile an admitted pattern the way closest to RE2 (ASCII classes); None if invalid."""
    if pattern_error(pattern) is not None:
        return None
    return re.compile(pattern, re.ASCII)
