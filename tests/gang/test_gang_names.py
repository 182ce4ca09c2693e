"""Name hashing, pinned to published vectors and to what a real v1.36.2 control plane does."""

from __future__ import annotations

import pytest

from decider.core.gang import names

# Published FNV-1a 32-bit test vectors (Fowler/Noll/Vo reference).
FNV_VECTORS = [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)]


@pytest.mark.parametrize(("data", "expected"), FNV_VECTORS, ids=["empty", "a", "foobar"])
def test_fnv32a_reference_vectors(data: bytes, expected: int) -> None:
    assert names.fnv32a(data) == expected


def test_safe_encode_maps_decimal_digits_like_apimachinery() -> None:
    # bytes '0'..'9' are 48..57; modulo 27 into "bcdfghjklmnpqrstvwxz2456789".
    assert names.safe_encode("0123456789") == "456789bcdf"


def _digit_map(decimal: str) -> str:
    # An independent spelling of SafeEncodeString for decimal strings: a lookup table.
    table = dict(zip("0123456789", "456789bcdf", strict=True))
    return "".join(table[c] for c in decimal)


@pytest.mark.parametrize(
    "uid",
    ["5f0a9c1e-7b2d-4c3e-9a8f-0123456789ab", "uid-123", "00000000-0000-0000-0000-000000000000"],
)
def test_v1alpha2_workload_name_hashes_spew_dump_of_uid(uid: str) -> None:
    # gang.md, observed on v1.36.2: h = SafeEncodeString(decimal FNV-32a of "(types.UID)" + uid)
    # with no quotes and no space.
    expected = _digit_map(str(names.fnv32a(f"(types.UID){uid}".encode())))
    assert names.job_workload_name("train", uid) == f"train-{expected}"
    assert names.uid_hash(uid) != _digit_map(str(names.fnv32a(f'(types.UID) "{uid}"'.encode())))


def test_v1alpha2_podgroup_name_hashes_workload_plus_template() -> None:
    wl = names.job_workload_name("train", "uid-123")
    tpl = names.job_template_name("train")
    assert tpl == "train-pgt-0"
    digest = _digit_map(str(names.fnv32a((wl + tpl).encode())))
    assert names.job_podgroup_name(wl, tpl) == f"{wl}-{tpl}-{digest}"


def test_workload_name_truncates_job_name_to_subdomain_length() -> None:
    long = "a" * 300
    name = names.job_workload_name(long, "uid-long")
    assert len(name) == 253
    assert name.endswith("-" + names.uid_hash("uid-long"))


@pytest.mark.parametrize(
    ("wl_len", "tpl_len"),
    [(10, 300), (300, 10), (200, 200), (125, 126)],
    ids=["short-workload", "short-template", "both-long", "odd-split"],
)
def test_podgroup_name_fair_share_truncation(wl_len: int, tpl_len: int) -> None:
    wl, tpl = "w" * wl_len, "t" * tpl_len
    name = names.job_podgroup_name(wl, tpl)
    assert len(name) <= 253
    kept_w = name.count("w")
    kept_t = name.count("t")
    room = 253 - len(names.safe_encode(str(names.fnv32a((wl + tpl).encode())))) - 2
    if wl_len + tpl_len > room:
        assert kept_w + kept_t == room
        if wl_len > room // 2 and tpl_len > room // 2:
            assert kept_w - kept_t in (0, 1)


def test_jobset_names_follow_sha1_identity_hashes() -> None:
    import hashlib

    h = hashlib.sha1(b"JobSet/ns/js").hexdigest()[:10]
    assert names.jobset_workload_name("ns", "js") == f"js-{h}"
    h = hashlib.sha1(b"ReplicatedJob/ns/js/workers").hexdigest()[:10]
    assert names.jobset_rjob_template("ns", "js", "workers") == f"workers-{h}"
    h = hashlib.sha1(b"ReplicatedJobGroup/ns/js/a-b").hexdigest()[:10]
    assert names.jobset_group_template("ns", "js", ["a", "b"]) == f"a-b-{h}"
    h = hashlib.sha1(b"Job/ns/js/workers/3").hexdigest()[:10]
    assert names.jobset_job_template("ns", "js", "workers", 3) == f"workers-3-{h}"


def test_jobset_hashed_names_fit_a_dns_label() -> None:
    name = names.jobset_workload_name("ns", "x" * 70)
    assert len(name) == 63 and name.startswith("x" * 52 + "-")
    pg = names.jobset_podgroup_name("j" * 40, "t" * 40)
    # Past 63 the template part is dropped for a hash of the combined identity.
    assert len(pg) == 40 + 1 + 10 and pg.startswith("j" * 40 + "-") and "t" not in pg
    assert names.jobset_podgroup_name("js", "tpl") == "js-tpl"
