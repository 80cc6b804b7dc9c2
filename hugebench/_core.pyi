"""Type stubs for the C++ extension ``hugebench._core`` (built from csrc/ by scikit-build-core).

A workload's parameter defaults are those of its entry in ``hugebench.workloads.WORKLOADS`` (the binding
reads them from there when _core is imported), so the stub writes them as ``...``;
tests/core/test_core_signatures.py checks names, order, types and choices against the registry.
"""

from collections.abc import Callable
from typing import Literal, TypedDict

Hook = Callable[[str, str], None]
"""hook(phase, edge): called from the calling thread (GIL held) with edge "begin" right before a
phase's timer starts and "end" right after it stops; never inside a timer."""

CounterSpec = tuple[str, int, int, int]
"""(label, perf type, config, config1) with the meaning of the same perf_event_attr fields."""

class CounterResult(TypedDict):
    value: float | None  # raw_value * time_enabled / time_running (multiplexing), None on error
    raw_value: int | None
    time_enabled_ns: int | None
    time_running_ns: int | None
    error: (
        str | None
    )  # e.g. "perf_event_open failed: No such file or directory (errno 2)"; numbers are None
    user_only: (
        bool  # the kernel's share was not counted: perf_event_paranoid forbids it to this user
    )

class HashlookupPhases(TypedDict):
    generate: float  # seconds
    insert: float
    shuffle: float
    lookup: float  # the timed phase: barrier release to the last worker's join

class HashlookupResult(TypedDict):
    phases: HashlookupPhases
    keys: int
    set_size: int  # distinct keys stored
    lookups: int
    found: int
    checksum: int  # sum of the lengths of the found keys, as stored in the set
    ns_per_lookup: float  # lookup wall seconds * 1e9 / lookups (aggregate over all threads)
    chunk_ns_median: float  # per-thread ns per lookup of each chunk, over all chunks of all threads
    chunk_ns_p10: float
    chunk_ns_p90: float
    threads: int
    set_kind: str
    hash: str
    capacity: int  # slots, or buckets for node
    counters: dict[str, CounterResult]

class BuildInfo(TypedDict):
    build_type: str
    compiler: str
    cxx_flags: str
    debug: bool  # True: NDEBUG not defined or a Debug build; do not report numbers from it
    set_kinds: list[
        str
    ]  # hashlookup set kinds compiled in (flat, node, and robin/absl/boost where found)
    hashes: list[str]  # hashlookup hashes compiled in (own, and xxh3 where found)

def hashlookup(
    *,
    keys: int = ...,
    set_kind: Literal["flat", "node", "robin", "absl", "boost"] = ...,
    hash: Literal["own", "xxh3"] = ...,
    threads: int = ...,
    lookups: int = ...,
    key_min: int = ...,
    key_max: int = ...,
    order: Literal["uniform", "zipf"] = ...,
    zipf_s: float = ...,
    chunks: int = ...,
    seed: int = ...,
    teardown: Literal["free", "exit"] = ...,
    counters: list[CounterSpec] = [],
    hook: Hook | None = None,
) -> HashlookupResult:
    """Random string keys in a hash set; time point lookups only.

    Phases, in order: "generate", "insert", "shuffle", "lookup". Counters are opened at the start and
    counted only during the lookup phase (all worker threads included). teardown "free" destroys the set
    and the keys before returning, "exit" leaves them to the process's exit (leaked by this call). Raises
    ValueError on bad arguments.
    """

def generate_keys(
    n: int, seed: int = 1, key_min: int = 10, key_max: int = 19, threads: int = 0
) -> list[str]:
    """The keys hashlookup() generates for the same arguments, before shuffling; their letters written on
    `threads` threads (0: every core this process may use), the same keys for any count."""

