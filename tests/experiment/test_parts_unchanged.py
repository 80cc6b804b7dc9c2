"""The typed parts of an experiment (issue 39) change no stored value: every experiments/*.yaml, and files using
the parts the shipped experiments leave out, give the fingerprint, the ``to_dict()`` (the context file's ``spec``)
and the run ids they gave while the parts were dicts.

The expected values were computed on main at 893293f (before the parts were typed) by this file's own
``_digests`` over the same files, loaded from the repository's root with ``local=False``, in a checkout at
``/work/wt/typed``: a command experiment's ``cwd`` parameter is the absolute path of its file's folder, part
of its fingerprint, so a checkout elsewhere is compared with that path put back (``_as_recorded``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from paths import ROOT

from hugebench.experiment import load_spec, parse_spec
from hugebench.sweep import plan as plan_mod

EXTRA = {
    "parts": """name: parts
workload: hashlookup
repetitions: {auto: {min: 4, max: 9, target: 0.05}}
condition_memory: {compact: true}
allocators:
  mine: {path: /opt/lib/libmine.so, env: {MINE: "1"}}
  tuned: {base: jemalloc, env: {MALLOC_CONF: "thp:always"}}
axes: {allocator: [glibc, mine, tuned], thp: [never, always]}
system: {thp.defrag: madvise}
cluster: {scheduler: tls://lab1:8786, certs: /etc/hb, machines: spread, workers: 3}
""",
    "cond_true": """name: c2
workload: hashlookup
condition_memory: true
cluster: {ssh: [a, b], insecure_accept_any_client: true}
""",
    "cond_false": """name: c3
workload: hashlookup
condition_memory: {compact: false, drop_caches: false}
repetitions: {auto: {max: 12, target: 0.03, metric: ns_per_lookup}}
""",
}

# name -> (fingerprint, sha1 of json.dumps(to_dict()), sha1 of the planned run ids); "+name" is EXTRA[name]
BEFORE = {
    "aged-defrag": ("c21d0218201c", "f77ed6c098b9054d", "348aab57c22a682d"),
    "aged-fleet": ("8e9f4c375260", "85e332723723f040", "449d6bc213a95837"),
    "aged-quick": ("633743c086dd", "b3756d4764c7f26d", "6e1c6f686f2d57bf"),
    "aged": ("3ca3a48f4646", "31d083879450c095", "ce7508f960f4bcf8"),
    "alloc-inverse": ("0063db1e7738", "5dc54088e2b1ca8c", "ee100e5063613942"),
    "alloc-ithare": ("fd46297e4edf", "59948923df0530ff", "293106aa6c44d17f"),
    "alloc-quick": ("9cb672b69890", "9c5a1e68a59cb9b5", "b73b63d37a9ebbe2"),
    "alloc": ("96a91160dcf0", "70f204417ddc5ed1", "d5bd09be9da07d31"),
    "article": ("6484149bc96b", "fc42a6b928dee57e", "2cb44102c77e016d"),
    "code-quick": ("7b0521a3ac1d", "589fa8f2d60fdc79", "e6ecb0415bae3839"),
    "code": ("777a0468bd10", "a6a51b9f9cb41526", "c00e06ac122a72d2"),
    "faults-quick": ("c67e5946a9ae", "c355198685db3333", "f275a3af046ebe9d"),
    "faults": ("dde7a7efa121", "f8363fe8a851b868", "36d961f633099c74"),
    "fleet-quick": ("1b8dce4a2467", "fa3a1599cc66d19b", "cce8cec04ca42d06"),
    "fleet": ("1a27810557f2", "8565bb2d355155d2", "b39ff0a775e13402"),
    "gcc-quick": ("20ad9b6c4ba3", "396dccca3f14f0fa", "690699120d009b29"),
    "gcc-text": ("4c1e83e6e495", "51884af71ee036d8", "724da071828943ac"),
    "gcc": ("17c6991618c6", "11ad1976cb53c51d", "5800d67fabcc2ba1"),
    "python-quick": ("bfd1a94ce688", "84bfc92c37baaf51", "36a3b1004ae34101"),
    "python": ("afe803a4947c", "197115b4e0f1f1c3", "fa769dc9b658594d"),
    "quick": ("515ee37f582d", "407c0b07ac5a9139", "e4a100ae7b8f1a2c"),
    "redis-quick": ("a1600b317705", "e8b5eaa438675149", "ef31a9d968d02c51"),
    "redis-snapshot": ("e8488840c21c", "38b7b475e1f84094", "47f9b6f41178436c"),
    "redis": ("8e1a7feaad22", "796d67ab4663d393", "e62f7f0ac6ff56a9"),
    "sampling-cost": ("8d68f8dd9dd7", "216f269ccd1180f3", "dd7c69bf235bfa3d"),
    "sets-longkeys": ("6b49f6a47018", "103ab7cd01a30522", "71b104cde20b91c7"),
    "sets-paired": ("3343cec7de8e", "fe8be5a36e546922", "b1219315856de744"),
    "sets": ("87b79892c236", "08bfe76d0f389330", "d1ca42a36058c2e1"),
    "tlb-10m": ("74ec4d3aeb87", "861941d2cbd83004", "fa9630563ea8fbb3"),
    "tlb": ("09eadc6ffcca", "3c5702bd53e9593f", "13cbb4e3c8f08944"),
    "+parts": ("0d5b315bafbc", "9dbb22e69e0a68f3", "ca873458b4dfefa9"),
    "+cond_true": ("5407664abd5c", "e33cf3d6edcae728", "515d2f37361fe7c7"),
    "+cond_false": ("0a84a4c242e0", "9ba3457d55123ce7", "c693d1a93337b31b"),
}


RECORDED_ROOT = "/work/wt/typed"  # where the expected values were computed


def _as_recorded(spec):
    """The spec with this checkout's absolute path in its parameters put back to the recorded checkout's."""
    here = str(ROOT)

    def back(value):
        if isinstance(value, str) and (value == here or value.startswith(here + "/")):
            return RECORDED_ROOT + value[len(here) :]
        return value

    return dataclasses.replace(spec, params={k: back(v) for k, v in spec.params.items()})


def _digest(obj) -> str:
    return hashlib.sha1(json.dumps(obj, default=str).encode()).hexdigest()[:16]


def _digests(spec) -> tuple[str, str, str]:
    runs = plan_mod.plan(spec)
    return spec.fingerprint(), _digest(spec.to_dict()), _digest([run.run_id for run in runs])


def test_every_experiment_is_covered():
    assert {p.stem for p in (ROOT / "experiments").glob("*.yaml")} == {
        name for name in BEFORE if not name.startswith("+")
    }


@pytest.mark.parametrize("name", [n for n in BEFORE if not n.startswith("+")])
def test_an_experiment_file_keeps_its_fingerprint_dict_and_run_ids(name, monkeypatch):
    monkeypatch.chdir(
        ROOT
    )  # the source, part of to_dict(), is the path as given: experiments/NAME.yaml
    spec = load_spec(Path("experiments") / f"{name}.yaml", local=False)
    assert _digests(_as_recorded(spec)) == BEFORE[name]


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_the_parts_keep_their_fingerprint_dict_and_run_ids(name):
    spec = parse_spec(EXTRA[name], name + ".yaml", local=False)
    assert _digests(spec) == BEFORE["+" + name]
