// libhbselect.so: huge pages for the regions a rule selects, and only for them, in a program we did not write.
//
//   LD_PRELOAD=libhbselect.so HUGEBENCH_SELECT=anon>=67108864,heap program ...
//
// HUGEBENCH_SELECT is the normalised rule of hugebench.machine.select_rule (checked there; a form this file
// does not read selects nothing): comma-separated terms
//  * anon>=BYTES: each anonymous private block of BYTES or more the program maps (mmap, mremap) or allocates
//    (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) gets madvise(MADV_HUGEPAGE) over its
//    pages, so its later faults are served with 2 MiB pages under THP `madvise`. glibc's malloc maps large
//    blocks with its own internal mmap, which no preload sees: the malloc family is wrapped for that (each
//    wrapper calls the next malloc in the search order, so the program's allocator stays its own), and the
//    block's range is rounded out to whole 4 KiB pages (the page that holds the allocator's header is the
//    block's own mapping for an mmap'd block). A block that mremap grows over BYTES is madvised then, and
//    the part already faulted collapsed (MADV_COLLAPSE, Linux 6.1; silently skipped where missing).
//  * anon<BYTES: with anon>=, only blocks below BYTES.
//  * site=OBJECT+0xOFFSET: each block of 2 MiB or more made from that return address (the object's file
//    name, the offset from its load base), as the log below names it; up to 8.
//  * heap: the brk heap, from its start to the current break, madvised each time it has grown (checked
//    after every call of the malloc family: sbrk(0) is a read of libc's variable), the part already faulted
//    when the library loads collapsed; glibc's heap then grows 32 MiB at a time (M_TOP_PAD), since each
//    growth is a mapping of its own.
// HB_SELECT_LOG=DIR: one line per block of 2 MiB or more in DIR/select-<pid>.log: the pid, how it came (mmap,
// mremap, malloc, ...), its start and size, whether it was advised, its call site (OBJECT+0xOFFSET) and the
// symbol of the return address -- `hugebench where` names a region's origin from it, with HUGEBENCH_SELECT unset.
// Logging keeps adjacent blocks apart: every other one not advised is marked MADV_DONTDUMP, so that the
// kernel does not merge them into one mapping (a core dump of the program then leaves those out).
// Rules of a guest (as libhbprobe): no C++ runtime, no allocation of our own, errno as the call left it,
// silence on any failure.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {

constexpr uintptr_t PAGE = 4096;
constexpr size_t HUGE = 2u << 20;
constexpr int HEAP_STEP = 32 << 20;

struct Real {
    void* (*malloc)(size_t);
    void* (*calloc)(size_t, size_t);
    void* (*realloc)(void*, size_t);
    int (*posix_memalign)(void**, size_t, size_t);
    void* (*aligned_alloc)(size_t, size_t);
    void* (*memalign)(size_t, size_t);
    void* (*mmap)(void*, size_t, int, int, int, off_t);
    void* (*mremap)(void*, size_t, size_t, int, ...);
};

Real real;
int resolving;       // dlsym may allocate: meanwhile glibc's own malloc serves
int ready;
size_t anon_min;     // 0: no anon term
size_t anon_below;   // 0: no upper bound
constexpr int MAX_SITES = 8;
char sites[MAX_SITES][224];  // OBJECT+0xOFFSET
int nsites;
int heap_selected;
uintptr_t heap_lo;   // page-aligned start of the brk heap
uintptr_t heap_done; // the break up to which the heap is madvised
int log_fd = -1;
// The main program's file name, from /proc/self/exe at load: dladdr names the main program by argv[0],
// which a server may have rewritten by then (redis-server's process title is its socket's path).
char exe_name[256] = "?";
unsigned logged;        // blocks logged so far (every other one is kept apart: keep_apart)
uintptr_t heap_start;   // start_brk, read at load when logging