def hashlookup_queries(
    n: int, lookups: int, seed: int = 1, key_min: int = 10, key_max: int = 19
) -> list[str]:
    """For tests: the keys hashlookup() looks up in the uniform order, in order (lookups < n: a seeded uniform
    sample of the n keys without replacement; 0: every key once)."""

class HashlookupMembership(TypedDict):
    set_size: int
    found: list[bool]  # one per query

def hashlookup_membership(
    set_kind: str, hash: str, keys: list[str], queries: list[str]
) -> HashlookupMembership:
    """For tests: insert keys into a set of that kind and hash, then report set_size and which queries it finds."""

class HashsetsKind(TypedDict):
    insert_s: float
    set_size: int
    capacity: int  # slots, or buckets for node
    lookups: int  # this kind's, over all rounds
    found: int
    checksum: int  # sum of the lengths of the found keys (each kind looks up its own chunks)
    ns_per_lookup: float  # this kind's chunk time over its lookups
    round_ns: list[float]  # ns per lookup of this kind's chunk in each round
    counters: dict[str, CounterResult]  # counted during this kind's chunks only

class HashsetsResult(TypedDict):
    phases: dict[
        str, float
    ]  # generate, insert.<kind> per kind, shuffle, lookup (all kinds' chunks)
    keys: int
    hash: str
    rounds: int
    kinds: list[str]  # in set_kinds order; the first is the base of the ratios
    set: dict[str, HashsetsKind]

def hashsets(
    *,
    keys: int = ...,
    set_kinds: str = ...,
    hash: Literal["own", "xxh3"] = ...,
    lookups: int = ...,
    key_min: int = ...,
    key_max: int = ...,
    rounds: int = ...,
    build_order: Literal["listed", "reversed"] = ...,
    seed: int = ...,
    counters: list[CounterSpec] = [],
    hook: Hook | None = None,
) -> HashsetsResult:
    """Several set kinds built from the same keys in one process; rounds of lookups, one chunk per kind each,
    the kinds' order rotating. Counters count each kind's chunks separately. Raises ValueError on bad arguments
    (an unknown, repeated or unbuilt kind names the package that provides it).
    """

def build_info() -> BuildInfo: ...
def perf_hw_cache_config(cache: int, op: int, result: int) -> int:
    """config of a PERF_TYPE_HW_CACHE event: cache | op << 8 | result << 16."""

PERF_TYPE_HARDWARE: int
PERF_TYPE_SOFTWARE: int
PERF_TYPE_TRACEPOINT: int
PERF_TYPE_HW_CACHE: int
PERF_TYPE_RAW: int
PERF_COUNT_HW_CPU_CYCLES: int
PERF_COUNT_HW_INSTRUCTIONS: int
PERF_COUNT_HW_CACHE_REFERENCES: int
PERF_COUNT_HW_CACHE_MISSES: int
PERF_COUNT_HW_BRANCH_INSTRUCTIONS: int
PERF_COUNT_HW_BRANCH_MISSES: int
PERF_COUNT_HW_REF_CPU_CYCLES: int
PERF_COUNT_SW_CPU_CLOCK: int
PERF_COUNT_SW_TASK_CLOCK: int
PERF_COUNT_SW_PAGE_FAULTS: int
PERF_COUNT_SW_CONTEXT_SWITCHES: int
PERF_COUNT_SW_CPU_MIGRATIONS: int
PERF_COUNT_SW_PAGE_FAULTS_MIN: int
PERF_COUNT_SW_PAGE_FAULTS_MAJ: int
PERF_COUNT_HW_CACHE_L1D: int
PERF_COUNT_HW_CACHE_L1I: int
PERF_COUNT_HW_CACHE_LL: int
PERF_COUNT_HW_CACHE_DTLB: int
PERF_COUNT_HW_CACHE_ITLB: int
PERF_COUNT_HW_CACHE_OP_READ: int
PERF_COUNT_HW_CACHE_OP_WRITE: int
PERF_COUNT_HW_CACHE_RESULT_ACCESS: int
PERF_COUNT_HW_CACHE_RESULT_MISS: int

