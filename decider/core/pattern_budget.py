"""The failure-message patterns of one JobSet share one compile budget (go_regex says why).

A JobSet may list any number of rules and patterns, each within the budget alone, and together
costing seconds: every pattern is charged, in document order (rules[0] first, then its patterns
in order), and the first one that takes the total over the budget is refused. Patterns after it
are not compiled at all: at admission the JobSet is refused already, and a decision treats them
as never matching, as upstream treats a pattern that does not compile. So the work spent on one
JobSet's patterns, admitted or not, stays within about one budget.
"""

from __future__ import annotations

from decider.core.go_regex import (
    BUDGET_BYTES,
    BUDGET_INSTRUCTIONS,
    BUDGET_UNICODE_CLASSES,
    INSTRUCTIONS_PER_PATTERN,
    GoRegexp,
    Refused,
    check_pattern,
    shown_pattern,
    too_large,
    unicode_classes,
)


class PatternBudget:
    """What the patterns taken so far have spent of one JobSet's budget."""

    def __init__(self) -> None:
        self.instructions = 0
        self.bytes = 0
        self.unicode_classes = 0
        # A pattern went over the budget: those after it are not compiled.
        self.spent = False

    def take(self, pattern: str) -> GoRegexp | Refused | None:
        """The pattern's matcher, or why it is refused; None once the budget is spent."""
        if self.spent:
            return None
        size = len(pattern.encode(errors="replace"))
        classes = unicode_classes(pattern)
        if size > BUDGET_BYTES or classes > BUDGET_UNICODE_CLASSES:
            # Over on its own: its own refusal says so, and is found without compiling.
            self.spent = True
            return check_pattern(pattern)
        self.bytes += size
        self.unicode_classes += classes
        if self.bytes > BUDGET_BYTES or self.unicode_classes > BUDGET_UNICODE_CLASSES:
            self.spent = True
            return self._over(pattern)
        compiled = check_pattern(pattern)
        self.instructions += compiled.instructions + INSTRUCTIONS_PER_PATTERN
        if self.instructions > BUDGET_INSTRUCTIONS:
            self.spent = True
            if isinstance(compiled, GoRegexp):
                return self._over(pattern)
        return compiled

    def matcher(self, pattern: str) -> GoRegexp | None:
        """For a decision: the matcher, or None for a pattern admission refuses."""
        compiled = self.take(pattern)
        return compiled if isinstance(compiled, GoRegexp) else None

    def refusal(self, pattern: str) -> str | None:
        """For admission: why the pattern is refused, or None (accepted, or not checked once
        the budget is spent by a pattern before it, which is refused)."""
        compiled = self.take(pattern)
        return compiled.message if isinstance(compiled, Refused) else None

    def _over(self, pattern: str) -> Refused:
        return Refused(
            f"invalid regular expression {shown_pattern(pattern)}: " + too_large(
                f"with the patterns before it, this JobSet's failure-message patterns reach "
                f"{self.instructions:,} RE2 instructions, {self.bytes:,} bytes and "
                f"{self.unicode_classes} Unicode classes"),
            self.instructions)
