"""Fuzzing the experiment-file reader: whatever the file holds, `plan` ends with a result or a HugebenchError.

Most documents start as a *valid* experiment (a skeleton per workload: valid params, axes, and the command,
server, text_pages, knobs, cluster, expected and repetitions sections), then get a few mutations (a value
swapped for a hostile one, a key dropped, misplaced or misspelt), so that most of them reach `plan` and the
checks deep in a file are fuzzed; the rest are built over the real keys with hostile scalars. All are dumped
as YAML and sometimes spliced with raw YAML syntax (anchors, aliases, tags, merge keys, brackets); raw text
and raw bytes are tried too. Each example must finish in seconds: a hang or
an unbounded expansion fails the test through an alarm instead of stalling CI.
"""

from __future__ import annotations

import copy
import itertools
from datetime import timedelta
from unittest import mock

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from time_limit import time_limit

from hugebench import experiment as spec_mod
from hugebench import workloads
from hugebench.cli import main
from hugebench.errors import HugebenchError
from hugebench.machine.allocators import BUILTIN
from hugebench.sweep import plan as plan_mod

EXAMPLE_SECONDS = 10  # one example may take this long before it counts as a hang
FUZZ = settings(
    max_examples=600,
    deadline=timedelta(seconds=3),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PARAMS = sorted({p for w in workloads.WORKLOADS.values() for p in w.params})
KNOBS = [
    "thp",
    "thp.enabled",
    "thp.defrag",
    "thp.khugepaged.max_ptes_none",
    "thp.mthp.64kB",
    "hugetlb.2MB",
    "hugetlb.",
    "thp.x/../y",
]
WEIRD = [
    "10M",
    "1k",
    "1000",
    "64Ki",
    "4GiB",
    "1.5G",
    "infK",
    "nan",
    "-inf",
    "1e400",
    "1e3k",
    "0x10",
    "-5",
    "",
    " ",
    "yes",
    "no",
    "off",
    "on",
    "~",
    "null",
    ".",
    "..",
    "../x",
    "a/b",
    "x\x00y",
    "\t",
    "\u202e",
    "é",
    "never",
    "always",
    "madvise",
    "flat",
    "node",
    "zipf",
    "auto",
    "grouped",
    "interleaved",
    "/nonexistent/lib.so",
    "/bin/sh",
    "/",
    "lib.so",
    "9" * 30,
    *BUILTIN,
    *workloads.WORKLOADS,
]

safe_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-3, 40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WEIRD),
    safe_text,
)
names = st.one_of(
    st.sampled_from(
        [
            "name",
            "workload",
            "path",
            "env",
            "base",
            "compact",
            "drop_caches",
            "allocator",
            *spec_mod._TOP_KEYS,
            *PARAMS,
            *KNOBS,
        ]
    ),
    safe_text,
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
    max_leaves=8,
)
axis_values = st.lists(st.one_of(scalars, st.sampled_from(WEIRD)), min_size=0, max_size=4) | values
cells = st.dictionaries(st.sampled_from(["allocator", "thp", "keys", *PARAMS]), scalars, max_size=3)
allocator_entry = st.one_of(
    values,
    st.fixed_dictionaries(
        {},
        optional={
            "path": st.sampled_from(WEIRD) | values,
            "base": st.sampled_from(WEIRD) | values,
            "env": st.dictionaries(safe_text | st.sampled_from(["A", "1"]), scalars, max_size=3)
            | values,
            "description": scalars,
        },
    ),
)
top_values = {
    "name": st.one_of(st.just("t"), st.just("tlb-1.x"), st.sampled_from(WEIRD) | scalars),
    "workload": st.one_of(
        st.sampled_from(list(workloads.WORKLOADS)),
        st.sampled_from(list(workloads.WORKLOADS)),
        scalars,
    ),
    "description": values,
    "repetitions": st.integers(-2, 30) | scalars,
    "warmup": st.integers(-1, 5) | scalars,
    "seed": scalars,
    "timeout": scalars,
    "params": st.dictionaries(st.sampled_from(PARAMS) | names, scalars | values, max_size=4)
    | values,
    "axes": st.dictionaries(
        st.sampled_from(["allocator", *KNOBS, *PARAMS]) | names, axis_values, max_size=3
    )
    | values,
    "exclude": st.lists(cells | values, max_size=3) | values,
    "baseline": cells | values,
    "allocators": st.dictionaries(
        st.sampled_from(["mine", "glibc", "x y"]) | names, allocator_entry, max_size=2
    )
    | values,
    "system": st.dictionaries(st.sampled_from(KNOBS) | names, scalars, max_size=3) | values,
    "perf": st.sampled_from(["auto", "off", False, ["cycles"], {"c": "cycles"}]) | values,
    "counters": st.sampled_from(["auto", "off"]) | values,
    "order": st.sampled_from(["interleaved", "grouped"]) | scalars,
    "condition_memory": st.sampled_from([True, False, {"compact": True}]) | values,
}
documents = st.fixed_dictionaries(
    {"name": top_values["name"], "workload": top_values["workload"]},
    optional={k: v for k, v in top_values.items() if k not in ("name", "workload")},
)

