"""Failure-message patterns are valid exactly when Go's regexp.Compile accepts them (less the
documented RE2-vs-Go refusals) and match as Go's regexp.MatchString(pattern, message) does.

Each expected value is read off Go's documented syntax (regexp/syntax doc.go; parse.go for the
limits): an unanchored search, with Go's default flags (OneLine: `^`/`$` at text start and end
unless (?m); `.` without newline unless (?s); `[^a]` and `[[:space:]]` may match newline; Perl
classes and `\\b` ASCII-only; Unicode `\\pN` classes; Unicode simple case folding under (?i)).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from decider.core import constants as c
from decider.core.admission import validate_create
from decider.core.go_regex import compile_go_regex, pattern_error
from decider.core.go_regex_shape import GO_MAX_HEIGHT, go_shape
from support.builders import condition, job, jobset, kinds, rjob, run, service
from support.waiting import HANG_GUARD

ROOT = Path(__file__).resolve().parents[2]
ARABIC_INDIC_THREE = "\u0663"
KELVIN = "\u212a"
# The Job controller's message when a Job runs out of retries.
BACKOFF = "Job has reached the specified backoff limit"

MATCH_ROWS = [
    # POSIX classes: ASCII sets, usable only inside a bracket expression.
    pytest.param(r"[[:digit:]]+", "exit code 42", True, id="posix/digit"),
    pytest.param(r"[[:digit:]]+", "grid]", False, id="posix/digit-is-not-a-set-then-bracket"),
    pytest.param(r"^[[:digit:]]+$", "42", True, id="posix/digit-anchored"),
    pytest.param(r"[[:^alpha:]]", "abc", False, id="posix/negated-alpha-all-letters"),
    pytest.param(r"[[:^alpha:]]", "ab1", True, id="posix/negated-alpha-finds-digit"),
    pytest.param(r"[^[:alpha:]]", "ab", False, id="posix/in-negated-class"),
    pytest.param(r"[[:space:]]$", "job\v", True, id="posix/space-includes-vertical-tab"),
    pytest.param(r"[[:word:]]+$", "x_1", True, id="posix/word"),
    pytest.param(r"^[[:word:]]+$", "a-b", False, id="posix/word-excludes-hyphen"),
    pytest.param(r"[[:upper:]]", "abc", False, id="posix/upper"),
    pytest.param(r"(?i)[[:upper:]]", "abc", True, id="posix/upper-folded-by-i"),
    pytest.param(r"^[[:xdigit:]]{2}$", "1F", True, id="posix/xdigit"),
    pytest.param(r"[[:punct:]]", "a]", True, id="posix/punct"),
    pytest.param(r"[[:alpha:]]", "\u00e9", False, id="posix/alpha-is-ascii-only"),
    # Unicode classes.
    pytest.param(r"\pL+$", "job x", True, id="unicode/pL-one-letter-name"),
    pytest.param(r"^\pL+$", "job x", False, id="unicode/pL-excludes-space"),
    pytest.param(r"\p{Greek}", "\u03b1\u03b2", True, id="unicode/script-greek"),
    pytest.param(r"\p{Greek}", "abc", False, id="unicode/script-greek-not-latin"),
    pytest.param(r"\PL", "abc", False, id="unicode/PL-negated"),
    pytest.param(r"\PL", "ab1", True, id="unicode/PL-finds-digit"),
    pytest.param(r"\p{^Greek}", "\u03b1", False, id="unicode/caret-negation"),
    pytest.param(r"\P{^Greek}", "\u03b1", True, id="unicode/double-negation"),
    pytest.param(r"\pN", ARABIC_INDIC_THREE, True, id="unicode/pN-is-not-ascii-only"),
    pytest.param(r"^[\p{Lu}\d]$", "\u00c9", True, id="unicode/class-in-brackets"),
    pytest.param(r"^.$", "\u00e9", True, id="unicode/dot-is-one-rune"),
    pytest.param("^.{3}$", "\u65e5\u672c\u8a9e", True, id="unicode/dot-counts-runes"),
    # Quoting and escapes.
    pytest.param(r"\Q.*\E", "a.*b", True, id="quote/QE-literal"),
    pytest.param(r"^\Q.*\E$", "abc", False, id="quote/QE-not-a-wildcard"),
    pytest.param(r"\Qa)b", "xa)b", True, id="quote/Q-to-end-of-pattern"),
    pytest.param(r"^\x41$", "A", True, id="escape/hex-two-digits"),
    pytest.param(r"^\x{41}$", "A", True, id="escape/hex-braces"),
    pytest.param(r"\x{1F600}", "ok \U0001f600", True, id="escape/hex-astral"),
    pytest.param(r"^\101$", "A", True, id="escape/octal-three-digits"),
    pytest.param(r"a\0b", "a\x00b", True, id="escape/octal-zero"),
    pytest.param(r"\.", "exit", False, id="escape/punctuation-is-literal"),
    pytest.param(r"a\tb", "a\tb", True, id="escape/tab"),
    # Anchors and empty-width assertions.
    pytest.param("^job", "a job", False, id="anchor/caret-is-text-start"),
    pytest.param(r"\Ajob", "job x", True, id="anchor/A"),
    pytest.param(r"failed\z", "job failed", True, id="anchor/z"),
    pytest.param(r"failed\z", "job failed\n", False, id="anchor/z-not-before-newline"),
    pytest.param("failed$", "job failed\n", False, id="anchor/dollar-not-before-final-newline"),
    pytest.param("failed$", "job failed", True, id="anchor/dollar-at-end"),
    pytest.param("(?m)failed$", "job failed\nretrying", True, id="flag/m-dollar-at-line-end"),
    pytest.param("(?m)^retrying", "job failed\nretrying", True, id="flag/m-caret-at-line-start"),
    pytest.param("^retrying", "job failed\nretrying", False, id="anchor/caret-not-after-newline"),
    pytest.param("(?m:failed$)", "job failed\nretrying", True, id="flag/m-scoped"),
    pytest.param(r"\bfoo\b", "\u00e9foo", True, id="perl/b-is-ascii-boundary"),
    pytest.param(r"\bfoo\b", "_foo", False, id="perl/b-underscore-is-word"),
    pytest.param(r"\Boo", "foo", True, id="perl/B-inside-word"),
    pytest.param(r"\B", "k\u00e9a", False, id="perl/B-only-at-rune-boundaries"),
    # Perl classes are ASCII-only.
    pytest.param(r"^exit \d$", "exit 3", True, id="perl/d"),
    pytest.param(r"^exit \d$", f"exit {ARABIC_INDIC_THREE}", False, id="perl/d-ascii-only"),
    pytest.param(r"[\d]x", f"{ARABIC_INDIC_THREE}x", False, id="perl/d-in-class-ascii-only"),
    pytest.param(r"\w+", "\u00e9\u00e8", False, id="perl/w-ascii-only"),
    pytest.param(r"a\sb", "a\vb", False, id="perl/s-excludes-vertical-tab"),
    pytest.param(r"a\sb", "a\tb", True, id="perl/s-tab"),
    pytest.param(r"a\Sb", "a\vb", True, id="perl/S-includes-vertical-tab"),
    # Flags.
    pytest.param("(?i)oom", "OOMKilled", True, id="flag/i"),
    pytest.param("oom", "OOMKilled", False, id="flag/case-sensitive-by-default"),
    pytest.param("(?i:oom)killed", "OOMkilled", True, id="flag/i-scoped"),
    pytest.param("(?i:oom)killed", "OOMKILLED", False, id="flag/i-scope-ends"),
    pytest.param("(?i)\u00e9chec", "\u00c9CHEC", True, id="flag/i-folds-unicode"),
    pytest.param("(?i)\u03c3", "\u03c2", True, id="flag/i-final-sigma"),
    pytest.param("(?i)k", KELVIN, True, id="flag/i-kelvin-sign"),
    pytest.param("(?s)a.b", "a\nb", True, id="flag/s-dot-matches-newline"),
    pytest.param("a.b", "a\nb", False, id="flag/dot-excludes-newline"),
    pytest.param("a[^x]b", "a\nb", True, id="class/negated-matches-newline"),
    pytest.param("(?U)^a+$", "aaa", True, id="flag/U-ungreedy"),
    pytest.param("(?i)(?-i)a", "A", False, id="flag/clear"),
    # Groups.
    pytest.param(r"(?P<code>\d+)$", "exit 42", True, id="group/named-P"),
    pytest.param(r"(?<code>\d+)$", "exit 42", True, id="group/named-angle"),
    pytest.param("(?:OOM|Evicted)", "Pod Evicted", True, id="group/non-capturing-alternation"),
    pytest.param("a|", "b", True, id="group/empty-alternative"),
    pytest.param("", "anything", True, id="empty-pattern"),
    # Repetition.
    pytest.param("^a{1000}$", "a" * 1000, True, id="repeat/1000-is-allowed"),
    pytest.param("^a{1000}$", "a" * 999, False, id="repeat/1000-exact"),
    pytest.param("x{,3}", "x{,3}", True, id="repeat/open-lower-bound-is-literal"),
    pytest.param("x{,3}", "xx", False, id="repeat/open-lower-bound-not-a-repeat"),
    pytest.param("a{01}", "a{01}", True, id="repeat/leading-zero-is-literal"),
    pytest.param("^(?:ab){2,}$", "ababab", True, id="repeat/at-least"),
    # Go's limits: a parse tree at most 1000 deep; width alone is no depth.
    pytest.param("(" * 999 + ")" * 999, "x", True, id="limit/999-nested-captures"),
    pytest.param("(?:" * 999 + ")*" * 999, "x", True, id="limit/999-nested-stars"),
    pytest.param("(" + "|" * 5000 + ")", "x", True, id="limit/wide-alternation-is-shallow"),
    pytest.param("exit code 4[0-9]", "container exit code 42", True, id="search/unanchored"),
    pytest.param(f"{BACKOFF}$", BACKOFF, True, id="search/job-controller-message"),
]

REFUSED_ROWS = [
    pytest.param(r"(a)\1", "backreference \\1", id="perl/backreference"),
    pytest.param("(?P<x>a)(?P=x)", "named backreference", id="perl/named-backreference"),
    pytest.param("evicted(?=x)", "lookahead (?=...)", id="perl/lookahead"),
    pytest.param("(?!x)y", "negative lookahead", id="perl/negative-lookahead"),
    pytest.param("(?<=x)y", "lookbehind (?<=...)", id="perl/lookbehind"),
    pytest.param("(?<!x)y", "negative lookbehind", id="perl/negative-lookbehind"),
    pytest.param("(?>a)", "atomic group", id="perl/atomic-group"),
    pytest.param("a*+", "possessive quantifier *+", id="perl/possessive-star"),
    pytest.param("a{2}+", "possessive quantifier", id="perl/possessive-repeat"),
    pytest.param("(?(1)a|b)", "conditional group", id="perl/conditional"),
    pytest.param("(?#note)a", "comment group", id="perl/comment"),
    pytest.param("(?x) a", "inline flags are i, m, s and U", id="perl/flag-x"),
    pytest.param(r"end\Z", "\\Z", id="perl/capital-Z"),
    pytest.param(r"\C", "`\\C` (any byte", id="re2-only/C-any-byte"),
    pytest.param("(?P<\u00e9>x)", "invalid named capture", id="re2-only/unicode-group-name"),
    pytest.param("a{1000000000}", "invalid repeat count", id="re2-only/billion-count-literal"),
    pytest.param("a{1001}", "invalid repeat count: `{1001}`", id="repeat/1001"),
    pytest.param("a{2,1001}", "invalid repeat count", id="repeat/max-1001"),
    pytest.param("(a{1000}){1000}", "invalid repeat count", id="repeat/nested-product"),
    pytest.param("a{3,2}", "invalid repeat count", id="repeat/min-above-max"),
    pytest.param("a**", "invalid nested repetition operator", id="repeat/stacked"),
    pytest.param("*a", "missing argument to repetition operator", id="repeat/no-argument"),
    pytest.param(r"\q", "invalid escape sequence: `\\q`", id="escape/unknown-letter"),
    pytest.param(r"\8", "invalid escape sequence", id="escape/eight"),
    pytest.param(r"\x{110000}", "invalid escape sequence", id="escape/above-max-rune"),
    pytest.param(r"[\b]", "invalid escape sequence", id="escape/b-in-class"),
    pytest.param("a\\", "trailing backslash", id="escape/trailing-backslash"),
    pytest.param("(unclosed", "missing closing )", id="parens/unclosed"),
    pytest.param("a)", "unexpected )", id="parens/unbalanced-close"),
    pytest.param("[oom", "missing closing ]", id="class/unclosed"),
    pytest.param("[z-a]", "invalid character class range", id="class/reversed-range"),
    pytest.param("[[:foo:]]", "invalid character class range", id="class/unknown-posix"),
    pytest.param(r"\p{Klingon}", "invalid character class range", id="unicode/unknown-script"),
    pytest.param(r"\p{greek}", "exact names", id="unicode/go125-loose-name"),
    pytest.param(r"\p{Letter}", "exact names", id="unicode/go125-alias"),
    pytest.param("oom\udc80", "invalid UTF-8", id="utf8/lone-surrogate"),
    pytest.param("(" * (GO_MAX_HEIGHT + 1) + ")" * (GO_MAX_HEIGHT + 1), "nests too deeply",
                 id="limit/nesting-depth"),
    pytest.param("(?:" * 1000 + ")*" * 1000, "nests too deeply", id="limit/nested-stars"),
    pytest.param("a" * 8193, "too large for the decider: 8,193 bytes long",
                 id="limit/pattern-bytes"),
    pytest.param(r"(?:\pL\pN\pL){1000}", "RE2 compiles it to more than 4,032 instructions",
                 id="limit/budget-re2-program"),
]


@pytest.mark.parametrize("pattern,message,go_matches", MATCH_ROWS)
def test_pattern_matches_as_go(pattern: str, message: str, go_matches: bool) -> None:
    assert pattern_error(pattern) is None
    compiled = compile_go_regex(pattern)
    assert compiled is not None and compiled.matches(message) is go_matches


@pytest.mark.parametrize("pattern,fragment", REFUSED_ROWS)
def test_pattern_refused_naming_the_construct(pattern: str, fragment: str) -> None:
    message = pattern_error(pattern)
    assert message is not None and fragment in message, message
    # Upstream treats a pattern Go does not compile as never matching.
    assert compile_go_regex(pattern) is None


def test_go_size_limit_is_bounded_beyond_the_length_limit() -> None:
    # Unreachable through pattern_error (8 KiB of pattern cannot reach Go's 128 MiB program),
    # but the shape check stands on its own should the length limit ever grow.
    why, _ = go_shape("(?:){1000}" * 3400)
    assert why is not None and "expression too large" in why


def test_refusal_message_quotes_a_long_pattern_briefly() -> None:
    message = pattern_error("(" * 5000 + ")" * 5000)
    assert message is not None and len(message) < 700 and "10000 characters" in message


def test_message_with_a_lone_surrogate_does_not_raise() -> None:
    # The server refuses such text; Go's JSON decoding would have read it as U+FFFD.
    compiled = compile_go_regex("^a\ufffdb$")
    assert compiled is not None and compiled.matches("a\udc80b")


@pytest.mark.waits
@pytest.mark.parametrize(
    "pattern,message",
    [
        pytest.param("(a+)+$", "a" * 9_999 + "!", id="nested-plus"),
        pytest.param("(.*)*X", BACKOFF + " " + "y" * 9_956, id="nested-star"),
        pytest.param("(x+x+)+y", "x" * 10_000, id="overlapping-plus"),
    ],
)
def test_pathological_patterns_are_linear(pattern: str, message: str) -> None:
    # Python's backtracking re takes days on these at 40 characters; RE2 is linear, and
    # takes a millisecond at 10,000. The bound is a hang guard, as generous as a loaded
    # machine needs: between days and a millisecond, any bound tells them apart.
    compiled = compile_go_regex(pattern)
    assert compiled is not None and len(message) == 10_000
    start = time.perf_counter()
    assert compiled.matches(message) is False
    assert time.perf_counter() - start < HANG_GUARD


# ---- through decide and validate -------------------------------------------------------------


def _fail_rule(pattern: str) -> dict[str, Any]:
    return {"name": "byMessage", "action": c.FAIL_JOBSET, "onJobFailureMessagePatterns": [pattern]}


@pytest.mark.parametrize(
    "pattern,message,go_matches",
    [
        pytest.param(r"[[:digit:]]+", "exit code 42", True, id="posix-digit-fails-jobset"),
        pytest.param(r"[[:digit:]]+", "grid]", False, id="posix-digit-restarts"),
        pytest.param(r"\pL+$", "job x", True, id="unicode-letter-fails-jobset"),
        pytest.param(r"\Q(OOM)\E", "container (OOM)", True, id="quote-fails-jobset"),
        pytest.param("failed$", "job failed\n", False, id="dollar-restarts"),
        pytest.param(r"\B", "k\u00e9a", False, id="B-restarts"),
    ],
)
def test_failure_rule_through_decide(pattern: str, message: str, go_matches: bool) -> None:
    # A FailJobSet rule with the pattern; when it does not match, the default action restarts.
    js = jobset(rjob("w", 1), failurePolicy={"maxRestarts": 3, "rules": [_fail_rule(pattern)]})
    plan = run(js, [job("w", 0, state="failed", message=message)], objects=[service()])
    failed = condition(plan, c.FAILED)
    if go_matches:
        assert failed is not None and failed["reason"] == c.REASON_FAIL_JOBSET_ACTION
        assert plan.status["restarts"] == 0
    else:
        assert failed is None
        assert plan.status["restarts"] == 1
        assert kinds(plan, "CreateJob") == []


def _with_patterns(*patterns: str) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "mini"},
            "spec": {"failurePolicy": {"rules": [{"name": "r", "action": c.FAIL_JOBSET,
                                                  "onJobFailureMessagePatterns": list(patterns)}]},
                     "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {
                         "spec": {"containers": [{"name": "m", "image": "busybox"}]}}}}}]}}


GO_ACCEPTS = (r"[[:digit:]]+", r"\pL+$", r"\p{Greek}", r"\PL", r"\Q.*\E", r"\z", r"\x{41}",
              "(?U)a+", "(?P<n>a)", "(?<n>a)", r"\101")
GO_REFUSES = (r"(a)\1", "(?=x)", "(?<=x)y")
FIELD = "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[{}]"


def test_validate_accepts_what_go_accepts_and_refuses_the_rest() -> None:
    errors = validate_create(_with_patterns(*GO_ACCEPTS, *GO_REFUSES), {}, [])
    refused = {e.field for e in errors}
    assert refused == {FIELD.format(len(GO_ACCEPTS) + k) for k in range(len(GO_REFUSES))}, errors


@pytest.mark.waits
def test_validate_cli() -> None:
    def validate(js: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "decider.cli", "validate", "-f", "-"],
                              input=json.dumps(js), capture_output=True, text=True, cwd=ROOT,
                              timeout=60)

    accepted = validate(_with_patterns(*GO_ACCEPTS))
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    refused = validate(_with_patterns(*GO_REFUSES))
    assert refused.returncode == 2
    errors = json.loads(refused.stdout)["errors"]
    assert [e["field"] for e in errors] == [FIELD.format(k) for k in range(len(GO_REFUSES))]
    assert "backreference \\1" in errors[0]["message"]
    assert "lookahead" in errors[1]["message"] and "lookbehind" in errors[2]["message"]
