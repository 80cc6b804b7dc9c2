"""What every column of a results row means, and its unit: the one reference of ``load()``'s columns.

What belongs here: one :class:`Column` per column hugebench writes (or per family of columns, written as a
pattern with ``<placeholders>``: ``perf.<event>``), grouped as the manual shows them; and :func:`reference`,
which adds what each workload declares in the registry (its parameters, echoed as result columns, and its
report metrics with their labels). The manual's page is generated from this (``hugebench.manual.docgen``, section
``columns``); tests/report/test_column_reference.py runs a real small sweep of a built-in workload and of a
``command`` program and fails on any column without an entry here, and on any name or prefix of
``hugebench.columns`` (the owned names) without one. What does not belong: which names a user may choose
(``hugebench.columns``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hugebench.knob_catalogue import HUGETLB_2MB, MTHP_PREFIX, THP_ENABLED


@dataclass(frozen=True)
class Column:
    pattern: str  # a column name, or one with <placeholders> (each matches one or more characters)
    unit: str  # "s", "bytes", "count", "share 0-1", "%", "text", "bool", ...
    meaning: str

    def regex(self) -> re.Pattern:
        parts = re.split(r"(<[^>]+>)", self.pattern)
        return re.compile(
            "".join(".+" if p.startswith("<") else re.escape(p) for p in parts) + r"\Z"
        )


def _table(text: str) -> tuple[Column, ...]:
    """Entries written one a line, ``pattern | unit | meaning`` (a long one goes on indented)."""
    joined = text.strip().replace(
        "\n    ", " "
    )  # an entry goes on over lines indented by four spaces
    rows = [line.split(" | ", 2) for line in joined.splitlines()]
    return tuple(Column(*(part.strip() for part in row)) for row in rows)


# Entries as text, one a line (pattern | unit | meaning), so the table reads as the manual shows it.
GROUPS: dict[str, tuple[Column, ...]] = {
    "Identity and status (every row)": _table("""
schema_version | integer | layout version of the row (hugebench.columns.SCHEMA_VERSION)
run_id | text | content hash of the planned run (same spec and seed: same id; a resume skips it)
cell_id | text | hash of the cell: the axis values and fixed parameters
sweep_id | text | the sweep that wrote the row (its context is sweeps/<sweep_id>.json)
experiment | text | the experiment file's name
workload | text | the workload that ran
repetition | integer | repetition block of the run (0-based); runs of one block are interleaved
order_index | integer | position of the run in the sweep's seeded, interleaved order
warmup | bool | a warm-up run: stored, never counted in statistics
lead_in | bool | an untimed run of a configuration just before its timed run (try's back-to-back
    regime: a job run again at once follows its own run); also a warm-up
started_at | timestamp (UTC) | when the run started (load() returns a pandas Timestamp)
status | text | ok, failed, crashed, timeout or oom: how the run ended
error | text | why a run is not ok (null when it is)
stderr_tail | text | the last lines the worker wrote on stderr
stdout_tail | text | the last lines a measured program wrote on stdout
exit_code | integer | the worker's exit code (128+N: killed by signal N)
signal | text | the signal that ended a crashed run (SIGSEGV ...)
wall_s | s | wall time of the whole worker process, start-up included (launcher sweep: of the supervisor)
source | text | where the row came from: local, or a cluster machine's name
host | text | host name of the machine that ran it (added by load())
"""),
    "The cell and its setting": _table(f"""
