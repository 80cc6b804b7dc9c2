"""The hidden ``--sys-root``/``--proc-root`` options (tests point them at a fake tree) that every command acting
on the machine takes, turned into the one :class:`~hugebench.kernel.Host` the command passes down."""

from __future__ import annotations

import functools
import os

import click

from hugebench.errors import HugebenchError
from hugebench.kernel.host import Host


def host_at(sys_root: str | None, proc_root: str | None) -> Host:
    """The Host of ``--sys-root``/``--proc-root``; a root that is no directory is refused (never read as a
    machine without knobs)."""
    for option, root in (("--sys-root", sys_root), ("--proc-root", proc_root)):
        if root is not None and not os.path.isdir(root):
            raise HugebenchError(
                f"{option} {root}: not a directory; give where sysfs/procfs is (default /sys, /proc)"
            )
    return Host.at(sys_root, proc_root)


def host_options(command):
    """``--sys-root`` and ``--proc-root`` (hidden; also $HUGEBENCH_SYS_ROOT, $HUGEBENCH_PROC_ROOT), given to
    ``command`` as ``host``: built here, once per command."""

    @functools.wraps(command)
    def with_host(*args, sys_root, proc_root, **kwargs):
        return command(*args, host=host_at(sys_root, proc_root), **kwargs)

    with_host = click.option(
        "--proc-root", envvar="HUGEBENCH_PROC_ROOT", default="/proc", hidden=True
    )(with_host)
    return click.option("--sys-root", envvar="HUGEBENCH_SYS_ROOT", default="/sys", hidden=True)(
        with_host
    )