# -- valid skeletons, then mutated ------------------------------------------------------------------------

SMALL_PARAMS = {  # each workload at a size `plan` accepts on any machine
    "hashlookup": {"keys": st.sampled_from([1000, "2k", "10k"]), "chunks": st.just(2)},
    "hashsets": {
        "keys": st.sampled_from([1000, "5k"]),
        "set_kinds": st.just("flat,node"),
        "rounds": st.just(4),
    },
    "faultstorm": {
        "buffer_bytes": st.sampled_from(["1Mi", "4Mi"]),
        "ops_per_thread": st.just(1000),
    },
    "alloctest": {"iterations": st.just(1000), "slots": st.just(1000)},
    "fleet": {
        "objects": st.just(1000),
        "duration_s": st.just(1.0),
        "sample_interval_s": st.just(0.5),
    },
    "tlbprobe": {"working_set_bytes": st.just("1Mi"), "accesses": st.just(1000)},
    "codetlb": {"footprint_bytes": st.just("1Mi"), "calls": st.just(1000)},
}
PARAM_AXES = {
    "hashlookup": ("set_kind", ["flat", "node"]),
    "faultstorm": ("threads", [1, 2]),
    "alloctest": ("threads", [1, 2]),
    "fleet": ("lookups", [0, 16]),
    "tlbprobe": ("backing", ["4k", "thp"]),
    "codetlb": ("layout", ["sparse", "dense"]),
    "hashsets": ("build_order", ["listed", "reversed"]),
}
KNOB_AXES = {
    "thp.defrag": ["never", "madvise"],
    "thp.mthp.64kB": ["never", "always"],
    "hugetlb.2MB": [0, 2],
    "thp.khugepaged.max_ptes_none": [0, 511],
}
MISPLACED = [
    "timeout",
    "stdin",
    "stdout",
    "text_pages",
    "windw",
    "status",
    "run_id",
    "allocator",
    "experiment",
    "tmp",
    "ready",
    "port",
    "argv",
    "env",
    "auto",
    "claims",
    "cell",
    "vs",
    "scheduler",
    "ssh",
    "thp",
]


@st.composite
def command_params(draw) -> dict:
    params = {
        "argv": draw(
            st.sampled_from(
                [["/bin/true", "{n}"], ["true", "{n}"], ["sh", "-c", "exit 0", "sh", "{n}"]]
            )
        ),
        "n": 5,
    }
    if draw(st.booleans()):
        ready = draw(
            st.sampled_from([{"port": 6399}, {"path": "{tmp}/s.sock"}, {"log": "ready ([0-9]+)"}])
        )
        params["server"] = {"argv": ["/bin/sleep", "{n}"], "ready": ready, "ready_timeout": 10}
    optional = {
        "env": {"FOO": "1", "BAR": "x y"},
        "window": draw(st.sampled_from(["process", "markers"])),
        "sample_interval": 0.5,
        "setup": ["/bin/true"],
        "metric": draw(
            st.sampled_from(
                [
                    "wall",
                    {"regex": "took ([0-9.]+)", "name": "took"},
                    {"json": "rate", "name": "rate", "better": "higher"},
                ]
            )
        ),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=4)):
        params[key] = optional[key]
    return params