allocator | text | the allocator setting of the cell (see Writing experiments: allocators)
thp | text | the THP mode axis under the name written in the file (load() keeps it)
{THP_ENABLED} | text | the THP mode of the cell (the knob's canonical axis name)
text_pages | text | where the program's code was put: off, thp or hugetlb
memory_state | text | the machine's memory before the run: fresh (compacted) or fragmented[:P%] (docs: aged.md)
regime | text | the conditions before the run: back-to-back (at once, reporting as found), warm (back to back, free page reporting held off) or cold:Ns (N s idle first)
system.page_reporting_order | count | free page reporting's smallest reported order as the run started (None: none)
system.page_reporting_active | bool | free page reporting could hand this run's freed 2 MiB blocks to the host
system.reported_kib_delta | KiB | memory the balloon reported to the host during the run (None: not counted here)
system.idle_before_s | seconds | idle before the run (regime cold:Ns)
memory.<field> | as named | what the memory state was and did: free 2 MiB blocks per zone before and after,
    the fragmenter's report, compaction and THP fallback counts during the run (memory.during.*), or why not
<axis> | as written | a cell's axis value under the axis name of the experiment file
param.<name> | as the parameter | every workload parameter of the run, defaults filled in
knob.<path> | text | a kernel knob's value during the run (knob.{THP_ENABLED}, knob.{HUGETLB_2MB} ...)
knobs_applied | text | the knobs this run changed from the values found
thp_prctl_disabled | bool | THP was disabled for the run's processes by prctl (never, without root)
thp.asked | text | the THP mode the measured program ran under (the cell's, else the machine's as found)
thp.process_enabled | bool | every measured process had THP as the machine gives it (no prctl policy of its own)
thp.process_state | text | each process's THP state: enabled, except-advised (6.18) or disabled, by /proc/PID/status
    THP_enabled and the probe's PR_GET_THP_DISABLE
thp.overridden | bool | a measured process did not get the asked THP mode (it disabled THP for itself); the cell is
    marked and never called by that mode
thp.overridden.why | text | which process, and how (prctl PR_SET_THP_DISABLE or PR_THP_DISABLE_EXCEPT_ADVISED)
{MTHP_PREFIX}<size> | text | the mTHP setting of that folio size during the run
hugetlb.<size> | count | the hugetlb pool of that page size during the run (pages)
result.<name> | as measured | a measurement named like an axis whose value differs from the planned one
"""),
    "What the run measured (all workloads)": _table("""
peak_rss_bytes | bytes | peak resident memory of the measured process (getrusage maxrss; a program's tree: its
    largest process)
tree_peak_rss_bytes | bytes | a program's whole process tree: each process's own peak RSS (VmHWM at its exit, or the
    largest sampled) summed
tree_processes | count | processes counted in tree_peak_rss_bytes
minflt | count | minor page faults of the measured process(es)
majflt | count | major page faults (read from disk)
utime_s | s | user CPU time of the measured process(es)
stime_s | s | system CPU time of the measured process(es)
hp_coverage | share 0-1 | share of the resident memory on PMD-sized huge pages (AnonHugePages / Rss) in the measured
    phase
hp_coverage_basis | text | which coverage hp_coverage is: at the end, time-weighted or window end
hp_coverage_tw | share 0-1 | coverage weighted by time over the program's samples
hp_coverage_exit | share 0-1 | coverage of a program at its exit
rss_before_workload_bytes | bytes | resident memory of the worker before the workload began
anon_huge_before_workload_bytes | bytes | anonymous huge pages of the worker before the workload
workload_wall_s | s | wall time of the workload function inside the worker
smaps.<field> | bytes | /proc/PID/smaps_rollup totals at the end of the timed phase (Rss, AnonHugePages,
    Private_Hugetlb ...)
vmstat.<counter> | count | change of a /proc/vmstat counter over the run (thp_fault_alloc, compact_stall ...; the
    whole machine's)
buddy.order<n> | count | free blocks of order n (4 KiB x 2^n) in /proc/buddyinfo before the run
buddy.free_2mib_blocks | count | free blocks of 2 MiB or more before the run
phase.<phase>.s | s | wall time of a workload phase (generate, insert, lookup ...)
phase.<phase>.<measure> | as the run-level column | the run-level measure (minflt, stime_s, smaps.Rss, vmstat.*,
    hp_coverage, mthp.* ...) for that phase alone
cycles_per_op | cycles | CPU cycles per operation of the timed phase (PMU)
stlb_misses_per_1k_ops | count | second-level TLB misses per 1000 operations (PMU)
walk_cycles_share | share 0-1 | share of the cycles spent walking page tables (PMU)
faults_per_gib | count | page faults per GiB touched
folio_share.<size> | share 0-1 | share of the resident anonymous memory in folios of that size (4kB, each mTHP size,
    2048kB) at the end of the timed window, read from pagemap + kpageflags as tools/mm/thpmaps does (root); a
    folio counts by the part of it mapped contiguously
folio_bytes.<size> | bytes | resident anonymous bytes in folios of that size (the same reading)
folio_share_tw.<size> | share 0-1 | folio_share.<size> weighted by time over the program's samples
folio.anon_bytes | bytes | resident anonymous bytes the per-size reading found
folio.anonhuge_bytes | bytes | AnonHugePages of the same reading: the cross-check of folio_bytes.2048kB (which also
    counts 2 MiB folios mapped by 4 KiB entries)
folio.by_process | text | the tree's largest processes (at most 4) by resident anonymous memory, each with its
    own folio sizes: name (pid): MiB anon, size share, ... (a tree's sum can hide a server on huge pages beside
    its load driver on 4 KiB pages)
folio.processes | count | processes the per-size reading read (the program's tree)
folio.when | text | when the per-size reading was taken: window end, or the last sample before the program ended
folio.basis | text | pagemap (per page, as root) or smaps (by mapping: no sizes, the gap split by mapping)
folio.reason | text | why there is no per-size reading (not root, the process gone)
folio.read_s | s | time one per-size reading of the program's processes took (at the window's end)
folio.samples | count | per-size readings taken while the program ran (at most 5% of the time goes to them)
folio.sampled_read_s | s | their summed time
gap.<reason>_bytes | bytes | resident bytes not on a 2 MiB page, by reason (file, prctl, stack, nohugepage, mthp,
    unaligned, ineligible, fallback): each byte in exactly one (docs/mthp.md)
gap.resident_bytes | bytes | resident bytes the explainer examined (all mappings of the program's processes)
gap.huge_bytes | bytes | of them, on 2 MiB pages
gap.largest | text | the reason with the most bytes
gap.vmas | text | the mappings behind the largest buckets (pid, range, permissions, name, KiB)
gap.basis | text | pagemap (page by page) or smaps (mapping by mapping)
series_t_s | s (list) | times of the coverage samples over the run
series_coverage | share 0-1 (list) | huge-page coverage at each of series_t_s
series_rss_bytes | bytes (list) | resident memory at each of series_t_s (fleet)
series_rss_mib | MiB (list) | the program tree's RSS at each of series_t_s (command: memory over time)
series_anon_huge_mib | MiB (list) | the program tree's AnonHugePages at each of series_t_s
mem.<field>_slope_mib_h | MiB/h | the least-squares slope of the tree's Rss or AnonHugePages (mem.rss_...,
    mem.anonhugepages_...) over the run's samples
mem.<field>_slope_lo | MiB/h | the slope's 95% lower bound (moving-block bootstrap of the samples)
mem.<field>_slope_hi | MiB/h | the slope's 95% upper bound
mem.<field>_trend | text | the slope in words: "Rss stable (+3 MiB/h [-5, 12])", "Rss grows 40 MiB/h [25, 55]"
soak_s | s | server.soak: how long the load driver was run again and again against the same server
soak.driver_runs | count | the driver's runs in the soak; each metric of the row is the median over them (window_s the
    median run's)
soak.elapsed_s | s | from the first driver run's start to the last one's end
soak.metric | text | the judged metric whose value per run soak.series holds
soak.series | as the metric (list) | the judged metric of each driver run, in order
soak.t_s | s (list) | when each driver run ended, seconds since the soak began
psi.source | text | whose pressure stalls were read: the run's cgroup v2 (every process of the run, the
    worker included) or /proc/pressure (machine-wide) when the run has no cgroup
psi.<kind>_some_pct | % | share of the sampled span in which some task of the run stalled on cpu, memory or io
    (the <kind>.pressure "some" total's rise)
psi.<kind>_full_pct | % | share in which all its non-idle tasks stalled at once (memory and io; cpu "full" on
    a cgroup)
psi.reason | text | why there is no pressure reading (a kernel without PSI, a run shorter than two samples)
series_psi_<kind>_some_pct | % (list) | the "some" share of each interval ending at series_t_s (the first
    point has no interval: empty), for cpu, memory and io
events.intervals | count | sampling intervals of the run (sample_interval apart) in which the kernel's events were read
events.intervals_with | count | of those, the intervals with a compaction stall, khugepaged collapse, huge-page
    split, THP fault fallback or a fork of the measured tree
events.<event> | count | the event's total over the intervals (compact_stall, thp_collapse_alloc, thp_split_page,
    thp_fault_fallback: /proc/vmstat, the whole machine's; forks: new processes of the measured tree)
events.timeline | text | each interval with events: its end (s since the first sample) and what happened
events.windows_with | count | the driver's progress intervals (pgbench -P) in or next to an interval with an event
events.windows_without | count | the driver's progress intervals without one
events.latency_with_ms | ms | the median latency of the driver's intervals with an event
events.latency_without_ms | ms | the median latency of those without
"""),
    "Counters (perf)": _table("""
perf.<event> | count | a perf stat event counted over the worker (cycles, dtlb_load_misses, page_faults ...); null
    with .reason where it cannot be counted here
pmu.<event> | count | the same event counted by the core's own counters over the timed phase
perf.<event>.running_pct | % | share of the time the event was on the PMU (multiplexing)
pmu.<event>.running_pct | % | the same for the core's counters
perf_scope | text | what perf could count for this user (user space only without root ...)
pmu_scope | text | what the core's counters could count
"""),
    "The worker process and its containment": _table("""
worker.<field> | as named | hb-exec's record of the worker: utime_s, stime_s (s), maxrss_kib (KiB), minflt, majflt,
    nvcsw, nivcsw (count), leftover_processes, core_dumped, wall_s (s)
launcher | text | where the run's supervisor ran: worker (a fresh process per run), or sweep (a command run's
    supervisor in the sweep's own process, its program started into the run's cgroup: no worker.* columns)
supervisor.<field> | s | launcher sweep: CPU the sweep's process spent supervising the run (utime_s, stime_s)
    and that of every process the run started, perf and hb-exec included (children_utime_s, children_stime_s)
containment | text | how the run's processes were contained: cgroup, or subreaper+pid record
containment.killed_at_end | count | processes still running when the run ended (ended by hugebench)
containment.<field> | text | why containment fell back (containment.reason)
cgroup.memory_peak_bytes | bytes | memory.peak of the run's cgroup: every process of the run, page cache included
cgroup.oom_kills | count | OOM kills inside the run's cgroup
cgroup.anon_thp_peak_bytes | bytes | largest anon_thp of the run's cgroup sampled during the run
cgroup.<field> | as named | other cgroup accounting, or why there was none (cgroup.memory.reason)
oom_kills | count | OOM kills the kernel counted during the run (/proc/vmstat oom_kill)
memory_limit_bytes | bytes | the experiment's memory_limit: the most memory the run's processes (its worker
    included) could use together; over it the run is OOM-killed: status oom, error "oom-killed under memory.max=..."
memory_limit.knob | text | the cgroup file that held it: memory.max (cgroup v2) or memory.limit_in_bytes (cgroup v1,
    where memory is a v1 controller)
memory_limit.cgroup_version | 1 or 2 | the cgroup version of the limit
memory_limit.oom_kills | count | OOM kills under the limit (memory.events or memory.oom_control oom_kill)
memory_limit.peak_bytes | bytes | the limited cgroup's peak usage (memory.peak or memory.max_usage_in_bytes)
"""),
    "What the machine was doing (noise)": _table("""
noise.steal_pct | % | CPU time the hypervisor took during the run
noise.other_cpus | CPUs | work done by everything but the run, in CPUs' worth, during the run
noise.top_others | text | the processes that used most CPU during the run
noise.load1 | load | 1-minute load average after the run
noise.procs_running | count | runnable tasks besides the sweep
noise.nivcsw_per_s | 1/s | the run's involuntary context switches per second
noise.nivcsw | count | a command run's program tree's involuntary context switches (hb-exec's rusage)
noise.migrations | count | times the run's measured process moved between CPUs (/proc/PID/sched nr_migrations, read
    before it is reaped)
noise.psi_<kind>_pct | % | share of the run's wall time some task stalled on cpu, memory or io
noise.cpu_mhz | MHz | mean current CPU frequency after the run (where cpufreq is readable)
noise.disturbed | bool | the run was measured on a disturbed machine (the documented thresholds)
noise.why | text | which threshold fired
noise.waited_s | s | time waited for a quiet machine before the block (--quiet-machine)
noise.still_busy | text | why the machine was still busy when the wait ended
"""),
    "Allocator proof": _table("""
allocator_malloc_from | text | the library malloc and free resolved to in the measured process(es)
allocator_served | text | the allocator that served malloc, in one word (glibc, jemalloc ...; as-is records whatever the
    program brings)
allocator_mapped | text | the allocator libraries mapped in the process
allocator_processes | count | processes of a program proven to use the cell's allocator
allocator_tree_processes | count | processes of the program's tree the sampler saw (forked children that never
    exec included)
