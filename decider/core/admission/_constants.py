"""Limits only admission enforces (the webhook's and the API server's), not shared names.

Upstream's names and enums (API version, kind, feature gates, failure actions, restart strategies,
operators, startup orders, dependsOn statuses, retention policies, annotations) live in
decider.core.constants, which the core's decisions read too: one spelling for both.
"""

from __future__ import annotations

# Length limits of the webhook.
MAX_MANAGED_BY_LENGTH = 63
MAX_PVC_NAME_LENGTH = 63
MAX_REPLICAS_WITH_RESTART_JOB = 1024
MIN_RULE_NAME_LENGTH = 1
MAX_RULE_NAME_LENGTH = 128
RULE_NAME_PATTERN = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
# The API server appends 5 random characters to generateName, after cutting it to 58.
GENERATE_NAME_MAX_PREFIX = 58
GENERATE_NAME_SUFFIX_LENGTH = 5