@st.composite
def skeletons(draw) -> dict:
    """A valid experiment: a workload with small params, axes, and a few of the optional sections."""
    workload = draw(st.sampled_from(["command", "command", *SMALL_PARAMS]))
    doc = {
        "name": "fz",
        "workload": workload,
        "perf": "off",
        "counters": "off",
        "timeout": 60,
        "seed": 1,
    }
    if workload == "command":
        doc["params"] = draw(command_params())
    else:
        doc["params"] = {k: draw(v) for k, v in SMALL_PARAMS[workload].items()}
    axes = {
        "allocator": draw(
            st.sampled_from([["glibc"], ["glibc", "jemalloc"], ["glibc", "glibc-hugetlb", "mine"]])
        )
    }
    if "mine" in axes["allocator"]:
        doc["allocators"] = {"mine": {"base": "jemalloc", "env": {"MALLOC_CONF": "narenas:1"}}}
    text_axis = workload in ("command", "codetlb") and draw(st.booleans())
    if text_axis:
        axes["text_pages"] = draw(st.sampled_from([["off"], ["off", "thp"], ["off", "file-thp"]]))
    if not text_axis or draw(st.booleans()):
        axes["thp"] = draw(
            st.sampled_from(
                [["madvise"], ["madvise", "always"]] + ([] if text_axis else [["never", "always"]])
            )
        )
    if workload in PARAM_AXES and draw(st.booleans()):
        name, values = PARAM_AXES[workload]
        axes[name] = values
    knobs = draw(st.lists(st.sampled_from(sorted(KNOB_AXES)), unique=True, max_size=2))
    for knob in knobs[:1]:
        axes[knob] = KNOB_AXES[knob]
    if len(knobs) > 1:
        doc["system"] = {knobs[1]: KNOB_AXES[knobs[1]][-1]}
    doc["axes"] = axes
    product = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    optional = {
        "repetitions": draw(
            st.sampled_from(
                [
                    1,
                    3,
                    {"auto": {"min": 3, "max": 5, "target": 0.05}},
                    {"auto": {"max": 4, "target": 0.2, "min": 3}},
                ]
            )
        ),
        "warmup": draw(st.integers(0, 2)),
        "order": draw(st.sampled_from(["interleaved", "grouped"])),
        "condition_memory": draw(
            st.sampled_from([False, {"compact": True}, {"drop_caches": True}])
        ),
        "cluster": draw(
            st.sampled_from(
                [
                    {"scheduler": "tls://lab1:8786", "certs": "/etc/hb"},
                    {"ssh": ["lab1", "lab2"], "certs": "c", "machines": "spread"},
                    {
                        "scheduler": "tcp://10.0.0.1:8786",
                        "insecure_accept_any_client": True,
                        "workers": 2,
                        "wait": 30,
                    },
                ]
            )
        ),
        "baseline": dict(list(product[0].items())[:1]),
        "description": "a fuzzed experiment",
    }
    if len(product) > 1:
        optional["expected"] = {
            "source": "a paper",
            "claims": draw(
                st.sampled_from(
                    [
                        [{"cell": product[0], "value": 10.5}],
                        [{"cell": product[-1], "vs": product[0], "ratio": 1.5, "name": "faster"}],
                        [
                            {
                                "cell": product[-1],
                                "vs": product[0],
                                "value": 3,
                                "vs_value": 2,
                                "note": "n",
                            }
                        ],
                    ]
                )
            ),
        }
        optional["exclude"] = [product[-1]] if "expected" not in doc else []
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=5)):
        if optional[key] != []:
            doc[key] = optional[key]
    if isinstance(doc.get("repetitions"), dict) and "cluster" in doc:
        doc["cluster"] = {**doc["cluster"], "machines": "spread"}  # auto needs one set of decisions
    if "expected" in doc and "exclude" in doc:
        del doc["exclude"]
    return doc


def _paths(node, path=()):
    """Every (path, container) in a document: a mutation replaces, drops or adds there."""
    yield path, node
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in items:
        yield from _paths(value, (*path, key))


@st.composite
def mutated_documents(draw) -> dict:
    """A valid skeleton with 0-3 mutations: a value swapped for a hostile one, a key dropped, a key added where
    it does not belong (a misplaced or reserved name), a key misspelt."""
    doc = copy.deepcopy(draw(skeletons()))  # its lists are shared with the tables above
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 1, 2]))):
        path, node = draw(st.sampled_from(list(_paths(doc))))
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key, how = (
            path[-1],
            draw(st.sampled_from(["replace", "replace", "drop", "add", "misspell"])),
        )
        if how == "replace":
            parent[key] = draw(st.one_of(scalars, values, st.sampled_from(WEIRD)))
        elif how == "drop" and isinstance(parent, dict):
            del parent[key]
        elif how == "add" and isinstance(node, dict):
            node[draw(st.sampled_from(MISPLACED) | names)] = draw(scalars | values)
        elif how == "misspell" and isinstance(parent, dict) and isinstance(key, str):
            parent[key[:-1] + draw(st.sampled_from(["x", "", key[-1] * 2]))] = parent.pop(key)
    return doc