allocator_tree_mapped | count | of those, the processes with the cell's preloaded library mapped (a forked
    child inherits its parent's malloc)
allocator_tree_unmapped | text | the processes without it (pid name), empty when every one has it
allocator_linked | text | an allocator the program is linked with itself
allocator_note | text | why the proof differs (a static child, an escaping process ...)
allocator.<name> | as the allocator reports it | the allocator's own settings read back (allocator.jemalloc.opt.thp
    ...)
"""),
    "A program's run (workload: command)": _table("""
window_s | s | the timed window: the program's wall time, its marked windows or the load driver's run
windows | count | windows the program marked
process_wall_s | s | wall time of the program from fork to exit
server_stop_s | s | time the server took to stop after the driver ended
server_warmup_runs | count | the load driver's unmeasured warm-up runs against the server before the measured one
    (server.warmup)
server_warmup_s | s | how long the server's warm-up runs took (not in any statistic)
program_path | text | the file that ran, resolved once on the user's PATH
program_exes | text | every executable seen in the program's tree
sampler.<field> | as named | the coverage sampler's own cost: samples (count), read_s (s) ...
sampled.peak.<field> | bytes | largest sampled value of a smaps field over the tree (coverage: share)
<metric> | the program's | each of the program's metrics under its name (metric: json:KEY / regex: / hdr: /
    a list of them, the first judged); a driver's (metric: {driver: NAME}) under its quantity's name: rps, tps,
    ops_per_s, iops (higher is better), avg_ms, p50_ms, p95_ms, p99_ms, p99_9_ms, max_ms, latency_avg_ms
    (lower is better) ...