template <typename F>
void next(F& slot, const char* name) {
    slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void parse_rule(const char* text) {
    if (!text) return;
    while (*text) {
        char* end = nullptr;
        if (strncmp(text, "anon>=", 6) == 0 || strncmp(text, "anon<", 5) == 0) {
            bool low = text[4] == '>';
            const char* digits = text + (low ? 6 : 5);
            unsigned long long v = strtoull(digits, &end, 10);
            if (end == digits || v < HUGE) break;
            (low ? anon_min : anon_below) = static_cast<size_t>(v);
            text = end;
        } else if (strncmp(text, "site=", 5) == 0 && nsites < MAX_SITES) {
            const char* stop = strchr(text, ',');
            size_t n = stop ? static_cast<size_t>(stop - text - 5) : strlen(text + 5);
            if (n == 0 || n >= sizeof sites[0]) break;
            memcpy(sites[nsites], text + 5, n);
            sites[nsites++][n] = 0;
            text += 5 + n;
        } else if (strncmp(text, "heap", 4) == 0 && (text[4] == ',' || text[4] == 0)) {
            heap_selected = 1;
            text += 4;
        } else {
            break;
        }
        if (*text == ',') ++text;
        else if (*text) break;
    }
    if (*text) {  // a form we do not read selects nothing
        anon_min = anon_below = 0;
        heap_selected = nsites = 0;
    }
    if (anon_below && !anon_min) anon_min = HUGE;
}

// The start of the brk heap: /proc/self/stat's field 47 (start_brk).
uintptr_t start_brk() {
    char buf[2048];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char* p = strrchr(buf, ')');  // the command name may hold spaces
    if (!p) return 0;
    int field = 2;
    for (; *p && field < 47; ++p)
        if (*p == ' ') ++field;
    return static_cast<uintptr_t>(strtoull(p, nullptr, 10));
}

void logf(const char* fmt, ...) {
    if (log_fd < 0) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) {
        ssize_t w = write(log_fd, line, n < static_cast<int>(sizeof line) ? n : sizeof line - 1);
        (void)w;
    }
}

// The call site of ``caller`` as OBJECT+0xOFFSET (the object's file name, the offset from its base) and
// the symbol it is in ("?" where the dynamic symbol table has none).
void site_of(void* caller, char* site, size_t size, const char** symbol) {
    Dl_info info;
    struct link_map* map = nullptr;
    *symbol = "?";
    if (!caller || !dladdr1(caller, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP)) {
        snprintf(site, size, "?+0x0");
        return;
    }
    // the main program's link map has an empty name: its file is /proc/self/exe's, not argv[0]
    const char* file = map && map->l_name && *map->l_name ? map->l_name : map ? exe_name : info.dli_fname;
    if (!file) file = "?";
    const char* base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (!*base) base = "?";
    if (info.dli_sname) *symbol = info.dli_sname;
    snprintf(site, size, "%s+0x%lx", base,
             static_cast<unsigned long>(reinterpret_cast<uintptr_t>(caller) -
                                        reinterpret_cast<uintptr_t>(info.dli_fbase)));
}

bool in_heap(uintptr_t at) {
    uintptr_t lo = heap_lo ? heap_lo : __atomic_load_n(&heap_start, __ATOMIC_RELAXED);
    return lo && at >= lo && at < reinterpret_cast<uintptr_t>(sbrk(0));
}

// Every other logged block is marked MADV_DONTDUMP (left out of a core dump, nothing else): the kernel
// merges adjacent anonymous mappings with the same flags into one, and `where` must see each block apart.
void keep_apart(uintptr_t start, size_t size) {
    uintptr_t lo = start & ~(PAGE - 1);
    uintptr_t hi = (start + size + PAGE - 1) & ~(PAGE - 1);
    int saved = errno;
    madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTDUMP);
    errno = saved;
}

bool size_selected(size_t size) {
    return anon_min && size >= anon_min && (!anon_below || size < anon_below);
}

