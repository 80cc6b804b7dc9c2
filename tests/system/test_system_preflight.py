"""Preflight (names, values, privileges with an injected euid) and the per-process prctl THP switch."""

from __future__ import annotations

import subprocess
import sys

import pytest
from paths import ROOT

from hugebench.errors import PrivilegeError
from hugebench.system import KnobValueError, UnknownKnobError, check_privileges

SOURCE_DIR = ROOT


def check(fake, settings_list, euid, **kwargs):
    return check_privileges(settings_list, fake.host, euid=euid, **kwargs)


def test_root_may_change_anything_allowed(fake_sys):
    assert check(fake_sys, [{"thp": "always"}, {"thp": "never", "hugetlb.1GB": 2}], euid=0) == {}
    assert fake_sys.writes == []


def test_unchanged_values_need_no_root(fake_sys):
    assert (
        check(
            fake_sys,
            [{"thp.enabled": "madvise", "thp.defrag": "madvise", "hugetlb.2MB": 0}],
            euid=1000,
        )
        == {}
    )


def test_refusal_without_root_gives_the_exact_fix(fake_sys):
    with pytest.raises(PrivilegeError) as info:
        check(fake_sys, [{"thp": "madvise"}, {"thp": "always"}], euid=1000)
    message = str(info.value)
    assert message.startswith(
        "THP mode 'always' needs root: run `sudo hugebench sweep FILE`, or set it yourself:"
    )
    assert (
        f"echo always | sudo tee {fake_sys.sys_root}/kernel/mm/transparent_hugepage/enabled"
        in message
    )


def test_unknown_names_and_bad_values_fail_first(fake_sys):
    with pytest.raises(UnknownKnobError, match="thp.enabled"):
        check(fake_sys, [{"thp.mode": "always"}], euid=0)
    with pytest.raises(KnobValueError, match="inherit"):
        check(fake_sys, [{"thp.mthp.64kB": "sometimes"}], euid=0)
    with pytest.raises(KnobValueError, match="0..1"):
        check(fake_sys, [{"thp.khugepaged.defrag": 2}], euid=0)


def test_never_by_prctl_without_root(fake_sys):
    with pytest.raises(PrivilegeError):
        check(fake_sys, [{"thp": "never"}], euid=1000)
    assert check(
        fake_sys, [{"thp": "madvise"}, {"thp": "never"}], euid=1000, allow_prctl_never=True
    ) == {"thp.enabled": "never"}
    with pytest.raises(PrivilegeError, match="'always'"):
        check(fake_sys, [{"thp": "never"}, {"thp": "always"}], euid=1000, allow_prctl_never=True)
    # as root prctl is not needed: the sysfs knob is set instead
    assert check(fake_sys, [{"thp": "never"}], euid=0, allow_prctl_never=True) == {}


def test_disable_thp_for_this_process_really_takes_effect():
    # In a child: the switch is inherited by every later child of this process, so keep pytest clean.
    code = (
        f"import sys; sys.path.insert(0, {str(SOURCE_DIR)!r})\n"
        "from hugebench.system import disable_thp_for_this_process\n"
        "ok = disable_thp_for_this_process()\n"
        "status = open('/proc/self/status').read()\n"
        "line = [l for l in status.splitlines() if l.startswith('THP_enabled')]\n"
        "print(ok, line[0].split()[1] if line else 'n/a')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "True"
    assert out[1] in ("0", "n/a")  # /proc/PID/status shows THP_enabled on kernels >= 6.x
