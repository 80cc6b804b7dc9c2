"""Knob parsing, discovery and verified writes, against the fake kernel tree."""

from __future__ import annotations

import errno

import pytest

from hugebench.errors import PrivilegeError, SystemStateError
from hugebench.kernel import parse_choice as parse_knob_text
from hugebench.system import (
    HugetlbShortfall,
    KnobValueError,
    UnknownKnobError,
    discover_knobs,
    resolve_name,
)

THP = "sys/kernel/mm/transparent_hugepage"


def test_parse_bracketed_and_plain():
    reading = parse_knob_text("always defer defer+madvise [madvise] never\n")
    assert reading.value == "madvise"
    assert reading.choices == ("always", "defer", "defer+madvise", "madvise", "never")
    assert parse_knob_text("511\n").value == "511"
    assert parse_knob_text("511\n").choices == ()
    with pytest.raises(ValueError):
        parse_knob_text("")


def test_discovery_names_match_kernel_618_layout(fake_sys):
    knobs = discover_knobs(fake_sys.host)
    for name in (
        "thp.enabled",
        "thp.defrag",
        "thp.shmem_enabled",
        "thp.khugepaged.defrag",
        "thp.khugepaged.max_ptes_none",
        "thp.khugepaged.scan_sleep_millisecs",
        "hugetlb.2MB",
        "hugetlb.1GB",
    ):
        assert name in knobs
    mthp = sorted(n for n in knobs if n.startswith("thp.mthp."))
    assert mthp == sorted(
        f"thp.mthp.{s}kB" for s in (16, 32, 64, 128, 256, 512, 1024, 2048)
    )  # no 8kB
    assert str(knobs["hugetlb.2MB"].path).endswith("proc/sys/vm/nr_hugepages")
    assert knobs["thp.enabled"].read() == "madvise"
    assert knobs["thp.mthp.2048kB"].choices() == ("always", "inherit", "madvise", "never")
    assert knobs["thp.khugepaged.max_ptes_none"].read() == "511"


def test_1gb_pool_only_where_present(fake_sys):
    import shutil

    shutil.rmtree(fake_sys.sys_root / "kernel/mm/hugepages/hugepages-1048576kB")
    assert "hugetlb.1GB" not in discover_knobs(fake_sys.host)


def test_resolve_name_aliases_and_unknown(fake_sys):
    knobs = discover_knobs(fake_sys.host)
    assert resolve_name("thp", knobs) == "thp.enabled"
    assert resolve_name("thp.defrag", knobs) == "thp.defrag"
    with pytest.raises(UnknownKnobError) as info:
        resolve_name("thp.enable", knobs)
    assert "did you mean thp.enabled" in str(info.value)
    assert "thp.khugepaged.max_ptes_none" in str(info.value)  # lists the known names


def test_write_is_read_back(fake_sys):
    knob = discover_knobs(fake_sys.host)["thp.enabled"]
    assert knob.write("always") == "always"
    assert fake_sys.read(f"{THP}/enabled") == "[always] madvise never"
    assert discover_knobs(fake_sys.host)["thp.khugepaged.max_ptes_none"].write(0) == "0"


def test_ignored_write_raises_naming_file_and_value(fake_sys):
    fake_sys.ignore_writes.add(f"{THP}/defrag")
    knob = discover_knobs(fake_sys.host)["thp.defrag"]
    with pytest.raises(SystemStateError) as info:
        knob.write("never")
    assert "'never'" in str(info.value) and str(knob.path) in str(info.value)
    assert "still reads 'madvise'" in str(info.value)


def test_refused_write_and_permission_denied(fake_sys):
    knobs = discover_knobs(fake_sys.host)
    fake_sys.refuse_writes[f"{THP}/khugepaged/defrag"] = errno.EINVAL
    with pytest.raises(SystemStateError, match="refused '0'.*khugepaged/defrag"):
        knobs["thp.khugepaged.defrag"].write(0)
    fake_sys.refuse_writes[f"{THP}/enabled"] = errno.EACCES
    with pytest.raises(PrivilegeError, match="sudo tee .*transparent_hugepage/enabled"):
        knobs["thp.enabled"].write("never")


def test_invalid_values_refused_before_writing(fake_sys):
    knobs = discover_knobs(fake_sys.host)
    with pytest.raises(KnobValueError) as info:
        knobs["thp.enabled"].write("sometimes")
    assert "always, madvise, never" in str(info.value)
    with pytest.raises(KnobValueError, match=r"0\.\.511"):
        knobs["thp.khugepaged.max_ptes_none"].write(512)
    with pytest.raises(KnobValueError, match="integer"):
        knobs["thp.khugepaged.scan_sleep_millisecs"].write("soon")
    assert fake_sys.writes == []


def test_hugetlb_shortfall_reports_asked_and_got(fake_sys):
    fake_sys.pool_capacity["2048kB"] = 3
    pool = discover_knobs(fake_sys.host)["hugetlb.2MB"]
    assert pool.write(2) == "2"
    with pytest.raises(HugetlbShortfall) as info:
        pool.write(5)
    assert (info.value.asked, info.value.got) == (5, 3)
    assert isinstance(info.value, SystemStateError)
    assert fake_sys.read("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") == "3"


def test_a_knob_that_refuses_small_fractions_says_so_before_writing(tmp_path):
    """vm.percpu_pagelist_high_fraction takes 0 (the kernel's default) or 8 and more; 1..7 is EINVAL."""
    from hugebench.system.knobs import Knob, KnobValueError

    (tmp_path / "f").write_text("0\n")
    knob = Knob(
        "vm.percpu_pagelist_high_fraction", tmp_path, "f", "int", 0, 2**31 - 1, least_nonzero=8
    )
    assert knob.validate(0) == "0" and knob.validate(8) == "8"
    with pytest.raises(KnobValueError, match=r"0 or 8\.\."):
        knob.validate(1)
    assert (tmp_path / "f").read_text() == "0\n"