SYNTAX = [
    "&a ",
    "*a",
    "&b [*a, *a, *a]",
    "!!int ",
    "!!float ",
    "!!bool ",
    "!!timestamp ",
    "!!binary ",
    "!!set ",
    "!!python/object ",
    "<<: *a\n",
    "<<: ",
    "? ",
    "[",
    "]",
    "{",
    "}",
    ": ",
    "- ",
    "\n  ",
    "\t",
    "'",
    '"',
    "#",
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "\\",
    "|\n",
    ">-\n",
    "\x00",
    "\ufeff",
]


@st.composite
def yaml_texts(draw):
    """A YAML dump of a generated document, with a few bits of raw YAML syntax spliced in at random."""
    skeleton = draw(st.integers(0, 5)) > 0
    doc = draw(mutated_documents()) if skeleton else draw(documents)
    text = yaml.safe_dump(
        doc,
        allow_unicode=draw(st.booleans()),
        default_flow_style=draw(st.sampled_from([None, True, False])),
    )
    for _ in range(draw(st.sampled_from([0, 0, 0, 0, 1, 2] if skeleton else [0, 0, 1, 1, 2, 3]))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(SYNTAX)) + text[at:]
    return text


def _time_limit(seconds: int):
    return time_limit(seconds, "plan (it hangs or expands without bound)")


def _plan_file(path) -> bool:
    """load + plan + summary, as `hugebench plan` does; only HugebenchError may come out. True: it planned."""
    with (
        _time_limit(EXAMPLE_SECONDS),
        mock.patch.object(spec_mod, "MAX_RUNS", 5000),
    ):  # keep each example fast; the bound is what counts
        try:
            spec = spec_mod.load_spec(path)
            plan_mod.summary(plan_mod.plan(spec))
        except HugebenchError as exc:
            lines = str(exc).split("\n")  # several errors: one a line, each naming the file
            assert all(
                line.startswith(str(path)) or line.startswith("... and ") for line in lines
            ), f"a line that is not an error of the file: {exc}"
            return False
    return True


def test_generated_documents_plan_or_fail_cleanly(tmp_path_factory):
    """...and a good share of them get through every check to `plan`: the fuzz reaches deep into a file."""
    planned = []

    @FUZZ
    @given(text=yaml_texts())
    def check(text):
        path = tmp_path_factory.mktemp("fuzz") / "exp.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        planned.append(_plan_file(path))

    check()
    assert sum(planned) >= 0.35 * len(planned), (
        f"only {sum(planned)} of {len(planned)} examples reached plan"
    )


@settings(FUZZ, max_examples=60)
@given(doc=skeletons())
def test_every_skeleton_is_a_valid_experiment(doc, tmp_path_factory):
    """The fuzz's starting points pass every check: a skeleton refused would make its mutations shallow."""
    path = tmp_path_factory.mktemp("skeleton") / "exp.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with (
        mock.patch.object(spec_mod, "MAX_RUNS", 5000),
    ):
        assert plan_mod.plan(spec_mod.load_spec(path))


@settings(FUZZ, max_examples=500)
@given(
    data=st.binary(max_size=300)
    | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass"))
)
def test_raw_bytes_plan_or_fail_cleanly(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "exp.yaml"
    path.write_bytes(data)
    _plan_file(path)


@settings(FUZZ, max_examples=200)
@given(text=yaml_texts())
def test_plan_command_never_shows_a_traceback(text, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzzcli")
    (folder / "exp.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    with (
        _time_limit(EXAMPLE_SECONDS),
        mock.patch.object(spec_mod, "MAX_RUNS", 5000),
    ):
        result = CliRunner().invoke(
            main, ["plan", str(folder / "exp.yaml"), "--runs", "-o", str(folder / "r")]
        )
    assert result.exit_code in (0, 2, 4), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if (
        result.exit_code
    ):  # one error a line (several: a count, then each naming the file), nothing else
        lines = result.output.splitlines()
        assert lines[0].startswith("hugebench: error: "), result.output
        assert all(line.startswith(str(folder)) for line in lines[1:]), result.output
