"""The ``text_pages`` axis: the measured program's own machine code on 4 KiB pages or on huge pages.

The work is done inside the measured process by ``libhbtext.so`` (csrc/preload/hb_text.cpp), preloaded with
``HB_TEXT_PAGES`` = one of :data:`MODES` and ``HB_TEXT_REPORT_DIR``; there is no Python in that process.
What belongs here is everything around it, in the parent:

* :mod:`.reports`: finding the library, reading the ``text-<pid>.json`` / ``text-exit-<pid>.json`` files it
  leaves, the range arithmetic (:func:`interior`) and :func:`verify`, which turns the reports into row columns
  and fails a run whose condition did not hold (too little of the text on huge pages, or any of it for
  ``off``).
* :mod:`.conditions`: what must be true before the program starts: :func:`check_mode` (why a mode cannot
  work on this machine or for this binary) and :func:`prepare_page_cache` (the binary's page cache evicted,
  and for ``file-thp`` filled with 2 MiB folios by ``hb-textfill``), because whether the text is already
  cached in small or large folios decides what ``off`` and ``file-thp`` get.

Not here: setting the environment of a run (the workload/orchestrator does it with :data:`PAGES_ENV` and
:data:`REPORT_DIR_ENV`) and reading /proc or /sys (``hugebench.kernel``).
"""

from hugebench.machine.textpages.conditions import (
    TextSegment,
    check_mode,
    prepare_page_cache,
    read_text_segment,
)
from hugebench.machine.textpages.reports import (
    FAIL_ENV,
    MODES,
    PAGES_ENV,
    REPORT_DIR_ENV,
    fill_tool,
    interior,
    read_reports,
    text_library,
    verify,
)

__all__ = [
    "FAIL_ENV",
    "MODES",
    "PAGES_ENV",
    "REPORT_DIR_ENV",
    "TextSegment",
    "check_mode",
    "fill_tool",
    "interior",
    "prepare_page_cache",
    "read_reports",
    "read_text_segment",
    "text_library",
    "verify",
]
