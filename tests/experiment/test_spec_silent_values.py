"""Values that were accepted and then misread or failed later (issue 53): each is refused when the file is
read, in one line naming the file, the line and the key."""

from __future__ import annotations

import pytest

from hugebench.errors import SpecError
from hugebench.experiment import parse_spec
from hugebench.system import aging

COMMAND = "name: t\nworkload: command\nparams:\n  argv: [/bin/true]\n"


def _error(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "exp.yaml")
    message = str(info.value)
    assert "\n" not in message and message.startswith("exp.yaml:"), message
    return message


@pytest.mark.parametrize("ready", ["{}", "null", "{path: a, port: 80}"])
def test_a_server_ready_that_names_no_one_condition_is_refused(ready):
    said = _error(COMMAND + f"  server: {{argv: [/bin/sleep, '1'], ready: {ready}}}\n")
    assert "params.server" in said and "server.ready must be one of" in said


def test_a_server_without_ready_is_still_taken():
    parse_spec(COMMAND + "  server: {argv: [/bin/sleep, '1']}\n", "exp.yaml")


@pytest.mark.parametrize("value", ["1.0e9", "1e9", "1.0e+9", "5000"])
def test_a_sample_interval_past_its_bound_says_the_bound(value):
    said = _error(COMMAND + f"  sample_interval: {value}\n")
    assert "sample_interval must be <= 3600" in said and "must be float" not in said


def test_a_sample_interval_in_exponent_form_within_bounds_is_a_number():
    spec = parse_spec(COMMAND + "  sample_interval: 5e-1\n", "exp.yaml")
    assert spec.params["sample_interval"] == 0.5


@pytest.mark.parametrize("state", ["fragmented:٥٠%", "fragmented-movable:５０%", "fragmented:²%"])
def test_a_memory_state_level_takes_ascii_digits_only(state):
    with pytest.raises(ValueError, match="memory_state must be"):
        aging.parse(state)
    said = _error(COMMAND + f"axes: {{memory_state: [fresh, '{state}']}}\n")
    assert "memory_state" in said