# --- alloctest (csrc/workloads/alloctest.*) ---

import numpy as _np

class AlloctestPhases(TypedDict):
    setup: float  # seconds: tables, slot arrays, fill of a random half of the slots (steady state)
    warmup: float  # warmup_iterations picks
    run: float  # the timed phase: release of the parked workers to the last one's finish
    teardown: float  # read back (unless touch is "none") and free every live block

class AlloctestResult(TypedDict):
    phases: AlloctestPhases
    threads: int
    cores: int  # hardware threads (std::thread::hardware_concurrency)
    oversubscribed: bool  # threads > cores
    allocator_mode: str  # "malloc" | "new" | "void"
    touch: str  # "none" | "write-read" | "full" | "original"
    size_law: str  # "bands" | "inverse"
    slot_law: str  # "pareto6" | "powerlaw"
    hot_slots: str  # "contiguous" | "scattered"
    void_run: str  # "separate" | "in-process"
    slots: int  # used: slots_per_thread * threads
    slots_per_thread: int
    pareto_exponent: (
        float | None
    )  # powerlaw: s of p(rank) ~ (rank+1)^-s fitted to 80/20; pareto6: None
    mean_size: float  # of the size law (bands ~45.5 B at 64 KiB; inverse: continuous law on [min, max + 1))
    realised_mean_size: float  # requested bytes / mallocs in the timed phase
    hot_share: float  # share of timed picks that went to the hottest 0.16% of slots (pareto6 ~0.65, powerlaw ~0.37)
    iterations: int  # timed picks = mallocs + frees
    mallocs: int
    frees: int
    pairs: float  # (mallocs + frees) / 2
    ns_per_pair: float  # = ns_per_pair_thread
    ns_per_pair_wall: float  # run wall seconds * 1e9 / pairs (all threads' throughput)
    ns_per_pair_thread: (
        float  # sum of each thread's loop seconds * 1e9 / pairs (cost to the thread)
    )
    ns_per_op: float  # ns_per_pair_thread / 2 (an operation is one malloc or one free)
    whole_s: float  # the original's clock: thread start, setup (fill), warmup, run, teardown, join
    whole_ops: int  # warmup + timed operations of all threads
    ms_per_mop: (
        float  # the original's unit: whole_s in ms per million whole_ops (gross; net of void below)
    )
    void_whole_s: float | None  # void_run "in-process" only: the void pass's whole_s
    void_ms_per_mop: float | None
    void_ns_per_op: float | None
    ns_per_op_net: float | None  # ns_per_op - void_ns_per_op
    ns_per_pair_net: float | None
    ms_per_mop_net: (
        float | None
    )  # ms_per_mop - void_ms_per_mop (the figure beside the article's chart)
    chunk_ns_median: float  # ns per pair within each chunk, over all chunks of all threads
    chunk_ns_p10: float
    chunk_ns_p90: float
    peak_requested_bytes: (
        int  # max live requested bytes over setup..run (exact at 1 thread, sampled above)
    )
    peak_requested_bytes_bound: int  # sum of per-thread exact peaks, an upper bound
    live_bytes_end: int  # live requested bytes when the timed phase ended
    live_blocks_end: int
    bytes_touched: int  # timed phase: bytes written + bytes read
    bytes_written: int  # all phases
    bytes_read: int  # all phases; == bytes_written for write-read, 2x for full, 0 for none
    checksum: (
        int  # sum (mod 2^64) of every 64-bit word / tail byte read back; same seed -> same value
    )
    mismatches: (
        int | None
    )  # blocks whose read-back differed (must be 0); None in void mode (shared buffer)
    counters: dict[str, CounterResult]

