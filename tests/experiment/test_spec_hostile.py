"""Hostile and sloppy experiment files (issue 11): each is refused in bounded time with one line naming the
file, the line and the key — never a traceback, a hang, or a silently different experiment."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner
from paths import ROOT

from hugebench import experiment as spec_mod
from hugebench.cli import main
from hugebench.errors import SpecError, ToolMissingError
from hugebench.experiment import load_spec, parse_spec
from hugebench.sweep import plan as plan_mod
from hugebench.workloads import parse_count

HEAD = "name: t\nworkload: hashlookup\n"


def _error(text: str, cls=SpecError) -> str:
    with pytest.raises(cls) as info:
        parse_spec(HEAD + text, "exp.yaml")
    message = str(info.value)
    assert "\n" not in message
    return message


# -- 1. size: alias expansion and file size ------------------------------------------------------------


def test_billion_laughs_is_refused_quickly():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    started = time.perf_counter()
    msg = _error("description:\n" + "\n".join("  " + line for line in lines) + "\n")
    assert time.perf_counter() - started < 5
    assert "exp.yaml:" in msg and "aliases expanded" in msg


def test_recursive_alias_is_refused():
    assert "contains it" in _error("description: &a [*a]\n")


def test_deep_nesting_is_refused():
    assert "nested deeper than" in _error("description: " + "[" * 5000 + "]" * 5000 + "\n")
    deep_by_alias = (
        "x: &a " + "[" * 40 + "]" * 40 + "\ndescription: " + "[" * 30 + "*a" + "]" * 30 + "\n"
    )
    assert "nested deeper than" in _error(deep_by_alias)


def test_file_above_the_size_limit_is_refused(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(HEAD + "description: '" + "x" * spec_mod.MAX_FILE_BYTES + "'\n")
    with pytest.raises(SpecError, match="larger than 1024 KiB"):
        load_spec(path)


# -- 4. what used to be a traceback -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, words",
    [
        ("null", "must be a mapping"),
        ("3", "must be a mapping"),
        ("[a]", "must be a mapping"),
        ("{base: jemalloc, env: [a]}", "env must be a mapping"),
        ("{base: jemalloc, env: {A: [1]}}", "must be a string or a number"),
        ("{base: jemalloc, env: {'A=B': 1}}", "not an environment variable name"),
        ("{base: [jemalloc]}", "base must be a string"),
        ("{base: jemalloc, path: /lib/x.so}", "not both"),
    ],
)
def test_bad_allocator_entries(entry, words):
    msg = _error(f"allocators:\n  mine: {entry}\n")
    assert msg.startswith("exp.yaml:4: key 'allocators.mine': ") and words in msg


@pytest.mark.parametrize("value", ["infK", "nan", "1e400", "1e3k", "-inf", "0x10", "k"])
def test_counts_that_are_not_numbers(value):
    msg = _error(f"params: {{keys: '{value}'}}\n")
    assert msg.startswith("exp.yaml:3: key 'params.keys': ") and "is not a count" in msg
    with pytest.raises(ValueError):
        parse_count(value)


def test_counts_still_read():
    assert [parse_count(t) for t in ("10M", "1.5G", "64Ki", "4GiB", "1_000", "2 k")] == [
        10**7,
        1_500_000_000,
        65536,
        2**32,
        1000,
        2000,
    ]


@pytest.mark.parametrize(
    "text, key",
    [
        ("axes: {1: [x]}\n", "axes"),
        ("axes: {[a]: b}\n", "axes"),
        ("params: {~: 1}\n", "params"),
        ("axes: {allocator: [[glibc]]}\n", "axes.allocator.0"),
        ("axes: {thp: [[never]]}\n", "axes.thp.0"),
        ("params: {zipf_s: .nan}\n", "params.zipf_s"),
        ("params: {zipf_s: .inf}\n", "params.zipf_s"),
        ("params: {keys: 99999999999999999999999}\n", "params.keys"),
        ("workload2: x\n", "workload2"),
        ("description: 2020-13-45\n", None),
        ("seed: !!int x\n", None),
        ("seed: " + "1" * 5000 + "\n", None),
    ],
)
def test_odd_values_and_keys_name_line_and_key(text, key):
    msg = _error(text)
    assert msg.startswith("exp.yaml:3: ")
    if key:
        assert f"key '{key}'" in msg


def test_workload_given_as_a_list():
    assert "key 'workload': unknown workload ['x']" in _error_text("name: t\nworkload: [x]\n")


def test_non_utf8_file_names_the_line(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_bytes(HEAD.encode() + b"description: '\xff'\n")
    with pytest.raises(SpecError, match=r"exp.yaml:3: not UTF-8 text \(byte 0xff"):
        load_spec(path)


def test_control_character_names_the_line():
    assert _error("description: 'a\x00'\n").startswith(
        "exp.yaml:3: not valid YAML: character 0x0000"
    )


def test_key_with_a_newline_stays_one_line():
    assert "key 'a\\nb'" in _error('"a\\nb": 1\n')


# -- 9. duplicate run ids --------------------------------------------------------------------------------


def test_values_equal_after_coercion_are_one_value_twice():
    msg = _error("axes: {keys: [1000, 1k]}\n")
    assert (
        msg.startswith("exp.yaml:3: key 'axes.keys.1': lists a value twice")
        and "both are 1000" in msg
    )
    assert "lists a value twice" in _error("axes: {zipf_s: [1, 1.0]}\n")
    assert "lists a value twice" in _error("axes: {allocator: [glibc, glibc]}\n")


# -- 11. an experiment without axes is reportable ------------------------------------------------------


def test_no_axes_means_one_allocator_axis_with_the_same_cell():
    spec = parse_spec(HEAD + "params: {keys: 1000}\n")
    assert spec.axes == {"allocator": ("glibc",)}
    with_axis = parse_spec(HEAD + "params: {keys: 1000}\naxes: {allocator: [glibc]}\n")
    assert [r.run_id for r in plan_mod.plan(spec)] == [r.run_id for r in plan_mod.plan(with_axis)]


# -- 12. checks that came late or never -------------------------------------------------------------------


@pytest.mark.parametrize("value", [".nan", ".inf", "-1", "0", "1.0e+99", "yes"])
def test_timeout_must_be_a_finite_positive_number(value):
    assert _error(f"timeout: {value}\n").startswith(
        "exp.yaml:3: key 'timeout': must be a number of seconds"
    )


@pytest.mark.parametrize(
    "text, key",
    [
        ("system: {thp: no}\n", "system.thp"),
        ("system: {thp.defrag: yes}\n", "system.thp.defrag"),
        ("axes: {thp.khugepaged.defrag: [on, off]}\n", "axes.thp.khugepaged.defrag.0"),
        ("params: {set_kind: no}\n", "params.set_kind"),
    ],
)
def test_yaml_booleans_where_a_word_is_meant(text, key):
    msg = _error(text)
    assert f"key '{key}'" in msg and "quote the word" in msg


def test_booleans_are_strict_where_a_bool_is_meant():
    assert "must be true or false" in _error("condition_memory: {compact: 'no'}\n")
    msg = _error_text("name: t\nworkload: faultstorm\nparams: {first_touch: 'yes'}\n")
    assert "first_touch must be bool" in msg


def _error_text(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "exp.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    "name", ["../x", "a/b", "..", "", ".hidden", "a\x01b", "x" * 101, "no", "a b"]
)
def test_unsafe_experiment_names_are_refused(name):
    msg = _error_text(f"name: {name!r}\nworkload: hashlookup\n".replace("name: 'no'", "name: no"))
    assert "key 'name'" in msg and "names the results directory" in msg


def test_user_allocator_path_must_exist_when_used():
    text = (
        "axes: {allocator: [glibc, mine]}\nallocators:\n  mine: {path: /nonexistent/libmine.so}\n"
    )
    msg = _error(text, ToolMissingError)
    assert (
        msg.startswith("exp.yaml:5: key 'allocators.mine.path': ")
        and "/nonexistent/libmine.so not found" in msg
    )
    parse_spec(
        HEAD + "allocators:\n  mine: {path: /nonexistent/libmine.so}\n"
    )  # defined, not used: fine


def test_builtin_allocator_library_may_be_missing_at_plan_time(monkeypatch):
    from hugebench.machine import allocators

    monkeypatch.setattr(allocators, "find_library", lambda lib: None)
    assert parse_spec(HEAD + "axes: {allocator: [tcmalloc]}\n").axes["allocator"] == ("tcmalloc",)


def test_crossed_min_and_max_are_refused_at_load():
    assert "key_min (30) is larger than key_max (19)" in _error("params: {key_min: 30}\n")
    msg = _error("axes: {key_max: [40, 5]}\n")
    assert msg.startswith("exp.yaml:3: key 'axes.key_max'") and "key_max (5)" in msg
    _error_text("name: t\nworkload: alloctest\nparams: {min_size: 100, max_size: 10}\n")
    parse_spec(
        HEAD + "axes: {key_max: [40, 5]}\nexclude: [{key_max: 5}]\n"
    )  # the crossed cell is left out


def test_excluded_baseline_and_everything_excluded():
    axes = "axes: {thp: [never, always], keys: [1k, 2k]}\n"
    msg = _error(axes + "exclude: [{thp: never}]\nbaseline: {thp: never}\n")
    assert "key 'baseline'" in msg and "excluded" in msg
    msg = _error(axes + "exclude: [{thp: never}, {thp: always}]\n")
    assert "key 'exclude'" in msg and "nothing would run" in msg


def test_everything_excluded_creates_no_folder(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + "axes: {thp: [never]}\nexclude: [{thp: never}]\n")
    result = CliRunner().invoke(main, ["sweep", str(path), "-o", str(tmp_path / "r"), "-q"])
    assert result.exit_code == 2 and "nothing would run" in result.output
    assert not (tmp_path / "r").exists()


def test_knob_in_system_and_on_an_axis_is_refused():
    msg = _error("axes: {thp: [never]}\nsystem: {thp.enabled: always}\n")
    assert msg.startswith("exp.yaml:4: key 'system.thp.enabled'") and "also an axis" in msg


def test_plan_counts_system_knobs(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + "params: {keys: 1000}\nsystem: {thp.defrag: never}\n")
    result = CliRunner().invoke(main, ["plan", str(path), "-o", str(tmp_path / "r")])
    assert (
        result.exit_code == 0
        and "sets kernel knobs thp.defrag (0 changes between runs)" in result.output
    )
    assert plan_mod.summary(plan_mod.plan(load_spec(path)))["knobs"] == ["thp.defrag"]


def test_repetitions_and_total_runs_are_bounded(tmp_path):
    assert _error("repetitions: 1000000000\n").startswith(
        "exp.yaml:3: key 'repetitions': must be an integer"
    )
    keys = ", ".join(str(k) for k in range(1, 202))
    msg = _error(f"repetitions: 5000\naxes: {{keys: [{keys}]}}\n")
    assert "key 'repetitions'" in msg and "1005000 runs" in msg
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD)
    result = CliRunner().invoke(
        main, ["plan", str(path), "-r", "1000000000", "-o", str(tmp_path / "r")]
    )
    assert result.exit_code == 2 and result.output.startswith(
        f"hugebench: error: -r 1000000000 (for {path}): must be an integer from 1 to 10000"
    )  # the flag is checked at load like the file's value, and the error names what was typed
    wide = tmp_path / "wide.yaml"
    wide.write_text(HEAD + f"axes: {{keys: [{keys}]}}\n")
    many = CliRunner().invoke(main, ["plan", str(wide), "-r", "5000"])
    assert many.exit_code == 2 and "-r 5000 (for" in many.output and "1005000 runs" in many.output


def test_axes_product_is_bounded_before_it_is_enumerated():
    values = ", ".join(str(k) for k in range(1, 101))
    started = time.perf_counter()
    msg = _error(
        "axes: {"
        + ", ".join(f"{p}: [{values}]" for p in ("keys", "lookups", "chunks", "seed"))
        + "}\n"
    )
    assert "100000000 cells" in msg and time.perf_counter() - started < 5


def test_shipped_experiments_still_load():
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        assert plan_mod.plan(load_spec(path))


# -- issue 26 §4: accepted at load, failing at run time --------------------------------------------------

CMD = "name: t\nworkload: command\n"


def _cmd_error(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(CMD + text, "exp.yaml")
    return str(info.value)


def test_numbers_in_a_command_line_are_given_to_the_program_as_text():
    spec = parse_spec(
        CMD + "params: {argv: [/bin/sleep, 0, 1.5], setup: [/bin/echo, 7], env: {N: 3},\n"
        "         server: {argv: [/bin/sleep, 2], ready: {port: 6379}}}\n",
        "exp.yaml",
    )
    assert spec.params["argv"] == ["/bin/sleep", "0", "1.5"] and spec.params["setup"] == [
        "/bin/echo",
        "7",
    ]
    assert spec.params["env"] == {"N": "3"} and spec.params["server"]["argv"] == ["/bin/sleep", "2"]
    run = plan_mod.plan(spec)[0]
    assert all(isinstance(a, str) for a in run.params["argv"] + list(run.params["env"].values()))


@pytest.mark.parametrize(
    "text, key, words",
    [
        (
            "params: {argv: [/bin/true], env: {'A=B': x}}\n",
            "params.env",
            "not an environment variable name",
        ),
        ("params: {argv: [/bin/true], env: {A: yes}}\n", "params.env", "quote"),
        (
            "params: {argv: [/bin/true], env: {HUGEBENCH_RUN: x}}\n",
            "params.env",
            "sets this itself",
        ),
        (
            "params: {argv: [/bin/true], env: {LD_PRELOAD: /x.so}}\n",
            "params.env",
            "allocator of each cell",
        ),
        ('params: {argv: [/bin/true, "a\\0b"]}\n', "params.argv", "NUL"),
        ('params: {argv: [/bin/true], env: {A: "\\ud800"}}\n', "params.env", "lone surrogate"),
        ('params: {argv: [/bin/true, "{x}"], x: "\\udc80"}\n', "params.x", "lone surrogate"),
        ('params: {argv: [/bin/true], cwd: "a\\0"}\n', "params.cwd", "NUL"),
        (
            "params: {argv: [/bin/true], server: {argv: [/bin/true], ready: {log: '('}}}\n",
            "params.server",
            "not a regular expression",
        ),
        (
            "params: {argv: [/bin/true], server: {argv: [/bin/true], ready: {port: true}}}\n",
            "params.server",
            "TCP port",
        ),
        ("params: {argv: [/bin/true, " + "x" * 140_000 + "]}\n", "params.argv", "MAX_ARG_STRLEN"),
        ("params: {argv: [/bin/true], windw: markers}\n", "params.windw", "did you mean window?"),
        ("params: {argv: [/bin/true], timeout: 5}\n", "params.timeout", "top-level key"),
        ("params: {argv: [/bin/true], stdn: /dev/null}\n", "params.stdn", "did you mean stdin?"),
        (
            "params: {argv: [/bin/true], stdin: /no/such/file}\n",
            "params.stdin",
            "not a readable file",
        ),
        ("params: {argv: [/bin/true], text_pages: thp}\n", "params.text_pages", "an axis"),
        ("axes: {argv: [[/bin/echo, 1], [/bin/echo, 2]]}\n", "axes.argv.0", "one value"),
    ],
)
def test_what_a_program_cannot_be_given_is_refused_at_load(text, key, words):
    msg = _cmd_error(text)
    assert msg.startswith("exp.yaml:3: key ") and f"'{key}" in msg and words in msg, msg


def test_an_argument_list_over_arg_max_is_refused(monkeypatch):
    import os

    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: 200_000 if name == "SC_ARG_MAX" else real(name))
    msg = _cmd_error("params: {argv: [/bin/true, " + ", ".join(["y" * 60_000] * 4) + "]}\n")
    assert "key 'params.argv'" in msg and "ARG_MAX" in msg


@pytest.mark.parametrize(
    "entry, words",
    [
        ("{path: '/opt/my lib/x.so'}", "LD_PRELOAD splits"),
        ("{path: '/opt/a:b.so'}", "LD_PRELOAD splits"),
        ("{base: jemalloc, env: {LD_PRELOAD: /x.so}}", "sets this itself"),
        ("{path: /x.so, env: {HB_PROBE_DIR: /tmp}}", "sets this itself"),
        ('{base: jemalloc, env: {MALLOC_CONF: "\\udc80"}}', "lone surrogate"),
    ],
)
def test_allocators_ld_preload_cannot_carry_are_refused(entry, words):
    msg = _error(f"allocators:\n  mine: {entry}\n")
    assert msg.startswith("exp.yaml:4: key 'allocators.mine': ") and words in msg, msg


@pytest.mark.parametrize(
    "numbers",
    [
        "value: 1.0e+308, vs_value: 1.0e-308",
        "value: 1.0e-308, vs_value: 1.0e+308",
        "ratio: 5.0e-324",
        "ratio: 1.0e+308",
    ],
)
def test_published_ratios_a_report_cannot_use_are_refused(numbers):
    msg = _error(
        "axes: {keys: [1k, 2k]}\nexpected: {source: x, claims: [{cell: {keys: 1k}, vs: {keys: 2k}, "
        f"{numbers}}}]}}\n"
    )
    assert "key 'expected.claims.0." in msg and "makes a ratio of" in msg, msg


def test_text_pages_thp_with_thp_never_is_refused_at_load():
    assert "key 'axes.text_pages'" in _error("axes: {text_pages: [thp], thp: [never, always]}\n")
    assert "key 'system.thp'" in _error("axes: {text_pages: [thp, 'off']}\nsystem: {thp: never}\n")
    parse_spec(
        HEAD + "axes: {text_pages: [thp, 'off'], thp: [never, always]}\n"
        "exclude: [{text_pages: thp, thp: never}]\n",
        "exp.yaml",
    )


def test_settings_a_sweep_refuses_are_refused_at_load():
    assert "key 'axes.allocator.0'" in _error("axes: {allocator: [void]}\n")
    msg = _error(
        "repetitions: {auto: {max: 8, target: 0.05}}\ncluster: {scheduler: 'tls://x:8786', certs: c}\n"
    )
    assert "key 'cluster'" in msg and "machines: spread" in msg


def test_a_metric_regex_with_braces_and_a_used_parameter_still_load():
    spec = parse_spec(
        CMD + "params: {argv: [/bin/echo, '{n}'], n: 5, "
        "metric: {regex: 'took ([0-9]{1,9}) ms', name: took_ms}}\n",
        "exp.yaml",
    )
    assert spec.params["n"] == 5
