"""Helpers of ``notebooks/analysis.ipynb``: which stores it reads, figures shown as images, tables as HTML.

What belongs here: choosing the stores (a user's from ``HUGEBENCH_RESULTS`` and friends; otherwise the synthetic
sample stores, copied to a temporary directory so the notebook never writes into ``tests/data``, and always
labelled as samples), finding a store's experiments by workload kind (never by the sample stores' experiment
names), and showing a report's sections in Jupyter (an HTML table without the pandas index, the notes, the
summary in words, the figures as PNG). Outside IPython (a script, a test) the same calls print markdown.

The notebook writes nothing into a store: the files it makes (plots, the one-file HTML page) go to
:func:`output_dir`, and once :func:`stores` has run, loading builds no columnar parts
(:data:`hugebench.store.columnar.BUILD_ON_LOAD`). Nothing here computes a statistic: the sections come from
:func:`hugebench.report.build_report`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "tests" / "data"  # in a source checkout only
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
        if self.sample and self.results is not None:  # the sample's copy is its results
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
    from hugebench.store import columnar

    columnar.BUILD_ON_LOAD = False  # from here on, reading a store writes nothing into it
    chosen = {key: Path(environ[var]) for key, var in VARIABLES.items() if environ.get(var)}
    if chosen:
        return Stores(
            chosen.get("results"), chosen.get("workloads"), chosen.get("other"), sample=False
        )
    from hugebench.errors import HugebenchError

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


def load_all(chosen: Stores) -> list:
    """The stores the sections read, each loaded once: results and workloads (a directory given under both
    is read once; a directory holding stores in its subdirectories, as ``results/`` after ``sweep -o
    results/tlb``, gives each of them); the other machine's only when nothing else is given (it is B)."""
    from hugebench.report import load_results

    seen: dict[Path, object] = {}
    mine: list[Path | None] = [p for p in (chosen.results, chosen.workloads) if p is not None]
    mine = mine or [chosen.other]
    for path in mine:
        for store in store_dirs(path) if path is not None else []:
            if store.resolve() not in seen:
                seen[store.resolve()] = load_results(store)
    return list(seen.values())


def store_dirs(path: Path) -> list[Path]:
    """``path`` if it is a store (or not a directory: loading it says what is wrong); else the stores one
    level below it (each subdirectory with a ``runs.jsonl``), in name order; ``path`` itself if none."""
    if (path / "runs.jsonl").exists() or not path.is_dir():
        return [path]
    return sorted(p.parent for p in path.glob("*/runs.jsonl")) or [path]


def overview(loaded) -> int:
    """Each experiment of the loaded stores in a few lines: its name, workload, runs by status and the
    summary in words of its main table. Returns the experiments named."""
    count = 0
    for results in loaded:
        mains = [s for s in report_of(results).sections if s.kind == "main"]
        for section in mains:
            rows = results.rows[results.rows.get("experiment") == section.experiment]
            statuses = rows["status"].value_counts().to_dict() if "status" in rows else {}
            runs = ", ".join(f"{n} {status}" for status, n in statuses.items()) or "no runs"
            _say_lines([f"**{section.title}** in {results.path}: {runs}", *section.summary])
            count += 1
    if not count:
        _say("(no experiment in these stores)")
    return count


_REPORTS: dict[int, tuple] = {}  # id(results) -> (results, its report without figures), built once


def report_of(results):
    """The report of a loaded store (no figures), built once per store however many sections ask for it."""
    from hugebench.report import Options, build_report

    if id(results) not in _REPORTS:
        _REPORTS[id(results)] = (results, build_report(results, Options(figures=False)))
    return _REPORTS[id(results)][1]


def of_workload(loaded, workload: str) -> list[tuple]:
    """(results, experiment) of every experiment of the loaded stores whose runs are of ``workload``."""
    return [
        (results, experiment)
        for results in loaded
        for experiment in results.experiments()
        if experiment.workload is not None and experiment.workload.name == workload
    ]


def show_workload(loaded, workload: str, hint: str = "", figures: bool = True) -> int:
    """Show every experiment of kind ``workload`` in the loaded stores (its report sections and, with
    ``figures``, its plots); without one, say so and how to make one (``hint``). Returns the experiments shown."""
    found = of_workload(loaded, workload)
    if not found:
        where = ", ".join(str(r.path) for r in loaded) or "no store"
        _say(f"(no {workload} experiment in {where}{'; ' + hint if hint else ''})")
        return 0
    for results, experiment in found:
        show(results, experiment.name, figures=False)
        if figures:
            _figures(experiment)
    return len(found)


