"""No failure-message pattern admission accepts may cost a decision more than milliseconds.

Go's regexp accepts `\\pL{999}`; RE2 compiled it to 1.2 million instructions, 0.8 s on a quiet
machine and 5-7 s of a loaded worker, in each worker and for each new count. The decider bounds a
JobSet's patterns by what RE2's compile work grows with (go_regex's budget), not by the clock:
these tests assert on RE2's own program sizes and on what RE2 is asked to parse, so they hold on
any machine. The clock figures are bench/patterns_bench.py --budget.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import re2

from decider.core import constants as c
from decider.core import go_regex
from decider.core.admission import validate_create
from decider.core.go_regex import (
    BUDGET_BYTES,
    BUDGET_INSTRUCTIONS,
    BUDGET_UNICODE_CLASSES,
    INSTRUCTIONS_PER_PATTERN,
    MAX_INSTRUCTIONS,
    GoRegexp,
    Refused,
    check_pattern,
    unicode_classes,
)
from decider.core.go_regex_shape import outline
from decider.core.pattern_budget import PatternBudget
from support.builders import condition, job, jobset, rjob, run, service

ROOT = Path(__file__).resolve().parents[2]
BACKOFF = "Job has reached the specified backoff limit"
GO_ACCEPTS_IT = "Go's regexp accepts this pattern"
WORDS = [f"error{i:03d} in stage {i % 7}" for i in range(120)]
HEX_WORDS = [hashlib.sha256(str(i).encode()).hexdigest()[:8] for i in range(600)]

# Patterns Go accepts, built to be costly, each admitted (None) or refused (the reason's words).
PATHOLOGICAL = [
    # Repetition counts.
    pytest.param(r"\pL{999}", "RE2 compiles it to more than 4,032 instructions",
                 id="count/pL-999-issue-20"),
    pytest.param(r"\pL{998}", "RE2 compiles it to more than 4,032 instructions",
                 id="count/pL-998-each-new-count"),
    pytest.param(r"\pL{4}", "RE2 compiles it to 4,788 instructions", id="count/pL-4-just-over"),
    pytest.param(r"\pL{3}", None, id="count/pL-3-fits"),
    pytest.param(".{1000}", "RE2 compiles it to more than", id="count/dot-1000"),
    pytest.param("(?s).{400}", None, id="count/dot-s-400"),
    pytest.param("a{0,1000}" * 11, "it expands to about 22,000 instructions",
                 id="count/optional-runs-refused-before-re2"),
    pytest.param("a{1000}" * 4, None, id="count/literal-4000"),
    # Counted repetition nested in counted repetition.
    pytest.param(r"(?:\pL\pN\pL){300}", "RE2 compiles it to more than", id="nested/classes-300"),
    pytest.param("(?:a{2}){500}", None, id="nested/product-1000"),
    pytest.param("(?:a{2}){501}", "invalid repeat count", id="nested/product-1002-go-refuses"),
    pytest.param("((a{10}){10}){11}", "invalid repeat count", id="nested/three-levels"),
    pytest.param("(?:ab|cd){0,1000}" * 5, "it expands to about", id="nested/alternation-runs"),
    pytest.param("(?:(?:){1000})" * 16, None, id="nested/empty-repeats-compile-to-nothing"),
    # Unicode classes: hundreds of ranges each while parsing.
    pytest.param(r"[^\pL]{1000}", "RE2 compiles it to more than", id="unicode/negated-class"),
    pytest.param(r"[\pL\PL]" * 8, None, id="unicode/16-classes-small-program"),
    pytest.param(r"[\pL\PL]" * 9, "18 Unicode classes", id="unicode/18-classes"),
    pytest.param(r"\PL" * 2000, "2000 Unicode classes", id="unicode/2000-negated"),
    pytest.param(r"[\x{80}-\x{10FFFF}]{600}", None, id="unicode/wide-range-600"),
    pytest.param(r"\Q\pL\E" * 20, None, id="unicode/quoted-is-not-a-class"),
    # Case folding with classes.
    pytest.param(r"(?i)\pL{999}", "RE2 compiles it to more than", id="fold/pL-999"),
    pytest.param(r"(?i)\pL{2}", None, id="fold/pL-2"),
    pytest.param(r"(?i)[\pL\PL]" * 8, None, id="fold/16-classes"),
    pytest.param("(?i)" + r"\W" * 2000, "RE2 compiles it to more than", id="fold/not-word-2000"),
    pytest.param("(?i)" + "k" * 4000, "RE2 compiles it to more than", id="fold/kelvin-4000"),
    pytest.param("(?i)" + r"[\x{100}-\x{2000}]" * 400, "RE2 compiles it to more than",
                 id="fold/ranges-400"),
    # Big alternations.
    pytest.param("|".join(WORDS[:100]), None, id="alternation/100-messages"),
    pytest.param("(?i)" + "|".join(WORDS), None, id="alternation/120-folded-factored"),
    pytest.param("[a-q][^u-z]{500}x", None, id="alternation/dfa-hostile-at-the-budget"),
    pytest.param("|".join(HEX_WORDS), "RE2 compiles it to", id="alternation/600-distinct"),
    pytest.param("(" + "|" * 5000 + ")", None, id="alternation/5000-empty-is-small"),
    # Text.
    pytest.param("a" * 4000, None, id="text/4000-literal"),
    pytest.param("a" * 4100, "RE2 compiles it to 4,104 instructions", id="text/4100-literal"),
    pytest.param("a" * 8193, "8,193 bytes long", id="text/over-8-KiB"),
]


class _Spy:
    """Stands in for the re2 module inside go_regex, recording every compile it is asked for."""

    error = re2.error
    Options = re2.Options

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []  # (pattern, max_mem, program size)

    def compile(self, pattern: str, options: re2.Options) -> Any:
        try:
            compiled = re2.compile(pattern, options)
        except re2.error:
            self.calls.append((pattern, options.max_mem, None))
            raise
        self.calls.append((pattern, options.max_mem, compiled.programsize))
        return compiled


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Spy]:
    recorder = _Spy()
    monkeypatch.setattr(go_regex, "re2", recorder)
    check_pattern.cache_clear()  # cold, as a new worker process
    yield recorder
    check_pattern.cache_clear()


@pytest.mark.parametrize("pattern,refused", PATHOLOGICAL)
def test_a_pattern_costs_at_most_the_budget(spy: _Spy, pattern: str, refused: str | None) -> None:
    compiled = check_pattern(pattern)
    if refused is None:
        assert isinstance(compiled, GoRegexp), compiled
        assert compiled.instructions <= MAX_INSTRUCTIONS
    else:
        assert isinstance(compiled, Refused) and refused in compiled.message, compiled
        if "too large for the decider" in compiled.message:
            assert GO_ACCEPTS_IT in compiled.message
    # What RE2 was given, admitted or not, is bounded in everything its work grows with: the
    # check compiles under max_mem that stops a program near the limit, what it parses is
    # bounded in bytes, Unicode classes and Go's size of it (counted repeats expanded), and
    # the matcher is built only for a pattern within the budget.
    for sent, max_mem, program in spy.calls:
        inner = sent.removeprefix("(?s:.)*?(?:").removesuffix(")")
        assert len(inner.encode()) <= BUDGET_BYTES
        assert unicode_classes(inner) <= BUDGET_UNICODE_CLASSES
        assert outline(inner).size <= 20_000
        if sent == pattern:
            assert max_mem <= 128 << 10
            assert program is None or program <= 10_900
        else:
            assert program is not None and program <= MAX_INSTRUCTIONS + 16
    matchers = [sent for sent, _, _ in spy.calls if sent != pattern]
    assert len(matchers) == (refused is None)


@pytest.mark.parametrize("pattern,refused", [p for p in PATHOLOGICAL if p.values[1] is None])
def test_an_admitted_pattern_matches_after_its_bounded_compile(pattern: str,
                                                                refused: None) -> None:
    compiled = check_pattern(pattern)
    assert isinstance(compiled, GoRegexp)
    # The program that is matched, wrapper included, is the size the budget counted.
    assert compiled._anchored.programsize <= compiled.instructions + 16
    assert compiled.matches(BACKOFF + " " + "x" * 100_000) in (True, False)


def _rules(*patterns_per_rule: list[str]) -> dict[str, Any]:
    return {"maxRestarts": 3, "rules": [
        {"name": f"r{i}", "action": c.FAIL_JOBSET, "onJobFailureMessagePatterns": patterns}
        for i, patterns in enumerate(patterns_per_rule)]}


def _refused_fields(js: dict[str, Any]) -> dict[str, str]:
    return {e.field: e.message for e in validate_create(js, {}, [])}


def _field(i: int, j: int) -> str:
    return f"spec.failurePolicy.rules[{i}].onJobFailureMessagePatterns[{j}]"


def test_a_jobsets_patterns_share_the_budget() -> None:
    # Each ^\pL+$ alone fits (1,200 instructions); the fourth takes the JobSet past 4,096.
    js = jobset(rjob("w"), failurePolicy=_rules([r"^\pL+$"] * 3, [r"^\pL+$", "backoff"]))
    refused = _refused_fields(js)
    assert list(refused) == [_field(1, 0)], refused
    assert "with the patterns before it" in refused[_field(1, 0)]
    assert GO_ACCEPTS_IT in refused[_field(1, 0)]


def test_many_small_patterns_are_charged_their_fixed_cost() -> None:
    # Independently of the decider: RE2's own program sizes, plus the per-pattern charge.
    patterns = [f"exit code {n}$" for n in range(100)]
    spent, first_over = 0, None
    for k, pattern in enumerate(patterns):
        spent += re2.compile(pattern).programsize + INSTRUCTIONS_PER_PATTERN
        if spent > BUDGET_INSTRUCTIONS:
            first_over = k
            break
    assert first_over is not None and 40 < first_over < 80
    js = jobset(rjob("w"), failurePolicy=_rules(*([p] for p in patterns)))
    # One error, at the pattern that crossed: those after it are not compiled at all.
    assert list(_refused_fields(js)) == [_field(first_over, 0)]


def test_the_budget_counts_unicode_classes_and_bytes_across_patterns() -> None:
    classes = jobset(rjob("w"), failurePolicy=_rules([r"[\pL\PL]"] * 9))
    assert list(_refused_fields(classes)) == [_field(0, 8)]
    assert "18 Unicode classes" in _refused_fields(classes)[_field(0, 8)]
    text = "(?:)" * 750  # 3,000 bytes that RE2 compiles to nothing
    nothing = jobset(rjob("w"), failurePolicy=_rules([text] * 3))
    assert list(_refused_fields(nothing)) == [_field(0, 2)]
    assert "9,000 bytes" in _refused_fields(nothing)[_field(0, 2)]


def test_budget_accounting_matches_re2() -> None:
    budget = PatternBudget()
    first = budget.take(r"\pL+")
    assert isinstance(first, GoRegexp)
    assert budget.instructions == re2.compile(r"\pL+").programsize + INSTRUCTIONS_PER_PATTERN
    assert budget.take("(") is not None and budget.unicode_classes == 1
    over = budget.take(r"\pL{999}")
    assert isinstance(over, Refused) and budget.spent
    assert budget.take("fine") is None  # not compiled once the budget is spent


def test_decide_treats_patterns_past_the_budget_as_never_matching() -> None:
    # A JobSet that skipped admission: the pattern after the one that crossed the budget would
    # match, but is never compiled, so the rule does not apply and the default restarts.
    policy = _rules([r"^\pL+$"] * 4 + ["backoff"])
    plan = run(jobset(rjob("w"), failurePolicy=policy),
               [job("w", 0, state="failed", message=BACKOFF)], objects=[service()])
    assert condition(plan, c.FAILED) is None and plan.status["restarts"] == 1
    within = _rules([r"^\pL+$"] * 3 + ["backoff"])
    plan = run(jobset(rjob("w"), failurePolicy=within),
               [job("w", 0, state="failed", message=BACKOFF)], objects=[service()])
    failed = condition(plan, c.FAILED)
    assert failed is not None and failed["reason"] == c.REASON_FAIL_JOBSET_ACTION


@pytest.mark.waits
def test_validate_cli_refuses_the_issue_pattern(tmp_path: Path) -> None:
    js = jobset(rjob("w"), failurePolicy=_rules(["oom", r"\pL{999}"]))
    path = tmp_path / "js.json"
    path.write_text(json.dumps(js))
    done = subprocess.run([sys.executable, "-m", "decider.cli", "validate", "-f", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = json.loads(done.stdout)["errors"]
    assert [e["field"] for e in errors] == [_field(0, 1)]
    assert "RE2 compiles it to more than 4,032 instructions" in errors[0]["message"]
    assert GO_ACCEPTS_IT in errors[0]["message"]
