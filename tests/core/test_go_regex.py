"""Failure-message patterns match as Go's RE2 matches them (upstream compiles them with regexp).

Each row says whether Go's regexp.MatchString(pattern, message) is true; a pattern RE2 would not
compile is logged upstream and never matches.
"""

from __future__ import annotations

import pytest

from decider.core import constants as c
from decider.core.go_regex import compile_go_regex
from support.builders import condition, job, jobset, kinds, rjob, run, service

ARABIC_INDIC_THREE = "\u0663"

ROWS = [
    pytest.param(r"^exit \d$", "exit 3", True, id="ascii-digit"),
    pytest.param(r"^exit \d$", f"exit {ARABIC_INDIC_THREE}", False, id="d-is-ascii-only"),
    pytest.param(r"\w+", "\u00e9\u00e8", False, id="w-is-ascii-only"),
    pytest.param(r"a\sb", "a\vb", False, id="s-has-no-vertical-tab"),
    pytest.param(r"a\sb", "a\tb", True, id="s-has-tab"),
    pytest.param(r"\bfoo\b", "\u00e9foo", True, id="b-is-an-ascii-boundary"),
    pytest.param("(?i)\u00e9chec", "\u00c9CHEC", True, id="case-folding-is-unicode"),
    pytest.param("exit 1$", "exit 1\n", False, id="dollar-is-end-of-text"),
    pytest.param("(?m)exit 1$", "exit 1\nretrying", True, id="multiline-dollar"),
    pytest.param("(?m:exit 1$)", "exit 1\nretrying", True, id="scoped-multiline-dollar"),
    pytest.param(r"[\d]x", f"{ARABIC_INDIC_THREE}x", False, id="d-in-class-is-ascii-only"),
    pytest.param("(?=oom)oom", "oom", False, id="invalid/lookahead-never-matches"),
    pytest.param(r"(a)\1", "aa", False, id="invalid/backreference-never-matches"),
    pytest.param("[oom", "[oom", False, id="invalid/unterminated-class-never-matches"),
]


@pytest.mark.parametrize("pattern,message,go_matches", ROWS)
def test_compiled_pattern_matches_as_go(pattern: str, message: str, go_matches: bool) -> None:
    compiled = compile_go_regex(pattern)
    assert (compiled is not None and compiled.search(message) is not None) is go_matches


@pytest.mark.parametrize("pattern,message,go_matches", ROWS)
def test_failure_rule_matches_as_go(pattern: str, message: str, go_matches: bool) -> None:
    # A FailJobSet rule with the pattern; when it does not match, the default action restarts.
    js = jobset(rjob("w", 1), failurePolicy={"maxRestarts": 3, "rules": [
        {"name": "byMessage", "action": c.FAIL_JOBSET,
         "onJobFailureMessagePatterns": [pattern]}]})
    plan = run(js, [job("w", 0, state="failed", message=message)], objects=[service()])
    failed = condition(plan, c.FAILED)
    if go_matches:
        assert failed is not None and failed["reason"] == c.REASON_FAIL_JOBSET_ACTION
        assert plan.status["restarts"] == 0
    else:
        assert failed is None
        assert plan.status["restarts"] == 1
        assert kinds(plan, "CreateJob") == []
