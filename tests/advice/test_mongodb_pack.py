"""The MongoDB settings pack at a small size, as root: MongoDB 7's and 8's THP settings as knob presets on
the fleet workload under TCMalloc and glibc; each preset's knobs were the ones in effect during its runs;
every claim judged in the report; the knobs back as found."""

from __future__ import annotations

import pytest
from real_pack import by_preset, run_small

from hugebench.errors import HugebenchError
from hugebench.machine.allocators import registry

pytestmark = [pytest.mark.needs_root, pytest.mark.needs_thp]


def test_the_mongodb_pack_sets_each_presets_knobs(tmp_path):
    try:
        registry({})["tcmalloc"].resolve()
    except HugebenchError:
        pytest.skip("tcmalloc not installed (libtcmalloc-minimal4, see .ci/setup)")
    pack, rows, report = run_small("mongodb", tmp_path, {"objects": 20000, "duration_s": 1.0})
    presets = by_preset(pack, rows)
    assert set(presets) == {"disabled", "enabled-plain", "mongo8"}
    for row in presets["mongo8"]:
        assert row["knob.thp.enabled"] == "always"
        assert row["knob.thp.defrag"] == "defer+madvise"
        assert int(row["knob.thp.khugepaged.max_ptes_none"]) == 0
    for row in presets["disabled"]:
        assert row["knob.thp.enabled"] == "never" and row["hp_coverage"] == 0
    assert all(r["requests_per_s"] > 0 for rs in presets.values() for r in rs)
    assert "8.0 settings: requests faster than THP disabled (TCMalloc)" in report
    assert "vm.overcommit_memory 1" in report  # not judged, and why
