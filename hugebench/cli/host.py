"""The hidden ``--sys-root``/``--proc-root`` options (tests point them at a fake tree) that every command acting
on the machine takes, turned into the one :class:`~hugebench.kernel.Host` the command passes down."""

from __future__ import annotations

import functools

import click

from hugebench.kernel.host import Host


def host_options(command):
    """``--sys-root`` and ``--proc-root`` (hidden; also $HUGEBENCH_SYS_ROOT, $HUGEBENCH_PROC_ROOT), given to
    ``command`` as ``host``: built here, once per command."""

    @functools.wraps(command)
    def with_host(*args, sys_root, proc_root, **kwargs):
        return command(*args, host=Host.at(sys_root, proc_root), **kwargs)

    with_host = click.option(
        "--proc-root", envvar="HUGEBENCH_PROC_ROOT", default="/proc", hidden=True
    )(with_host)
    return click.option("--sys-root", envvar="HUGEBENCH_SYS_ROOT", default="/sys", hidden=True)(
        with_host
    )
