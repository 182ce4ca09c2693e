"""Checks that a failure-policy message pattern means the same to Python's `re` and Go's RE2.

Upstream compiles onJobFailureMessagePatterns with Go's regexp (RE2) at match time, logs a bad
pattern and treats it as never matching, so a typo silently disables a failure rule. We reject
such patterns at admission instead. Python's `re` accepts constructs RE2 rejects
(backreferences, lookaround, atomic groups, possessive quantifiers, conditionals, comments,
some flags), and reads a few spellings differently (`x{,3}` is a quantifier in Python but
literal text in Go); those are rejected too, so any pattern we accept compiles in both engines.
Some valid RE2 spellings that Python cannot parse (`\\z`, `\\Q...\\E`, `\\x{263a}`, `\\pL`,
`(?U)`) are rejected as well: conservative, and documented in DELIBERATE_DIFFERENCES.

Matching semantics differ where compile_go_regex() rewrites the pattern before compiling it:
- Python's `$` (without the m flag) also matches before a final newline; RE2's only at the end
  of the text. Outside multi-line mode `$` becomes `\\Z`.
- `\\d`, `\\w`, `\\s` (and their negations) are Unicode-aware in Python and ASCII in RE2, and
  RE2's `\\s` is `[\\t\\n\\f\\r ]` (no `\\v`). They become explicit ASCII classes. Compiling
  the whole pattern with re.ASCII instead would also make `(?i)` fold ASCII letters only, where
  RE2 folds all of Unicode (`(?i)é` matches `É` in Go).
- `\\b`, `\\B` become `(?a:\\b)`, `(?a:\\B)`: ASCII word boundaries, as RE2's.
- A class holding a negated shorthand (`[^\\S\\d]`) is compiled with scoped ASCII `(?a:[...])`;
  there `\\S` also excludes `\\v`, and `(?i)` folds ASCII only: the one place left that differs.
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


# RE2's Perl classes (ASCII), spelled for the inside of a Python character class.
_CLASS_BODY = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r\\x20"}
_OUTSIDE = {
    **{k: f"[{v}]" for k, v in _CLASS_BODY.items()},
    **{k.upper(): f"[^{v}]" for k, v in _CLASS_BODY.items()},
    "b": "(?a:\\b)",
    "B": "(?a:\\B)",
}
_FLAGS = re.compile(r"\(\?([A-Za-z]*)(?:-([A-Za-z]*))?([:)])")


def _multiline_after(flags: re.Match[str], current: bool) -> bool:
    on, off = flags.group(1), flags.group(2) or ""
    if "m" in off:
        return False
    return True if "m" in on else current


def to_python(pattern: str) -> str:
    """Rewrite an admitted pattern so that Python's `re` (without re.ASCII) matches what RE2
    matches; see the module docstring for each rewrite."""
    out: list[str] = []
    # Multi-line mode per open group: a scoped (?m:...) or (?-m:...) lasts to its ')'.
    stack: list[bool] = [False]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            out.append(_OUTSIDE.get(nxt, ch + nxt))
            i += 2
        elif ch == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            body: list[str] = [pattern[i:j]]
            negated_shorthand = False
            while j < n and pattern[j] != "]":
                if pattern[j] == "\\":
                    nxt = pattern[j + 1 : j + 2]
                    negated_shorthand |= nxt in ("D", "W", "S")
                    body.append(_CLASS_BODY.get(nxt, "\\" + nxt))
                    j += 2
                else:
                    body.append(pattern[j])
                    j += 1
            body.append(pattern[j : j + 1])
            text = "".join(body)
            out.append(f"(?a:{text})" if negated_shorthand else text)
            i = j + 1
        elif ch == "(":
            flags = _FLAGS.match(pattern, i)
            if flags is not None and flags.group(3) == ")":
                stack[-1] = _multiline_after(flags, stack[-1])  # (?m): to the group's end
            elif flags is not None:
                stack.append(_multiline_after(flags, stack[-1]))
            else:
                stack.append(stack[-1])
            out.append(ch)
            i += 1
        elif ch == ")":
            if len(stack) > 1:
                stack.pop()
            out.append(ch)
            i += 1
        elif ch == "$" and not stack[-1]:
            out.append("\\Z")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def compile_go_regex(pattern: str) -> re.Pattern[str] | None:
    """Compile an admitted pattern so that it matches as RE2 would; None if admission would
    reject it (upstream treats a pattern that does not compile as never matching)."""
    if pattern_error(pattern) is not None:
        return None
    try:
        return re.compile(to_python(pattern))
    except (re.error, OverflowError, RecursionError, ValueError):
        # Not expected after pattern_error; never matching is upstream's answer for a bad one.
        return None
