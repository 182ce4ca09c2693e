"""Where this admission deliberately differs from upstream JobSet, and why (docs/admission.md)."""

from __future__ import annotations

DELIBERATE_DIFFERENCES: list[tuple[str, str]] = [
    (
        "An onJobFailureMessagePatterns entry must compile under Go's regexp "
        "(error at spec.failurePolicy.rules[i].onJobFailureMessagePatterns[j]).",
        "Upstream compiles the patterns only when a Job fails, logs a bad one and treats it as "
        "never matching, so a typo silently disables the failure rule.",
    ),
    (
        "Patterns Go accepts but RE2 cannot match as Go does are rejected: Go 1.25's loose "
        "Unicode class names (\\p{greek}, \\p{Letter}), patterns at Go's depth or size limit "
        "(checked against an upper bound), lone surrogates.",
        "The decider compiles and matches patterns with Google's RE2 (linear time), configured "
        "as Go's regexp.MatchString; these are where RE2 C++ and Go's regexp still differ, so "
        "every admitted pattern matches in the decider as in upstream's controller.",
    ),
    (
        "A JobSet's onJobFailureMessagePatterns share a compile budget: at most 4,096 RE2 "
        "instructions together (64 counted per pattern), 8 KiB and 16 Unicode classes; the "
        "pattern that goes over is rejected (error at its "
        "spec.failurePolicy.rules[i].onJobFailureMessagePatterns[j]).",
        "Go's regexp has no such limit, and upstream compiles a pattern once, when a Job fails. "
        "The decider compiles a JobSet's patterns in every worker that decides it: \\pL{999} "
        "(1.2 million RE2 instructions) cost 0.8-7 s of each worker, again for each new count.",
    ),
    (
        "A replicatedJob may not list itself in dependsOn "
        "(error at spec.replicatedJobs[i].dependsOn[j].name).",
        "Upstream registers the rjob's own name before checking dependsOn and admits it; the "
        "dependency can then never be met and the rjob's Jobs are never created.",
    ),
    (
        "A replicated Job needs a non-empty name (spec.replicatedJobs[i].name: Required value), "
        "on create and update.",
        "Upstream's webhook writes Go's name: \"\" before the CRD's required check, so it admits "
        "one without; its Jobs (<jobset>--<index>) carry an empty replicatedjob-name label and "
        "are never counted in replicatedJobsStatus, so dependsOn, InOrder startup and JobsReady "
        "never see them.",
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
        "error', and the webhook's decoding errors, such as a quantity Go cannot parse) name "
        "their field here; volume claim template errors use "
        "spec.volumeClaimPolicies[i].templates[j] where upstream writes 'template[j]'.",
        "Every admission error must name the field it is about.",
    ),
    (
        "Unknown fields are always refused, each as its own error at its path "
        "('strict decoding error: unknown field \"<path>\"').",
        "The API server joins them into one message, and drops them instead when the client "
        "asks for field validation Ignore or Warn; kubectl's default is Strict.",
    ),
    (
        "A wrong type in the spec gets the OpenAPI validator's error (the API server's on "
        "update) on create too, where upstream's mutating webhook refuses it first with Go's "
        "JSON decoding error; type errors in metadata use short messages such as 'must be a "
        "string'.",
        "Same verdict; the schema's text names the field's path, the decoder's does not.",
    ),
    (
        "spec.scheduling: a field.Invalid is said as its detail alone (the value is in the "
        "input), e.g. 'spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]: does not "
        "reference a valid replicatedJob name'; Forbidden and TooMany keep their prefixes.",
        "The project's message convention for every admission error; the words after the "
        "prefix are upstream's (jobset_webhook.go@4f0cbded).",
    ),
    (
        "With JobSetGangOfGangs (this project's CompositePodGroup tree; upstream has no code "
        "for it yet), top-level scheduling blocks beside replicatedJobs entries, job beside an "
        "entry's own blocks, and an explicit minGroupCount (at most the node's children) are "
        "admitted; without it they are refused as upstream's CRD refuses them.",
        "In a tree each level is an object of its own (top level: the root CompositePodGroup, "
        "entry: its CompositePodGroup, job: the leaf PodGroups), as KEP-969's example writes "
        "it; a larger minGroupCount could never be met (docs/gang.md, Gang of gangs).",
    ),
]
