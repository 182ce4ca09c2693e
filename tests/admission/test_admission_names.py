"""The Kubernetes name validators (apimachinery messages) and the RE2 compatibility check."""

from __future__ import annotations

import pytest

from decider.core import k8s_names
from decider.core.go_regex import compile_go_regex, pattern_error

DNS1123_LABEL_REGEX = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("validator", "value", "expected"),
    [
        pytest.param(k8s_names.is_dns1123_label, "ok-1", [], id="dns1123-label/valid"),
        pytest.param(
            k8s_names.is_dns1123_label, "a.b", ["must not contain dots"], id="dns1123-label/dots"
        ),
        pytest.param(
            k8s_names.is_dns1123_label, "-a", [DNS1123_LABEL_REGEX], id="dns1123-label/regex"
        ),
        pytest.param(
            k8s_names.is_dns1123_label,
            "a" * 64,
            ["must be no more than 63 characters"],
            id="dns1123-label/length",
        ),
        pytest.param(k8s_names.is_dns1123_subdomain, "a.b-c", [], id="dns1123-subdomain/valid"),
        pytest.param(
            k8s_names.is_dns1123_subdomain,
            "a" * 254,
            ["must be no more than 253 characters"],
            id="dns1123-subdomain/length",
        ),
        pytest.param(
            k8s_names.is_dns1035_label,
            "1abc",
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                "with an alphabetic character, and end with an alphanumeric character (e.g. "
                "'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')"
            ],
            id="dns1035-label/starts-with-digit",
        ),
        pytest.param(
            k8s_names.is_dns1035_label,
            "abc\n",
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                "with an alphabetic character, and end with an alphanumeric character (e.g. "
                "'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')"
            ],
            id="dns1035-label/trailing-newline-like-go",
        ),
        pytest.param(k8s_names.is_label_value, "", [], id="label-value/empty-ok"),
        pytest.param(k8s_names.is_label_value, "a b", [LABEL_VALUE_REGEX], id="label-value/regex"),
        pytest.param(
            k8s_names.is_qualified_name, "example.com/Name_1", [], id="qualified-name/valid"
        ),
        pytest.param(
            k8s_names.is_qualified_name,
            "/x",
            ["prefix part must be non-empty"],
            id="qualified-name/empty-prefix",
        ),
        pytest.param(
            k8s_names.is_qualified_name,
            "a/b/c",
            [
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                "or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
                "and '/' (e.g. 'example.com/MyName')"
            ],
            id="qualified-name/two-slashes",
        ),
        pytest.param(
            k8s_names.is_domain_prefixed_path,
            "acme.io/foo~bar",
            [],
            id="domain-prefixed-path/valid",
        ),
        pytest.param(
            k8s_names.is_domain_prefixed_path,
            "acme.io/a b",
            ["Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"],
            id="domain-prefixed-path/path-chars",
        ),
        pytest.param(
            k8s_names.is_domain_prefixed_path,
            "",
            ["Required value"],
            id="domain-prefixed-path/empty",
        ),
    ],
)
def test_validators(validator, value, expected):
    assert validator(value) == expected


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        pytest.param(r"(a)\2", "backreference \\2", id="re2/backreference"),
        pytest.param(r"(?P<x>a)(?P=x)", "named backreference", id="re2/named-backreference"),
        pytest.param("(?=a)", "lookahead", id="re2/lookahead"),
        pytest.param("(?>a)", "atomic group", id="re2/atomic-group"),
        pytest.param("a*+", "possessive quantifier", id="re2/possessive"),
        pytest.param("(?x) a", "Go's inline flags are i, m, s and U", id="re2/verbose-flag"),
        pytest.param("a{2000}", "invalid repeat count", id="re2/repeat-limit"),
        pytest.param(r"end\Z", "\\Z", id="re2/capital-Z"),
        pytest.param("(?(1)a|b)", "conditional group", id="re2/conditional"),
        pytest.param("[", "missing closing ]", id="go/compile-error"),
    ],
)
def test_patterns_rejected(pattern, fragment):
    message = pattern_error(pattern)
    assert message is not None and fragment in message
    assert compile_go_regex(pattern) is None


@pytest.mark.parametrize(
    "pattern",
    [
        "",
        "Pod .* evicted",
        r"^exit code \d+$",
        "(?i)oom",
        "(?P<n>a)+",
        "[(?=]",
        r"\(x\)",
        "a{0,3}",
        r"[\]]+",
        "(?:x|y){2,1000}",
        "a{,3}",  # literal text in Go
        r"[[:digit:]]+",
        r"\pL+$",
        r"\Q(x)\E",
        "(?U)a+",
    ],
)
def test_patterns_accepted(pattern):
    assert pattern_error(pattern) is None
    assert compile_go_regex(pattern) is not None


def test_ascii_classes_like_go():
    # Go's \d is ASCII only.
    assert compile_go_regex(r"^\d$").matches("٣") is False  # ARABIC-INDIC DIGIT THREE
