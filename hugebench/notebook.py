"""Helpers of ``notebooks/analysis.ipynb``: which stores it reads, figures shown as images, tables as HTML.

What belongs here: choosing the stores (a user's from ``HUGEBENCH_RESULTS`` and friends; otherwise the synthetic
sample stores, copied to a temporary directory so the notebook never writes into ``tests/data``, and always
labelled as samples), and showing a report's sections in Jupyter (an HTML table, the notes, the summary in
words, the figures as PNG). Outside IPython (a script, a test) the same calls print markdown. Nothing here
computes a statistic: the sections come from :func:`hugebench.report.build_report`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "data"  # in a source checkout only
VARIABLES = {
    "results": "HUGEBENCH_RESULTS",
    "workloads": "HUGEBENCH_WORKLOADS",
    "other": "HUGEBENCH_RESULTS_B",
}
SAMPLE_NAMES = {
    "results": "sample_results",
    "workloads": "sample_workloads",
    "other": "sample_results_b",
}


@dataclass(frozen=True)
class Stores:
    """The results directories the notebook reads (None: not given); ``sample``: they are the synthetic ones."""

    results: Path | None
    workloads: Path | None
    other: Path | None
    sample: bool

    def describe(self) -> str:
        if self.sample:
            return (
                "SAMPLE DATA: the synthetic stores of hugebench's tests (not measurements), copied to "
                f"{self.results.parent}. Set HUGEBENCH_RESULTS to your results directory to see yours."
            )
        given = {
            k: v
            for k, v in (
                ("results", self.results),
                ("workloads", self.workloads),
                ("other machine", self.other),
            )
            if v
        }
        return "Your stores: " + ", ".join(f"{k} = {v}" for k, v in given.items())


def stores(environ=None) -> Stores:
    """A user's stores when any ``HUGEBENCH_*`` variable names one (the others stay None: no sample data is
    mixed in as theirs); otherwise the sample stores, copied into a fresh temporary directory."""
    environ = os.environ if environ is None else environ
    chosen = {key: Path(environ[var]) for key, var in VARIABLES.items() if environ.get(var)}
    if chosen:
        return Stores(
            chosen.get("results"), chosen.get("workloads"), chosen.get("other"), sample=False
        )
    from .errors import HugebenchError

    if not SAMPLES.is_dir():
        raise HugebenchError(
            "no store given: set HUGEBENCH_RESULTS to a results directory "
            "(the sample stores exist only in a source checkout)"
        )
    copy = Path(tempfile.mkdtemp(prefix="hugebench-samples-"))
    paths = {
        key: Path(shutil.copytree(SAMPLES / name, copy / name))
        for key, name in SAMPLE_NAMES.items()
    }
    return Stores(paths["results"], paths["workloads"], paths["other"], sample=True)


def setup() -> bool:
    """In IPython: show a matplotlib Figure (built without pyplot, as hugebench's are) as a PNG image rather
    than ``<Figure size ...>``. Returns whether IPython is running."""
    shell = _shell()
    if shell is None:
        return False
    from matplotlib.figure import Figure

    def png(fig):
        import io

        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
        return buffer.getvalue()

    shell.display_formatter.formatters["image/png"].for_type(Figure, png)
    return True


def show(results, experiment: str | None = None, figures: bool = True) -> int:
    """Show the report sections of ``experiment`` (every experiment when None) of a loaded store: a table as
    HTML, its notes, warnings and summary in words, and with ``figures`` its plots. Returns the sections shown;
    an experiment the store lacks is said, not skipped in silence."""
    from .report import Options, build_report

    if results is None:
        _say(
            f"(no store for this section: set the environment variable it names; experiment {experiment!r})"
        )
        return 0
    built = build_report(results, Options(figures=figures))
    chosen = [s for s in built.sections if experiment is None or s.experiment == experiment]
    if not chosen:
        names = ", ".join(sorted({str(s.experiment) for s in built.sections})) or "none"
        _say(f"(no experiment named {experiment!r} in {results.path}; its experiments: {names})")
    for section in chosen:
        _section(section)
    return len(chosen)


def _section(section) -> None:
    from .report.rendering import render_section

    shell = _shell()
    if shell is None:
        print(render_section(section, "markdown"))
        return
    from IPython.display import Markdown, display

    display(Markdown(f"### {section.title}"))
    if section.table is not None:
        display(section.table)
    notes = (
        list(section.notes)
        + [f"**warning:** {w.text}" for w in section.warnings]
        + list(section.summary)
    )
    if notes:
        display(Markdown("\n".join(f"- {line}" for line in notes)))
    for _, fig in section.figures:
        display(fig)


def _say(text: str) -> None:
    shell = _shell()
    if shell is None:
        print(text)
        return
    from IPython.display import Markdown, display

    display(Markdown(f"*{text}*"))


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