def alloctest(
    *,
    threads: int = ...,
    iterations: int = ...,
    iterations_per: Literal["thread", "total"] = ...,
    warmup_iterations: int = ...,
    slots: int = ...,
    slots_per: Literal["total", "thread"] = ...,
    total_bytes: int = ...,
    size_law: Literal["bands", "inverse"] = ...,
    slot_law: Literal["pareto6", "powerlaw"] = ...,
    hot_slots: Literal["contiguous", "scattered"] = ...,
    min_size: int = ...,
    max_size: int = ...,
    touch: Literal["none", "write-read", "full", "original"] = ...,
    allocator_mode: Literal["malloc", "new", "void"] = ...,
    void_run: Literal["separate", "in-process"] = ...,
    chunks: int = ...,
    seed: int = ...,
    counters: list[CounterSpec] = [],
    hook: Hook | None = None,
) -> AlloctestResult:
    """Allocator stress after ITHare's alloc-test: 80/20-picked slots toggled by malloc/free, blocks verified.

    Defaults (from the registry) are the original program's: 2^25 slots in total, 100M operations per
    thread, power-of-two size bands, six-level 80/20 slot law with the hot slots first. slots == 0 derives
    the slot count from total_bytes (steady state ~ total_bytes live, over all threads). Phases "setup", "warmup", "run" (timed; counters on), "teardown", all on the
    same worker threads. Raises ValueError on bad arguments, MemoryError if malloc returns NULL.
    """

class AlloctestDistributions(TypedDict):
    slot_counts: (
        _np.ndarray
    )  # uint64, picks per slot id (after the scattering permutation, if scattered)
    rank_counts: _np.ndarray  # uint64, picks per popularity rank (0 = hottest)
    sizes: _np.ndarray  # uint32, one block size per draw
    pareto_exponent: float | None  # None for pareto6
    mean_size: float
    hot_share: float  # picks of the hottest 0.16% of slots (by rank)
    hot_slots: int  # how many slots that is

def alloctest_distributions(
    n_draws: int,
    slots: int,
    min_size: int = 5,
    max_size: int = 65536,
    seed: int = 1,
    size_law: Literal["bands", "inverse"] = "bands",
    slot_law: Literal["pareto6", "powerlaw"] = "pareto6",
    hot_slots: Literal["contiguous", "scattered"] = "contiguous",
) -> AlloctestDistributions:
    """The slot and size laws exactly as alloctest() draws them (one thread's worth of slots)."""

# -- faultstorm ------------------------------------------------------------------------------------

FaultstormBacking = Literal[
    "vector",  # std::vector<char>(n): allocator's path, zero-filled in "obtain" (the faults land there)
    "new",  # new char[n]: allocator's path, untouched (lazy)
    "malloc",  # malloc(n): allocator's path, untouched (lazy)
    "mmap-private",  # MAP_PRIVATE|MAP_ANONYMOUS (lazy)
    "mmap-private-populate",  # ... |MAP_POPULATE
    "mmap-shared",  # MAP_SHARED|MAP_ANONYMOUS, shmem-backed (lazy)
    "mmap-shared-populate",  # ... |MAP_POPULATE (the kernel read-populates shared mappings)
    "madv-hugepage",  # 2 MiB-aligned private mapping + MADV_HUGEPAGE (lazy)
    "madv-populate",  # private mapping + MADV_POPULATE_WRITE (Linux 5.14+)
    "hugetlb",  # MAP_HUGETLB|MAP_HUGE_2MB from the explicit pool (lazy within the reservation)
]

class FaultstormPhases(TypedDict, total=False):
    obtain: float  # seconds; includes any populate / zero-fill
    first_touch: float  # only with first_touch=True
    steady: float  # the timed phase: barrier release to the last worker's join
    release: float  # munmap / free

