"""Where this admission deliberately differs from upstream JobSet, and why (for the README)."""

from __future__ import annotations

DELIBERATE_DIFFERENCES: list[tuple[str, str]] = [
    (
        "An onJobFailureMessagePatterns entry must be a valid regular expression "
        "(error at spec.failurePolicy.rules[i].onJobFailureMessagePatterns[j]).",
        "Upstream compiles the patterns only when a Job fails, logs a bad one and treats it as "
        "never matching, so a typo silently disables the failure rule.",
    ),
    (
        "Patterns using Python-only regex syntax are rejected: backreferences (\\1, (?P=name)), "
        "lookahead/lookbehind ((?=, (?!, (?<=, (?<!), atomic groups, possessive quantifiers, "
        "conditionals, comments, \\Z, inline flags other than i/m/s, repeat counts above 1000, "
        "and 'x{,n}'.",
        "The controller matches with Go's RE2. Rejecting these guarantees a pattern we accept "
        "compiles in Go and means the same there ('x{,n}' is a repetition in Python but literal "
        "text in Go). RE2-only spellings Python cannot parse (\\z, \\Q..\\E, \\x{...}, \\pL, "
        "(?U), (?<name>...)) are refused too: conservative; write them another way.",
    ),
    (
        "A replicatedJob may not list itself in dependsOn "
        "(error at spec.replicatedJobs[i].dependsOn[j].name).",
        "Upstream registers the rjob's own name before checking dependsOn and admits it; the "
        "dependency can then never be met and the rjob's Jobs are never created.",
    ),
    (
        "With annotation jobset.sigs.k8s.io/reconciliation-mode: Independent (or "
        'jobset.sigs.k8s.io/skip-suspend-reconciliation: "true") spec.suspend must stay unset, '
        "on create and update; both annotations are immutable after creation and accept only "
        "their defined values.",
        "This project's per-Job suspend mode (seed 000, upstream KEP-1172, not in upstream "
        "code): nil and false suspend look alike to the controller, and switching the mode on "
        "a live JobSet would move Job suspension between controllers mid-flight.",
    ),
    (
        "Errors upstream returns without a field path (plain errors, shown as 'Internal "
        "error') name their field here; volume claim template errors use "
        "spec.volumeClaimPolicies[i].templates[j] where upstream writes 'template[j]'.",
        "Every admission error must name the field it is about.",
    ),
    (
        "Structural (type) errors use short messages such as 'must be an integer' instead of "
        "the OpenAPI validator's or the webhook's JSON decoding error.",
        "Same verdict, clearer text; upstream would reject these objects too.",
    ),
]
