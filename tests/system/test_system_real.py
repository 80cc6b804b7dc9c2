"""Against the real kernel (root + writable THP): every knob takes a different value and goes back.

Each test also restores by hand in `finally`, so the machine is left exactly as found even when the
code under test is what failed.
"""

from __future__ import annotations

import contextlib

import pytest

from hugebench.kernel import LOCAL
from hugebench.system import HugetlbShortfall, SystemState, discover_knobs

pytestmark = [pytest.mark.needs_root, pytest.mark.needs_thp]

# Mildest first: a brief excursion must not change how other processes on the machine behave much.
PREFERRED = ("never", "advise", "madvise", "inherit", "defer", "within_size", "always")


def real_knobs() -> dict:
    return discover_knobs(LOCAL)


def other_value(knob) -> str:
    current = knob.read()
    if knob.kind == "choice":
        ordered = [c for c in PREFERRED if c in knob.choices()] + list(knob.choices())
        return next(c for c in ordered if c != current)
    number = int(current)
    if knob.maximum is not None and number >= knob.maximum:
        return str(number - 1)
    return str(max(number + 1, getattr(knob, "least_nonzero", 0)))


@contextlib.contextmanager
def put_back_by_hand(names):
    knobs = real_knobs()
    originals = {name: knobs[name].read() for name in names}
    try:
        yield originals
    finally:
        for name, value in originals.items():
            if knobs[name].read() != value:
                knobs[name].write(value)


SETTING_NAMES = [n for n, k in real_knobs().items() if not k.is_pool] if real_knobs() else []


@pytest.mark.parametrize("name", SETTING_NAMES)
def test_real_knob_set_and_restored(name, tmp_path):
    with put_back_by_hand([name]) as originals:
        knob = real_knobs()[name]
        wanted = other_value(knob)
        with SystemState(LOCAL, tmp_path / "journal.json") as state:
            assert state.apply({name: wanted}) == {name: wanted}
            assert knob.read() == wanted
        assert knob.read() == originals[name]
        assert not (tmp_path / "journal.json").exists()


def test_real_hugetlb_2mb_pool(tmp_path):
    with put_back_by_hand(["hugetlb.2MB"]) as originals:
        pool = real_knobs()["hugetlb.2MB"]
        with SystemState(LOCAL, tmp_path / "journal.json") as state:
            assert state.apply({"hugetlb.2MB": 2}) == {"hugetlb.2MB": "2"}
            free = open("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages").read().strip()
            assert int(free) >= 2
        assert pool.read() == originals["hugetlb.2MB"]


@pytest.mark.slow
def test_real_hugetlb_1gb_pool_or_honest_shortfall(tmp_path):
    if "hugetlb.1GB" not in real_knobs():
        pytest.skip("no 1 GiB hugetlb pool on this CPU/kernel")
    with put_back_by_hand(["hugetlb.1GB"]) as originals:
        with SystemState(LOCAL, tmp_path / "journal.json") as state:
            try:
                assert state.apply({"hugetlb.1GB": 1}) == {"hugetlb.1GB": "1"}
            except (
                HugetlbShortfall
            ) as shortfall:  # no free contiguous GiB right now: reported, not hidden
                assert shortfall.asked == 1 and shortfall.got == 0
        assert real_knobs()["hugetlb.1GB"].read() == originals["hugetlb.1GB"]