def _figures(experiment) -> None:
    from hugebench.report.figures import experiment_figures, no_figure_reason

    drawn = experiment_figures(experiment)
    if not drawn:
        _say(f"{experiment.name}: no plot, {no_figure_reason(experiment)}")
    shell = _shell()
    for name, fig in drawn:
        if shell is None:
            print(f"(figure {name}: {len(fig.axes)} panel(s))")
        else:
            from IPython.display import display

            display(fig)


def table(frame) -> None:
    """A frame as a table without the pandas index (HTML in Jupyter, text elsewhere)."""
    shell = _shell()
    if shell is None:
        print(frame.to_string(index=False))
        return
    from IPython.display import HTML, display

    display(HTML(frame.to_html(index=False, na_rep="")))


def output_dir(chosen: Stores, environ=None) -> Path:
    """Where the notebook writes its files: ``HUGEBENCH_NOTEBOOK_OUT`` (an existing directory outside every
    store), else a fresh temporary directory. Never a store: the notebook writes nothing into one."""
    from hugebench.errors import HugebenchError

    environ = os.environ if environ is None else environ
    if not environ.get("HUGEBENCH_NOTEBOOK_OUT"):
        return Path(tempfile.mkdtemp(prefix="hugebench-notebook-"))
    out = Path(environ["HUGEBENCH_NOTEBOOK_OUT"]).resolve()
    for store in (chosen.results, chosen.workloads, chosen.other):
        if store is not None and out.is_relative_to(store.resolve()):
            raise HugebenchError(
                f"HUGEBENCH_NOTEBOOK_OUT={out} is inside the store {store}: name a directory outside it"
            )
    if not out.is_dir():
        raise HugebenchError(f"HUGEBENCH_NOTEBOOK_OUT={out} is not a directory; create it first")
    return out


def write_files(loaded, out: Path) -> list[Path]:
    """Every plot (PNG and SVG under ``plots/``) and the one-file HTML report (``report.html``) of each loaded
    store, what ``hugebench report DIR --plots --html`` writes, put into ``out`` (into ``out/<store's name>``
    when there are several stores). Returns the files."""
    from hugebench.errors import HugebenchError
    from hugebench.safefs import SafeDir

    written: list[Path] = []
    for results in loaded:
        where = out / results.path.name if len(loaded) > 1 else out
        if where.resolve().is_relative_to(results.path.resolve()):
            raise HugebenchError(f"{where} is the store {results.path}: name another directory")
        if len(loaded) > 1:  # made without following a link planted in ``out``
            with SafeDir.open(out) as top, top.subdir(results.path.name, create=True):
                pass
        written += _store_files(results, where)
    return written


def _store_files(results, out: Path) -> list[Path]:
    from hugebench.report import Options, build_report
    from hugebench.report.figures import experiment_figures, save
    from hugebench.report.html import write_html

    written: list[Path] = []
    for experiment in sorted(results.experiments(), key=lambda e: e.name):
        for name, fig in experiment_figures(experiment):
            written += save(fig, out, name)
    written.append(
        write_html(build_report(results, Options(figures=True, charts=True)), out / "report.html")
    )
    return written


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
    from hugebench.report import Options, build_report

    if results is None:
        _say(
            f"(no store for this section: set the environment variable it names; experiment {experiment!r})"
        )
        return 0
    built = build_report(results, Options(figures=True)) if figures else report_of(results)
    chosen = [s for s in built.sections if experiment is None or s.experiment == experiment]
    if not chosen:
        names = ", ".join(sorted({str(s.experiment) for s in built.sections})) or "none"
        _say(f"(no experiment named {experiment!r} in {results.path}; its experiments: {names})")
    for section in chosen:
        _section(section)
    return len(chosen)


def _section(section) -> None:
    from hugebench.report.rendering import render_section

    shell = _shell()
    if shell is None:
        print(render_section(section, "markdown"))
        return
    from IPython.display import Markdown, display

    display(Markdown(f"### {section.title}"))
    if section.table is not None:
        table(section.table)
    notes = (
        list(section.notes)
        + [f"**warning:** {w.text}" for w in section.warnings]
        + list(section.summary)
    )
    if notes:
        display(Markdown("\n".join(f"- {line}" for line in notes)))
    for _, fig in section.figures:
        display(fig)


def _say_lines(lines: list[str]) -> None:
    shell = _shell()
    if shell is None:
        print("\n".join(lines) + "\n")
        return
    from IPython.display import Markdown, display

    display(Markdown("\n".join(f"- {line}" if i else line for i, line in enumerate(lines))))


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
