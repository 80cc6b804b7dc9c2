"""Hostile values at `hugebench plan` (issue 38): a 400-digit claim, a pool no machine has, a `lost_after` of
1e20, NaN, infinities, unicode and deep nesting at the keys that hold numbers — each a clean error that names
the file, the line, the key and the real limit; never a traceback."""

from __future__ import annotations

import math

import pytest
import yaml
from click.testing import CliRunner

from hugebench.cli import main

BASE = {
    "name": "h",
    "workload": "hashlookup",
    "repetitions": 2,
    "timeout": 60,
    "params": {"keys": 1000},
    "axes": {"allocator": ["glibc"], "thp": ["never", "always"]},
    "baseline": {"allocator": "glibc", "thp": "never"},
    "expected": {
        "source": "s",
        "claims": [
            {"cell": {"thp": "never"}, "value": 10},
            {"cell": {"thp": "always"}, "vs": {"thp": "never"}, "change": -10},
        ],
    },
}
DEEP: list = []
for _ in range(40):
    DEEP = [DEEP]
HOSTILE = [
    10**400,
    -(10**400),
    2**64,
    -1,
    0,
    1e308,
    math.nan,
    math.inf,
    -math.inf,
    True,
    None,
    "ünï©ødé ✓",
    "\u202e\u200b",
    DEEP,
    "9" * 400,
    "1e400",
]
KEYS = [
    ("expected", "claims", 0, "value"),
    ("expected", "claims", 1, "change"),
    ("system", "hugetlb.2MB"),
    ("timeout",),
    ("repetitions",),
    ("cluster", "lost_after"),
    ("cluster", "wait"),
]


class _Dumper(yaml.SafeDumper):
    def represent_float(self, value):  # YAML's own spelling of NaN and the infinities
        if math.isnan(value) or math.isinf(value):
            text = ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
            return self.represent_scalar("tag:yaml.org,2002:float", text)
        return super().represent_float(value)


_Dumper.add_representer(float, _Dumper.represent_float)


def _plan(tmp_path, doc: dict):
    path = tmp_path / "x.yaml"
    path.write_text(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True))
    return CliRunner().invoke(main, ["plan", str(path)])


def _with(key: tuple, value) -> dict:
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    if key[0] == "cluster":
        doc["cluster"] = {"scheduler": "tcp://127.0.0.1:8786", "insecure_accept_any_client": True}
    node = doc
    for part in key[:-1]:
        node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
    node[key[-1]] = value
    return doc


@pytest.mark.parametrize("key", KEYS, ids=lambda key: ".".join(map(str, key)))
def test_every_hostile_value_is_a_clean_error_or_a_plan(tmp_path, key):
    for value in HOSTILE:
        result = _plan(tmp_path, _with(key, value))
        shown = repr(value)[:40]
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"{key}={shown}: {type(result.exception).__name__}: {result.exception}"
        )
        assert "Traceback" not in result.output, (key, shown)
        if result.exit_code:
            line = result.output.strip().splitlines()[-1]
            assert line.startswith("hugebench: error:") and len(line) < 600, line


def test_a_claim_of_400_digits_names_the_key_and_the_limit(tmp_path):
    result = _plan(tmp_path, _with(("expected", "claims", 0, "value"), 10**400))
    assert result.exit_code == 2, result.output
    assert "key 'expected.claims.0.value'" in result.output
    assert "positive number below 1.8e+308" in result.output
    assert "(401 characters)" in result.output  # the value by its size, not 401 digits


def test_lost_after_and_wait_state_the_real_limit(tmp_path):
    for key in ("lost_after", "wait"):
        result = _plan(tmp_path, _with(("cluster", key), 1e20))
        assert result.exit_code == 2, result.output
        assert f"cluster.{key}" in result.output
        assert "> 0 and <= 604800 (a week), got 1e+20" in result.output


def test_a_hugetlb_pool_of_400_digits_is_refused_by_size(tmp_path):
    result = _plan(tmp_path, _with(("system", "hugetlb.2MB"), 10**400))
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "hugetlb.2MB" in result.output and "(401 digits)" in result.output
    assert "more memory than any machine has" in result.output
