"""What a configuration's measured processes really ran under, from its rows: the allocator that served
malloc (``allocator_served``, the probe's answer) and whether the program overrode the THP mode the cell
asked for (``thp.overridden``, hugebench.machine.thpstate). The verdict names a configuration by these, never
by what was only asked: a cell whose program turned THP off is not "THP always".
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from hugebench import stats


def probed(frame: pd.DataFrame) -> pd.DataFrame:
    """The successful runs that carried the probe library: every run in a sweep; with try (``probe:
    untimed``) the warm-up runs, which are not timed, so that the timed ones are the program as deployed."""
    if "status" in frame.columns:
        frame = frame[stats.status_ok(frame["status"])]
    if "allocator_served" not in frame.columns:
        return frame.iloc[0:0]
    return frame[frame["allocator_served"].notna()]


def served(frame: pd.DataFrame) -> dict | None:
    """{'name': 'jemalloc', 'path': '/usr/lib/.../libjemalloc.so.2'}: what served malloc in the successful
    probed runs (the commonest answer; several names joined when the runs differ), or None when no row
    says."""
    ok = probed(frame)
    if ok.empty:
        return None
    names = list(dict.fromkeys(str(v) for v in ok["allocator_served"].dropna()))
    path = None
    if "allocator_malloc_from" in ok.columns and ok["allocator_malloc_from"].notna().any():
        path = str(ok["allocator_malloc_from"].dropna().mode().iloc[0])
    return {"name": " / ".join(names), "path": path}


def overridden(frame: pd.DataFrame) -> tuple[int, str | None]:
    """(how many successful runs had the asked THP mode overridden by the program, the first one's reason)."""
    ok = stats.ok_rows(frame)
    if ok.empty or "thp.overridden" not in ok.columns:
        return 0, None
    hit = ok[ok["thp.overridden"].map(lambda v: v is True or v == 1)]
    if hit.empty:
        return 0, None
    if "thp.overridden.why" in hit.columns:
        why = hit["thp.overridden.why"].dropna()
        if len(why):
            return int(len(hit)), str(why.iloc[0])
    return int(len(hit)), "the program changed its THP mode"


def overridden_name(name: str, cell: Mapping, runs: int, total: int) -> str:
    """The configuration's name when its program overrode the asked THP mode: never called by that mode."""
    return (
        f"{name.split(', THP ')[0]}, THP {cell['thp']} asked but overridden by the program "
        f"({runs} of {total} runs)"
    )


def as_is_line(found: Mapping | None, linked: str | None) -> str:
    """How the verdict names as-is: 'as-is: nothing preloaded; malloc served by jemalloc (PATH)'."""
    if found is None:
        return (
            "as-is: nothing preloaded; which malloc served it is unknown (no successful run says)"
        )
    where = f" ({found['path']})" if found.get("path") else ""
    linked_note = ", the allocator the program links" if linked and linked in found["name"] else ""
    return f"as-is: nothing preloaded; malloc served by {found['name']}{where}{linked_note}"
