"""resource.Quantity as the webhook's Go round trip writes it: UnmarshalJSON -> ParseQuantity,
then MarshalJSON (CanonicalizeBytes). Expected values are apimachinery v0.36.3's own test tables
(pkg/api/resource/quantity_test.go) unless a row says otherwise."""

from __future__ import annotations

import pytest

from decider.core.admission.quantity import (
    ERR_FORMAT,
    ERR_NUMERIC,
    ERR_SUFFIX,
    QuantityError,
    canonical,
)

# TestQuantityString: (canonical, alternate spelling that canonicalizes to it).
STRING_TABLE = [
    ("1Gi", "1024Mi"), ("300Mi", "307200Ki"), ("6Ki", ""), ("1001Gi", "1025024Mi"),
    ("1Ti", "1024Gi"), ("5", "5000m"), ("500m", "0.5"), ("1G", "1000M"), ("1G", "0.001T"),
    ("1m", "1000u"), ("80m", ""), ("1080m", "1.08"), ("1080m", "1080000000n"), ("300M", ""),
    ("1T", ""), ("1234567M", ""), ("1234567m", ""), ("3k", ""), ("1025", ""), ("0", ""),
    ("1e9", ".001e12"), ("1e-3", "0.001e0"), ("1e-9", "1000e-12"), ("80e-3", ""),
    ("300e6", ""), ("1e12", ""), ("1e3", ""), ("3e3", ""), ("0", "00"), ("1n", ""),
    ("80n", ""), ("1080n", ""), ("1u", ""), ("80u", ""), ("1080u", ""),
]


@pytest.mark.parametrize(("expect", "alternate"), STRING_TABLE,
                         ids=[f"TestQuantityString/{e}<-{a or e}" for e, a in STRING_TABLE])
def test_quantity_string_canonical_text_is_kept_and_alternates_canonicalize(
        expect: str, alternate: str) -> None:
    assert canonical(expect) == expect
    assert canonical("-" + expect) == ("-" + expect if expect != "0" else "0")
    if alternate:
        assert canonical(alternate) == expect


PARSE_EMIT = [("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"),
              ("1000M", "1G"), (".001Ki", "1024m"), (".000001Ki", "1024u"),
              (".000000001Ki", "1024n"), (".000000000001Ki", "2n")]


@pytest.mark.parametrize(("given", "expect"), PARSE_EMIT,
                         ids=[f"TestQuantityParseEmit/{g}" for g, _ in PARSE_EMIT])
def test_quantity_parse_emit(given: str, expect: str) -> None:
    assert canonical(given) == expect
    assert canonical("-" + given) == "-" + expect


@pytest.mark.parametrize(
    ("given", "expect"),
    [
        # TestJSONWhitespace: the JSON text, quoted or not, trimmed.
        pytest.param(" 1", "1", id="TestJSONWhitespace/leading-space"),
        pytest.param("1 ", "1", id="TestJSONWhitespace/trailing-space"),
        pytest.param(1, "1", id="TestJSONWhitespace/number"),
        pytest.param(10, "10", id="TestJSONWhitespace/number-10"),
        pytest.param(-1, "-1", id="TestJSONWhitespace/negative-number"),
        # The Quantity doc comment: "1.5 will be serialized as "1500m"", "1.5Gi" as "1536Mi".
        pytest.param(1.5, "1500m", id="doc/number-1.5"),
        pytest.param("1.5Gi", "1536Mi", id="doc/1.5Gi"),
        # The case: a JSON number 4 is stored as the string "4".
        pytest.param(4, "4", id="MarshalJSON/number-4-is-the-string-4"),
        pytest.param(0.5, "500m", id="MarshalJSON/number-0.5"),
        pytest.param(12000, "12k", id="CanonicalizeBytes/largest-exact-suffix"),
        # The API server decodes a number beyond int64 as a float64 and re-encodes it for the
        # webhook in exponent form: "1.1805916207174113e+21".
        pytest.param(2**70, "1180591620717411300e3", id="api-server/number-beyond-int64"),
        # Any other float64 is re-encoded positionally from 1e-6 to 1e21: 1e-05 reaches the
        # webhook as "0.00001", 1e16 as "10000000000000000", 4.0 as "4".
        pytest.param(1e-05, "10u", id="api-server/small-float-positional"),
        pytest.param(1e16, "10P", id="api-server/large-float-positional"),
        pytest.param(4.0, "4", id="api-server/integral-float"),
        pytest.param(1e-07, "100e-9", id="api-server/tiny-float-exponent-form"),
        pytest.param(1e-10, "1e-9", id="ParseQuantity/rounded-up-to-nano"),
        pytest.param("1e3", "1e3", id="ParseQuantity/kept-exponent-text-in-a-string"),
        # ParseQuantity keeps the text it parsed when its fast path finds it canonical
        # (Quantity.s), and MarshalJSON writes that text back verbatim.
        pytest.param("+4", "+4", id="ParseQuantity/kept-text-with-plus-sign"),
        pytest.param("0", "0", id="TestQuantityParseZero"),
        pytest.param("0Gi", "0", id="CanonicalizeBytes/zero-has-no-suffix"),
    ],
)
def test_marshal_json(given: object, expect: str) -> None:
    assert canonical(given) == expect


@pytest.mark.parametrize(
    ("given", "message"),
    [
        pytest.param("Non-Numeric", ERR_FORMAT, id="TestQuantityParseNonNumericPanic"),
        pytest.param("", ERR_FORMAT, id="ParseQuantity/empty"),
        pytest.param("1.2.3", ERR_FORMAT, id="parseQuantityString/second-dot"),
        pytest.param("1ki", ERR_SUFFIX, id="interpret/unknown-suffix"),
        pytest.param("1e", ERR_SUFFIX, id="interpret/bare-exponent"),
        pytest.param(".e-12", ERR_NUMERIC, id="inf.Dec.SetString/no-digits"),
        pytest.param(True, ERR_FORMAT, id="UnmarshalJSON/boolean-text"),
        pytest.param({"cpu": 1}, ERR_FORMAT, id="UnmarshalJSON/object-text"),
    ],
)
def test_parse_errors(given: object, message: str) -> None:
    with pytest.raises(QuantityError) as info:
        canonical(given)
    assert str(info.value) == message


def test_format_error_names_the_split_regex() -> None:
    # ErrFormatWrong's text, built from splitREString.
    assert ERR_FORMAT == ("quantities must match the regular expression "
                          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