// Whether a block of ``size`` from ``caller`` is selected; logs it (HB_SELECT_LOG) with ``advised`` then.
// Called only for blocks of 2 MiB or more: dladdr is looked up for those alone, and only when needed.
template <typename Advise>
void consider(const char* how, uintptr_t start, size_t size, void* caller, Advise advise_it) {
    char site[256];
    const char* symbol = "?";
    bool want = size_selected(size);
    bool named = nsites > 0 || log_fd >= 0;
    if (named) site_of(caller, site, sizeof site, &symbol);
    for (int i = 0; !want && i < nsites; ++i) want = strcmp(site, sites[i]) == 0;
    int advised = want ? advise_it() : 0;
    if (log_fd >= 0 && !advised && !in_heap(start) && (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) & 1))
        keep_apart(start, size);
    if (log_fd >= 0)
        logf("%d %s %lx %zu %d %s %s\n", static_cast<int>(getpid()), how, static_cast<unsigned long>(start),
             size, advised, site, symbol);
}

// madvise the whole pages of [start, start + size), rounded out; collapse them too when asked.
int advise(uintptr_t start, size_t size, int collapse) {
    uintptr_t lo = start & ~(PAGE - 1);
    uintptr_t hi = (start + size + PAGE - 1) & ~(PAGE - 1);
    int saved = errno;
    int ok = madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE) == 0;
    if (ok && collapse) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_COLLAPSE);
    errno = saved;
    return ok;
}

void heap_check() {
    if (!heap_selected || !heap_lo) return;
    uintptr_t brk = reinterpret_cast<uintptr_t>(sbrk(0));
    uintptr_t done = __atomic_load_n(&heap_done, __ATOMIC_RELAXED);
    if (brk <= done) return;
    __atomic_store_n(&heap_done, brk, __ATOMIC_RELAXED);
    advise(heap_lo, brk - heap_lo, 0);
}

void resolve() {
    resolving = 1;
    next(real.malloc, "malloc");
    next(real.calloc, "calloc");
    next(real.realloc, "realloc");
    next(real.posix_memalign, "posix_memalign");
    next(real.aligned_alloc, "aligned_alloc");
    next(real.memalign, "memalign");
    next(real.mmap, "mmap");
    next(real.mremap, "mremap");
    resolving = 0;
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

inline bool usable() {
    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) return true;
    if (resolving) return false;
    resolve();
    return true;
}

// After the malloc family returned ``p`` for ``size`` bytes.
inline void after_alloc(const char* how, void* p, size_t size, void* caller) {
    if (p && size >= HUGE) {
        uintptr_t at = reinterpret_cast<uintptr_t>(p);
        consider(how, at, size, caller, [&] { return advise(at, size, 0); });
    }
    heap_check();
}

// Whether the mapping that starts at ``addr`` is anonymous (no file, no name) by /proc/self/maps.
bool anonymous_at(uintptr_t addr) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[8192];
    size_t have = 0;
    bool found = false, anon = false;
    while (!found) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0) break;
        have += static_cast<size_t>(n);
        buf[have] = 0;
        char* line = buf;
        char* nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            if (strtoull(line, nullptr, 16) == addr) {
                // start-end perms offset dev inode [name]: the sixth field absent means anonymous
                int fields = 0;
                for (char* q = line; *q;) {
                    while (*q == ' ') ++q;
                    if (!*q) break;
                    ++fields;
                    while (*q && *q != ' ') ++q;
                }
                found = true;
                anon = fields == 5;
                break;
            }
            line = nl + 1;
        }
        have = static_cast<size_t>(buf + have - line);
        memmove(buf, line, have);
        if (have >= sizeof buf - 1) have = 0;
    }
    close(fd);
    return anon;
}

