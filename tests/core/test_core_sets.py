"""Every set kind and hash of hashlookup holds the same set: all inserted keys, no absent key."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hugebench import _core, doctor, workloads
from hugebench.cli import main

INFO = _core.build_info()
KINDS = INFO["set_kinds"]
HASHES = INFO["hashes"]


def _absent(keys: list[str], n: int) -> list[str]:
    """n keys of the same lengths that are not in keys: digits never occur in generated keys."""
    return [k[:-1] + "0" for k in keys[:n]]


@pytest.mark.parametrize("hash_name", HASHES)
@pytest.mark.parametrize("set_kind", KINDS)
def test_every_kind_finds_every_inserted_key_and_no_absent_key(set_kind, hash_name):
    keys = _core.generate_keys(20000, seed=4, key_min=8, key_max=19)
    absent = _absent(keys, 5000) + ["", "x" * 300]
    m = _core.hashlookup_membership(set_kind, hash_name, keys, keys + absent)
    assert m["set_size"] == len(keys)
    assert m["found"] == [True] * len(keys) + [False] * len(absent)


@pytest.mark.parametrize("set_kind", KINDS)
def test_same_checksum_across_kinds(set_kind):
    reference = _core.hashlookup(keys=30000, set_kind="flat", key_min=8, key_max=19, seed=7)
    r = _core.hashlookup(keys=30000, set_kind=set_kind, key_min=8, key_max=19, seed=7)
    assert (r["found"], r["set_size"], r["checksum"]) == (
        reference["found"],
        reference["set_size"],
        reference["checksum"],
    )


@pytest.mark.parametrize("set_kind", KINDS)
def test_xxh3_and_own_hash_agree_on_set_contents(set_kind):
    if "xxh3" not in HASHES:
        pytest.skip("this build has no xxh3 (libxxhash-dev)")
    # 1-3 letter keys: many duplicates, and every short-key branch of both hashes.
    keys = _core.generate_keys(20000, seed=2, key_min=1, key_max=3)
    queries = sorted(set(keys)) + ["0", "00", "000"]
    own = _core.hashlookup_membership(set_kind, "own", keys, queries)
    xxh3 = _core.hashlookup_membership(set_kind, "xxh3", keys, queries)
    assert own == xxh3
    assert own["set_size"] == len(set(keys))


def test_flat_survives_many_growths_and_wrapping_windows():
    # Tiny keys collide in their home slot often; 50k inserts grow the table from 16 slots a dozen times, and
    # absent keys walk the clusters to the next vacant slot (wrapping at the end of the array).
    keys = [format(i, "x") for i in range(50000)]
    m = _core.hashlookup_membership("flat", "own", keys + keys, keys + ["g", "zz"])
    assert m["set_size"] == 50000 and m["found"] == [True] * 50000 + [False, False]


@pytest.mark.parametrize("set_kind", KINDS)
def test_the_empty_key_is_a_key(set_kind):
    # flat marks a vacant slot with the empty string, so it keeps the empty key aside: it must still count once.
    m = _core.hashlookup_membership(set_kind, "own", ["a", "", "b", ""], ["", "a", "c"])
    assert m["set_size"] == 3 and m["found"] == [True, True, False]
    m = _core.hashlookup_membership(set_kind, "own", ["a"], [""])
    assert m["set_size"] == 1 and m["found"] == [False]


def test_unknown_kind_or_hash_is_a_value_error():
    with pytest.raises(ValueError, match="set_kind"):
        _core.hashlookup_membership("tree", "own", ["a"], ["a"])
    with pytest.raises(ValueError, match="hash"):
        _core.hashlookup(keys=10, hash="md5")


@pytest.fixture
def lacking_absl(monkeypatch):
    """A build without abseil and xxhash, as on a machine missing libabsl-dev and libxxhash-dev."""
    info = {**INFO, "set_kinds": ["flat", "node"], "hashes": ["own"]}
    monkeypatch.setattr(_core, "build_info", lambda: info)


def test_plan_refuses_a_set_kind_the_build_lacks_naming_the_package(tmp_path, lacking_absl):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: s\nworkload: hashlookup\nparams: {keys: 1000}\naxes:\n  set_kind: [flat, absl]\n"
    )
    result = CliRunner().invoke(main, ["plan", str(spec)])
    assert result.exit_code != 0
    assert (
        "set_kind" in result.output
        and "'absl'" in result.output
        and "apt-get install libabsl-dev" in result.output
    )


def test_plan_refuses_a_hash_the_build_lacks(tmp_path, lacking_absl):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nworkload: hashlookup\nparams: {keys: 1000, hash: xxh3}\n")
    result = CliRunner().invoke(main, ["plan", str(spec)])
    assert result.exit_code != 0 and "apt-get install libxxhash-dev" in result.output


def test_doctor_names_the_package_of_each_missing_set_kind(lacking_absl):
    check = doctor.check_set_kinds()
    assert not check.ok
    assert (
        "libabsl-dev" in check.fix and "robin-map-dev" in check.fix and "libxxhash-dev" in check.fix
    )


def test_doctor_is_happy_with_every_set_kind():
    check = doctor.check_set_kinds()
    assert check.ok == (
        set(KINDS) == set(workloads.SET_KINDS) and set(HASHES) == set(workloads.HASHES)
    )
    assert all(kind in check.detail for kind in KINDS)