class FaultstormResult(TypedDict):
    phases: FaultstormPhases
    backing: str
    map_flags: str  # the flags / madvise really used, e.g. "mmap(MAP_PRIVATE|MAP_ANONYMOUS)+madvise(MADV_POPULATE_WRITE)"
    buffer_bytes: int
    page_size: int  # access granularity: the base page
    mapping_page_size: int  # 2 MiB for hugetlb, else the base page (THP may still upgrade)
    pages: int  # buffer_bytes / page_size
    threads: int
    op_unit: Literal["page-access", "request"]
    ops: int  # total over threads, in op_unit
    requests: int  # 0 outside requests mode
    pages_per_request: int
    ns_per_op: float  # steady seconds * 1e9 / ops
    chunks: int  # per thread
    chunk_ns_median: float  # ns per op within each chunk, over all chunks of all threads
    chunk_ns_p10: float
    chunk_ns_p90: float
    request_ns_p50: (
        float | None
    )  # single-request latency, all threads merged; None outside requests mode
    request_ns_p90: float | None
    request_ns_p99: float | None
    request_ns_max: float | None
    checksum: int  # sum of every thread's slots read back after the steady phase
    mismatches: int  # slots that disagree with a replay of the op streams; must be 0
    counters: dict[str, CounterResult]  # counted during the steady phase only
    steady_thread_minflt: (
        int  # sums over the worker threads of RUSAGE_THREAD deltas in the steady phase
    )
    steady_thread_majflt: int
    steady_thread_utime_s: float
    steady_thread_stime_s: float
    steady_thread_cpu_s: float  # CLOCK_THREAD_CPUTIME_ID
    steady_thread_wall_max_s: float  # the slowest worker's own wall time
    steady_thread_stime_share: float | None  # stime / (utime + stime); None when both are 0

def faultstorm(
    *,
    backing: FaultstormBacking = ...,
    buffer_bytes: int = ...,
    threads: int = ...,
    ops_per_thread: int = ...,
    write_ratio: float = ...,
    first_touch: bool = ...,
    requests_per_thread: int = ...,
    request_bytes: int = ...,
    chunks: int = ...,
    seed: int = ...,
    counters: list[CounterSpec] = [],
    hook: Hook | None = None,
) -> FaultstormResult:
    """Threads hit a buffer at random pages; where the page faults land depends on the backing.

    Phases: "obtain", ["first_touch"], "steady" (timed), "release". Ops mode: each thread does
    ops_per_thread accesses along its own seeded permutation of the pages (write_ratio of them writes).
    Requests mode (requests_per_thread > 0): each request reads every cache line of a random
    request_bytes slice and, with probability write_ratio, writes the thread's slot in each page of it.
    Raises ValueError on bad arguments; RuntimeError naming the fix when the kernel refuses a backing
    (hugetlb pool too small, no MADV_POPULATE_WRITE).
    """

class FaultstormProbe(TypedDict):
    handle: int
    address: int  # start of the buffer
    length: int
    mapped_bytes: int  # our own mapping's length; 0 when the allocator owns the memory
    mapping_page_size: int
    map_flags: str

def faultstorm_probe(backing: FaultstormBacking, buffer_bytes: int) -> FaultstormProbe:
    """Obtain a buffer as faultstorm() would, write every page once, keep it until faultstorm_release."""

def faultstorm_release(handle: int) -> None:
    """Give back a faultstorm_probe buffer (ValueError for an unknown or already released handle)."""

class TlbprobePhases(TypedDict):
    populate: float  # seconds: map the buffer, one write per 4 KiB
    build: float  # link the cycle, untimed warm-up walk
    chase: float  # the timed phase

class TlbprobeResult(TypedDict):
    phases: TlbprobePhases
    backing: str
    pattern: str
    map_flags: str
    working_set_bytes: int
    mapped_bytes: int
    mapping_page_size: (
        int  # page size asked for (4 KiB for 4k and thp; THP coverage is checked from smaps)
    )
    nodes: int
    node_stride_bytes: int
    chains: int
    accesses: int
    ns_per_access: float
    chunks: int
    chunk_ns_median: float
    chunk_ns_p10: float
    chunk_ns_p90: float
    checksum: int
    counters: dict[str, CounterResult]

