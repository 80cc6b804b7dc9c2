"""``hugebench exec --thp MODE -- PROGRAM ARGS...``: run a program with a THP policy of its own, no root.

The per-process deploy line of ``try``: instead of writing the machine's THP mode (which every process
gets), the launcher sets the THP policy of its own process by ``prctl(PR_SET_THP_DISABLE)`` and then
becomes the program (``execvp``); the policy is kept across exec and inherited by the program's children.
``never``: THP off (any kernel); ``madvise``: THP only where the program madvises (Linux 6.18's
``PR_THP_DISABLE_EXCEPT_ADVISED``), the per-process form of ``madvise`` on a machine whose mode is
``always``. No policy raises THP above the machine's mode.

``--select RULE``: huge pages for the regions the rule selects (``hugebench.machine.select_rule``) and only
for them: libhbselect.so preloaded with the rule in ``HUGEBENCH_SELECT``; the line that deploys it without
hugebench is printed to stderr first.
"""

from __future__ import annotations

import os

import click

from hugebench.errors import HugebenchError, SpecError


@click.command(
    "exec",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--thp",
    type=click.Choice(["never", "madvise", "system"]),
    default=None,
    help="never: THP off for the program; madvise: only where it madvises (Linux 6.18); "
    "system: the machine's mode (clears an inherited policy)",
)
@click.option(
    "--select",
    "rule",
    default=None,
    help="huge pages for these regions only: anon>=SIZE, anon<SIZE, site=OBJECT+0xOFF, heap "
    "(comma-separated; see hugebench where)",
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def exec_(thp, rule, argv):
    """Run PROGRAM with THP set for it alone (prctl; inherited by its children, no root needed), or with
    huge pages for the regions a rule selects (--select)."""
    from hugebench.machine import select_rule
    from hugebench.system import set_process_thp

    if thp is None and rule is None:
        raise SpecError("give --thp MODE or --select RULE (or both)")
    if not argv:
        raise SpecError("give the program after --: hugebench exec --thp never -- PROGRAM ARGS...")
    env = dict(os.environ)
    if rule is not None:
        parsed = select_rule.parse(rule)
        env.update(select_rule.deploy_environment(parsed, env))
        click.echo(f"deploy: {select_rule.deploy_line(parsed, argv, os.environ)}", err=True)
    if thp is not None:
        set_process_thp(thp)
    try:
        os.execvpe(argv[0], list(argv), env)
    except OSError as exc:
        raise HugebenchError(f"cannot run {argv[0]}: {exc.strerror}") from None
