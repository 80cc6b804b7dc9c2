"""``hugebench try -- PROGRAM ARGS...``: the best allocator x THP configuration for one program on this
machine, as a recommendation, within a time budget.

What belongs here: :mod:`.session` runs one try (refuse, plan, write the experiment file, sweep with the
budget's schedule, build the verdict); this package's ``__init__`` only names its public parts.
:mod:`.matrix` says what can run here and writes the file, :mod:`.schedule` spends the budget,
:mod:`.verdict` turns the rows into the answer (a :class:`~.verdict_types.Verdict`; its ``to_dict()`` is the
JSON), :mod:`.render` prints it; :mod:`.sequential` is the interval
both rest on (valid under selection and optional stopping), :mod:`.modes` finds runs that split in two,
:mod:`.runs` holds the small readers of rows they share. The CLI (hugebench/cli/try_.py)
only parses options and prints.
"""

from hugebench.trial.matrix import Request
from hugebench.trial.schedule import BudgetTooSmall
from hugebench.trial.session import Outcome, refuse, run_try
from hugebench.trial.verdict_types import Verdict

__all__ = ["BudgetTooSmall", "Outcome", "Request", "Verdict", "refuse", "run_try"]