"""),
    "Code on huge pages (text_pages)": _table("""
text.<field> | as named | where the program's text was put and how much was on huge pages (text.coverage share,
    text.huge_bytes bytes, text.page_cache ...)
"""),
    "Sets and per-kind results": _table("""
set.<kind>.<measure> | as the measure | a measure of one set kind in a sweep over several
"""),
    "hashlookup's results": _table("""
ns_per_lookup | ns | mean time of one lookup in the timed phase
set_size | count | distinct keys in the set
found | count | lookups that found their key (all of them: a check)
checksum | integer | checksum of the lookups (the compiler cannot drop them)
capacity | count | slots of the set
chunk_ns_median | ns | median per-lookup time over the timed phase's chunks
chunk_ns_p10 | ns | 10th percentile of the per-lookup time over chunks
chunk_ns_p90 | ns | 90th percentile of the per-lookup time over chunks
"""),
}
REASON = Column(
    "<column>.reason", "text", "why the column is null: what could not be measured here"
)


def _workload_columns() -> tuple[Column, ...]:
    """What every workload declares in the registry: its report metrics (with their labels) and its
    parameters, which the workloads echo as result columns."""
    from hugebench import workloads

    out, seen = [], {c.pattern for group in GROUPS.values() for c in group}
    units = {"bytes": "bytes", "si": "count", ".0%": "share 0-1", ".1%": "share 0-1"}
    for workload in workloads.WORKLOADS.values():
        for name, label, fmt in workload.metrics:
            if name not in seen:
                seen.add(name)
                meaning = f"a metric of the {workload.name} workload: {label or name}"
                out.append(Column(name, units.get(fmt, "number"), meaning))
        for name, param in workload.params.items():
            if name not in seen:
                seen.add(name)
                out.append(
                    Column(
                        name,
                        param.type.__name__,
                        f"the parameter {name} as the workload ran it "
                        f"({workload.name}: {param.help})",
                    )
                )
    return tuple(out)


def reference() -> dict[str, tuple[Column, ...]]:
    """Every group of columns, the workloads' declared columns last, the .reason suffix at the end."""
    return {
        **GROUPS,
        "Declared by the workloads (metrics and parameters)": _workload_columns(),
        "Any column": (REASON,),
    }


def undocumented(columns, extra=()) -> list[str]:
    """The columns of ``columns`` no entry of :func:`reference` describes. ``extra``: names the caller
    knows (an experiment's own axes and metric names)."""
    entries = [
        c
        for group in reference().values()
        for c in group
        if c.pattern not in ("<axis>", "<metric>")
    ]
    patterns = [c.regex() for c in entries]
    return [col for col in columns if col not in extra and not any(p.match(col) for p in patterns)]