def tlbprobe(
    *,
    backing: Literal["4k", "thp", "hugetlb-2m", "hugetlb-1g"] = ...,
    working_set_bytes: int = ...,
    pattern: Literal["chase", "mlp", "reach"] = ...,
    chains: int = ...,
    accesses: int = ...,
    max_nodes: int = ...,
    chunks: int = ...,
    seed: int = ...,
    counters: list[CounterSpec] = [],
    hook: Hook | None = None,
) -> TlbprobeResult:
    """Dependent loads along one random cycle of nodes over a buffer of the given page size.

    Phases "populate", "build", "chase" (timed). Raises ValueError on bad arguments, RuntimeError when the
    kernel refuses the mapping (an empty hugetlb pool).
    """

def tlbprobe_cycle(nodes: int, seed: int = 1) -> list[int]:
    """next[i] of the cycle tlbprobe() links for this many nodes and seed: one cycle through all nodes."""

# -- fleet -----------------------------------------------------------------------------------------

class FleetResult(TypedDict):
    phases: dict[str, float]  # grow, peak, shrink, churn, teardown (seconds)
    threads: int
    mean_size: float  # of size_mix
    requests: int  # peak + churn
    requests_peak: int
    requests_churn: int
    steady_s: float  # peak + churn wall seconds
    requests_per_s: float
    request_ns_mean: float
    request_ns_p50: float | None  # per request, from a ~3%-resolution histogram of all threads
    request_ns_p90: float | None
    request_ns_p99: float | None
    request_ns_p999: float | None
    chunk_ns_median: float  # ns per request within each time chunk
    chunk_ns_p10: float
    chunk_ns_p90: float
    mallocs: int  # all phases
    frees: int
    steady_mallocs: int  # peak + churn: requests * (temporaries + replacements)
    steady_frees: int
    lookups_done: int  # named apart from the parameters: a row holds both
    replacements_done: int
    temporaries_done: int
    alloc_calls: int  # malloc + free calls in peak + churn
    alloc_calls_timed: int  # ~ alloc_calls / alloc_sample_every
    alloc_time_s: (
        float | None
    )  # estimated time in malloc/free over all threads (None when not sampled)
    alloc_time_share: float | None  # of threads * steady_s
    alloc_clock_overhead_ns: float  # taken off each timed call
    tsc_ghz: float
    objects_peak: int
    objects_after_shrink: int
    peak_live_bytes: int  # sum of the threads' peaks of requested bytes (objects + temporaries)
    live_bytes_after_shrink: int
    live_bytes_end: int
    series_t_s: list[float]  # since the grow phase started, one entry per hook(phase, "sample")
    series_phase: list[str]
    series_live_bytes: list[int]
    series_requests: list[int]
    checksum: int
    mismatches: int  # header or line words that did not read back as written
    counters: dict[str, CounterResult]

def fleet(
    *,
    threads: int = ...,
    objects: int = ...,
    size_mix: str = ...,
    lookups: int = ...,
    replacements: int = ...,
    temporaries: int = ...,
    temp_max_bytes: int = ...,
    duration_s: float = ...,
    peak_share: float = ...,
    shrink_fraction: float = ...,
    alloc_sample_every: int = ...,
    sample_interval_s: float = ...,
    chunks: int = ...,
    seed: int = ...,
    counters: list[CounterSpec] = [],
    hook: Hook | None = None,
) -> FleetResult:
    """A request loop over a live object set: temporaries, K lookups, R replacements per request.

    Phases "grow", "peak", "shrink", "churn" (timed), "teardown"; hook(phase, "sample") every
    sample_interval_s during peak and churn and once after the shrink.
    """

def fleet_size_mean(size_mix: str) -> float:
    """Mean object size of a size_mix string (ValueError when it does not parse)."""