__attribute__((constructor, used)) void hb_select_load() {
    int saved = errno;
    parse_rule(getenv("HUGEBENCH_SELECT"));
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        const char* slash = strrchr(exe, '/');
        snprintf(exe_name, sizeof exe_name, "%s", slash ? slash + 1 : exe);
    }
    const char* dir = getenv("HB_SELECT_LOG");
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/select-%d.log", dir, static_cast<int>(getpid()));
        log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
        heap_start = start_brk() & ~(PAGE - 1);
    }
    if (!ready) resolve();
    if (heap_selected) {
        // brk never extends a mapping whose flags differ from its defaults, so each growth past an advised
        // heap is a mapping of its own, which the kernel cannot merge once glibc has written into it:
        // growing 32 MiB at a time keeps each one large enough for huge pages (glibc's M_TOP_PAD; it also
        // fixes glibc's mmap threshold at its default).
        mallopt(M_TOP_PAD, HEAP_STEP);
        heap_lo = start_brk() & ~(PAGE - 1);
        uintptr_t brk = reinterpret_cast<uintptr_t>(sbrk(0));
        if (heap_lo && brk > heap_lo) {
            heap_done = brk;
            advise(heap_lo, brk - heap_lo, 1);
        } else if (heap_lo) {
            heap_done = heap_lo;
        }
    }
    errno = saved;
}

}  // namespace

#define HB_EXPORT extern "C" __attribute__((visibility("default")))

HB_EXPORT void* malloc(size_t size) {
    if (!usable()) return __libc_malloc(size);
    void* p = real.malloc(size);
    after_alloc("malloc", p, size, __builtin_return_address(0));
    return p;
}

HB_EXPORT void* calloc(size_t n, size_t size) {
    if (!usable()) return __libc_calloc(n, size);
    void* p = real.calloc(n, size);
    size_t total;
    if (!__builtin_mul_overflow(n, size, &total)) after_alloc("calloc", p, total, __builtin_return_address(0));
    return p;
}

HB_EXPORT void* realloc(void* old, size_t size) {
    if (!usable()) return __libc_realloc(old, size);
    void* p = real.realloc(old, size);
    after_alloc("realloc", p, size, __builtin_return_address(0));
    return p;
}

HB_EXPORT int posix_memalign(void** out, size_t align, size_t size) {
    if (!usable()) {
        *out = __libc_memalign(align, size);
        return *out ? 0 : ENOMEM;
    }
    int rc = real.posix_memalign(out, align, size);
    if (rc == 0) after_alloc("posix_memalign", *out, size, __builtin_return_address(0));
    return rc;
}

HB_EXPORT void* aligned_alloc(size_t align, size_t size) {
    if (!usable()) return __libc_memalign(align, size);
    void* p = real.aligned_alloc(align, size);
    after_alloc("aligned_alloc", p, size, __builtin_return_address(0));
    return p;
}

HB_EXPORT void* memalign(size_t align, size_t size) {
    if (!usable()) return __libc_memalign(align, size);
    void* p = real.memalign(align, size);
    after_alloc("memalign", p, size, __builtin_return_address(0));
    return p;
}

HB_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    void* p = usable() && real.mmap
                  ? real.mmap(addr, len, prot, flags, fd, off)
                  : reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_SHARED) && len >= HUGE) {
        uintptr_t at = reinterpret_cast<uintptr_t>(p);
        consider("mmap", at, len, __builtin_return_address(0), [&] { return advise(at, len, 0); });
    }
    return p;
}

HB_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

HB_EXPORT void* mremap(void* old, size_t old_size, size_t new_size, int flags, ...) {
    void* target = nullptr;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        target = va_arg(ap, void*);
        va_end(ap);
    }
    void* p = usable() && real.mremap
                  ? real.mremap(old, old_size, new_size, flags, target)
                  : reinterpret_cast<void*>(syscall(SYS_mremap, old, old_size, new_size, flags, target));
    if (p != MAP_FAILED && new_size >= HUGE) {
        uintptr_t at = reinterpret_cast<uintptr_t>(p);
        int saved = errno;
        consider("mremap", at, new_size, __builtin_return_address(0), [&] {
            // only an anonymous block; the part it had before is faulted already: collapsed
            return anonymous_at(at) && advise(at, new_size, 0) ? (advise(at, old_size, 1), 1) : 0;
        });
        errno = saved;
    }
    return p;
}
