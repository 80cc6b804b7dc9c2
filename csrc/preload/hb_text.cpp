// libhbtext.so: the main program's text on huge pages, done from inside it before it runs.
//
//   LD_PRELOAD=libhbtext.so HB_TEXT_PAGES=off|thp|hugetlb|file-thp HB_TEXT_REPORT_DIR=DIR program ...
//
// Without HB_TEXT_PAGES the library does nothing at all. With it, a constructor (priority 101, before the
// program's own) takes the main executable's largest executable PT_LOAD, [text_start, text_end), and its
// 2 MiB-aligned interior [interior_start, interior_end) (the head and tail around it stay on 4 KiB pages):
//  * off:      touches nothing (the control); reports the range.
//  * thp:      copies the interior into an aligned anonymous region with MADV_HUGEPAGE (+ MADV_COLLAPSE),
//              makes it r-x and swaps it in over the old text with mremap(MREMAP_MAYMOVE | MREMAP_FIXED).
//  * hugetlb:  the same from the explicit pool (MAP_HUGETLB, 2 MiB pages).
//  * file-thp: no copy: MADV_HUGEPAGE + MADV_POPULATE_READ on the file mapping's interior, which the kernel
//              maps with PMDs only where the page cache already holds 2 MiB folios (hb-textfill puts them
//              there before exec) and address minus file offset is a multiple of 2 MiB.
// The mover is this library, outside the range it moves; it runs only while the process has one thread
// (the copy would race with a thread executing the text), with signals blocked. If anything fails the old
// text stays (after a failed mremap it is checked and, if the kernel had already unmapped it, mapped again
// from the file) and the report says why. A failure never changes what the program does.
//
// Reports, when HB_TEXT_REPORT_DIR is set (files appear whole: a temp name, then link or rename):
//  * DIR/text-<pid>.json at load (text-<pid>-<n>.json for the n-th later image a pid execs): pid, exe, mode,
//    the ranges, head_bytes, tail_bytes, action (moved, madvised, none, error), error, seconds, and the
//    interior's smaps sums right after the action.
//  * DIR/text-exit-<pid>[-<n>].json at exit() (or whenever the program calls hb_text_report_exit()): the
//    sums of AnonHugePages, FilePmdMapped, Private_Hugetlb, Shared_Hugetlb and Rss, in bytes, over the VMAs
//    of /proc/self/smaps that overlap the interior (span_start/span_end say which). Only the interior can
//    be PMD-mapped, so the huge fields are the interior's; Rss may include head or tail of a VMA.
// Test hook: HB_TEXT_FAIL=mremap makes the swap fail the worst way (the kernel unmapped the old text, then
// the move failed); HB_TEXT_FAIL=mremap-early fails it with nothing changed. Never set it in a sweep.
//
// hb_text_smaps.{h,cpp} hold what it shares with hb-textfill (hb_textfill.cpp): records, smaps sums.
// A guest in programs we did not write: hidden visibility, no C++ runtime, no allocation, errno kept.
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#include "hb_text_smaps.h"

using namespace hb_text;  // the parts shared with hb-textfill

namespace {

// ---- reports ----------------------------------------------------------------------------------------

bool write_all(int fd, const char* data) {
    for (size_t left = std::strlen(data); left > 0;) {
        ssize_t n = write(fd, data, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        left -= static_cast<size_t>(n);
    }
    return true;
}

// Publishes `data` as DIR/NAME via a temp file. keep: never replace an existing NAME (EEXIST then).
int publish(const char* dir, const char* name, const char* data, bool keep) {
    char tmp[PATH_MAX], final_path[PATH_MAX];
    if (std::snprintf(tmp, sizeof tmp, "%s/.%s.%d.tmp", dir, name, static_cast<int>(getpid())) >= PATH_MAX ||
        std::snprintf(final_path, sizeof final_path, "%s/%s", dir, name) >= PATH_MAX)
        return ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return errno;
    bool ok = data && write_all(fd, data);
    ok = close(fd) == 0 && ok;
    int error = ok ? 0 : EIO;
    if (!error && keep) error = link(tmp, final_path) == 0 ? 0 : errno;
    else if (!error) error = rename(tmp, final_path) == 0 ? 0 : errno;
    unlink(tmp);
    return error;
}

void write_coverage(Record& r, const Coverage& c) {
    for (int i = 0; i < kSums; ++i) {
        if (c.read) r.number(kSumFields[i], c.bytes[i]);
    }
    if (c.read) r.number("huge_bytes", c.huge());
    r.hex("span_start", c.span_start);
    r.hex("span_end", c.span_end);
}

// ---- the text -------------------------------------------------------------------------------------

struct Text {
    // No member initialisers: `state` below must need no static constructor (it would run after ours).
    uintptr_t start, end;  // the largest executable PT_LOAD, page-rounded
    uintptr_t lo, hi;      // its 2 MiB-aligned interior (lo == hi == start when there is none)
    uint64_t lo_offset;    // the file offset mapped at lo
    int segments;          // executable PT_LOADs in the program
    uintptr_t bytes() const { return hi - lo; }
};

void set_interior(Text& t) {
    t.lo = round_up(t.start, kHuge);
    t.hi = round_down(t.end, kHuge);
    if (t.hi <= t.lo) t.lo = t.hi = t.start;
}

int first_object(dl_phdr_info* info, size_t, void* out) {
    Text& t = *static_cast<Text*>(out);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        ++t.segments;
        uintptr_t start = round_down(info->dlpi_addr + ph.p_vaddr, kPage);
        uintptr_t end = round_up(info->dlpi_addr + ph.p_vaddr + ph.p_filesz, kPage);
        if (end - start <= t.end - t.start) continue;
        t.start = start;
        t.end = end;
        set_interior(t);
        t.lo_offset = ph.p_offset - (info->dlpi_addr + ph.p_vaddr - t.lo);
    }
    return 1;  // the first object is the main program
}

// Threads of this process, counted without opendir (which allocates).
int thread_count() {
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int count = 0;
    alignas(8) char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0) break;
        for (long at = 0; at < n;) {
            auto* entry = reinterpret_cast<const dirent64*>(buf + at);
            if (entry->d_name[0] != '.') ++count;
            at += entry->d_reclen;
        }
    }
    close(fd);
    return count;
}

struct Outcome {
    const char* action = "none";
    char error[512] = {};
    int collapse = -1;  // MADV_COLLAPSE: 0, or the errno it failed with; -1 not tried
    void fail(const char* what, int err) {
        action = "error";
        std::snprintf(error, sizeof error, "%s: %s", what, strerror(err));
    }
};

// ---- thp / hugetlb: move the interior -------------------------------------------------------------

// A fresh r-w region of `len` bytes for the copy, 2 MiB-aligned; MAP_FAILED with errno on failure.
void* fresh_region(uintptr_t len, bool hugetlb) {
    if (hugetlb) {
        return mmap(nullptr, len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (21 << MAP_HUGE_SHIFT), -1, 0);
    }
    void* wide = mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (wide == MAP_FAILED) return MAP_FAILED;
    uintptr_t base = reinterpret_cast<uintptr_t>(wide), aligned = round_up(base, kHuge);
    if (aligned > base) munmap(wide, aligned - base);
    if (base + kHuge > aligned) munmap(reinterpret_cast<void*>(aligned + len), base + kHuge - aligned);
    return reinterpret_cast<void*>(aligned);
}

// The swap itself, or the failure the test hook asks for.
int swap_in(void* fresh, const Text& t) {
    const char* fail = std::getenv("HB_TEXT_FAIL");
    if (fail && std::strcmp(fail, "mremap") == 0) {  // worst case: the kernel unmapped the target, then failed
        munmap(reinterpret_cast<void*>(t.lo), t.bytes());
        errno = ENOMEM;
        return -1;
    }
    if (fail && std::strcmp(fail, "mremap-early") == 0) {
        errno = EINVAL;
        return -1;
    }
    void* moved = mremap(fresh, t.bytes(), t.bytes(), MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(t.lo));
    return moved == MAP_FAILED ? -1 : 0;
}

// After a failed swap: is the old text whole? mremap(MREMAP_FIXED) unmaps the target before it moves, so a
// late failure can leave a hole. Fill it from the file (the original mapping), else with the copy.
const char* restore_text(void* fresh, const Text& t) {
    void* lo = reinterpret_cast<void*>(t.lo);
    if (msync(lo, t.bytes(), MS_ASYNC) == 0) return "old text still mapped";
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    void* back = fd < 0 ? MAP_FAILED
                        : mmap(lo, t.bytes(), PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd,
                               static_cast<off_t>(t.lo_offset));
    if (fd >= 0) close(fd);
    if (back != MAP_FAILED) return "old text had been unmapped: mapped again from the file";
    void* moved = mremap(fresh, t.bytes(), t.bytes(), MREMAP_MAYMOVE | MREMAP_FIXED, lo);
    return moved != MAP_FAILED ? "old text had been unmapped: the copy put in its place" : "old text lost";
}

void move_text(const Text& t, bool hugetlb, Outcome& out) {
    void* fresh = fresh_region(t.bytes(), hugetlb);
    if (fresh == MAP_FAILED) {
        return out.fail(hugetlb ? "mmap(MAP_HUGETLB) (pool too small?)" : "mmap of the copy", errno);
    }
    if (!hugetlb) madvise(fresh, t.bytes(), MADV_HUGEPAGE);  // before the first touch: faults take THPs
    std::memcpy(fresh, reinterpret_cast<const void*>(t.lo), t.bytes());
    if (!hugetlb) out.collapse = madvise(fresh, t.bytes(), MADV_COLLAPSE) == 0 ? 0 : errno;
    prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, fresh, t.bytes(), "hb_text");  // a name in smaps; optional
    if (mprotect(fresh, t.bytes(), PROT_READ | PROT_EXEC) != 0) {
        out.fail("mprotect of the copy", errno);
        munmap(fresh, t.bytes());
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);  // no handler may run the text mid-swap
    if (swap_in(fresh, t) == 0) {
        out.action = "moved";
    } else {
        int err = errno;
        const char* state = restore_text(fresh, t);
        munmap(fresh, t.bytes());  // still there after a failed move; gone if it became the text
        std::snprintf(out.error, sizeof out.error, "mremap: %s (%s)", strerror(err), state);
        out.action = "error";
    }
    sigprocmask(SIG_SETMASK, &old, nullptr);
}

// ---- file-thp: large folios of the file mapped in place -------------------------------------------

void madvise_file(const Text& t, Outcome& out) {
    if ((t.lo - t.lo_offset) % kHuge != 0) {
        std::snprintf(out.error, sizeof out.error,
                      "text address minus file offset is %#llx, not a multiple of 2 MiB, so no PMD can map "
                      "the file's folios: link the program with -Wl,-z,max-page-size=0x200000",
                      static_cast<unsigned long long>(t.lo - t.lo_offset));
        out.action = "error";
        return;
    }
    void* lo = reinterpret_cast<void*>(t.lo);
    if (madvise(lo, t.bytes(), MADV_HUGEPAGE) != 0) return out.fail("madvise(MADV_HUGEPAGE)", errno);
    if (madvise(lo, t.bytes(), MADV_POPULATE_READ) != 0) return out.fail("madvise(MADV_POPULATE_READ)", errno);
    out.action = "madvised";
}

// ---- what was done, and what is there at exit ------------------------------------------------------

struct State {  // captured at load; zero-initialised, so no static constructor of ours runs
    char dir[PATH_MAX];
    char mode[16];
    int pid;
    int image;
    bool acted;
    Text text;
};
State state;

void read_exe(char (&out)[PATH_MAX]) {
    ssize_t n = readlink("/proc/self/exe", out, sizeof out - 1);
    out[n > 0 ? n : 0] = '\0';
}

void write_identity(Record& r, int pid) {
    char exe[PATH_MAX];
    read_exe(exe);
    const Text& t = state.text;
    r.number("pid", pid);
    r.number("image", state.image);
    r.text("exe", exe);
    r.text("mode", state.mode);
    r.hex("text_start", t.start);
    r.hex("text_end", t.end);
    r.hex("interior_start", t.lo);
    r.hex("interior_end", t.hi);
    r.number("head_bytes", static_cast<long long>(t.lo - t.start));
    r.number("tail_bytes", static_cast<long long>(t.end - t.hi));
}

double seconds_since(const timespec& t0) {
    timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return static_cast<double>(t1.tv_sec - t0.tv_sec) + static_cast<double>(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

void write_start(const Outcome& out, double seconds) {
    const Coverage now = measure("/proc/self/smaps", state.text.lo, state.text.hi);
    for (int image = 0; image < 1000; ++image) {  // a pid that execs keeps its number: one file per image
        char name[64];
        if (image == 0) std::snprintf(name, sizeof name, "text-%d.json", state.pid);
        else std::snprintf(name, sizeof name, "text-%d-%d.json", state.pid, image);
        state.image = image;
        Record r;
        write_identity(r, state.pid);
        r.number("segments", state.text.segments);
        r.text("action", out.action);
        r.text("error", out.error[0] ? out.error : nullptr);
        r.number("collapse_errno", out.collapse);
        r.real("seconds", seconds);
        write_coverage(r, now);
        if (publish(state.dir, name, r.finish(), true) != EEXIST) return;
    }
}

void act(Outcome& out) {
    Text& t = state.text;
    t = Text{};
    dl_iterate_phdr(first_object, &t);
    const char* mode = state.mode;
    bool moves = std::strcmp(mode, "thp") == 0 || std::strcmp(mode, "hugetlb") == 0;
    if (!moves && std::strcmp(mode, "off") != 0 && std::strcmp(mode, "file-thp") != 0) {
        std::snprintf(out.error, sizeof out.error, "unknown HB_TEXT_PAGES %s (off, thp, hugetlb, file-thp)", mode);
        out.action = "error";
    } else if (t.segments == 0) {
        std::snprintf(out.error, sizeof out.error, "the main program has no executable PT_LOAD");
        out.action = "error";
    } else if (t.bytes() == 0 || std::strcmp(mode, "off") == 0) {
        out.action = "none";
    } else if (moves && thread_count() != 1) {
        std::snprintf(out.error, sizeof out.error,
                      "%d threads already run at load (a preloaded library started them?): text left alone",
                      thread_count());
        out.action = "error";
    } else if (moves) {
        move_text(t, mode[0] == 'h', out);
    } else {
        madvise_file(t, out);
    }
}

__attribute__((constructor(101), used)) void hb_text_load() {
    const char* mode = std::getenv("HB_TEXT_PAGES");
    if (!mode) return;
    const int saved = errno;
    timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    std::snprintf(state.mode, sizeof state.mode, "%s", mode);
    const char* dir = std::getenv("HB_TEXT_REPORT_DIR");
    if (dir && std::strlen(dir) < sizeof state.dir) std::memcpy(state.dir, dir, std::strlen(dir) + 1);
    state.pid = static_cast<int>(getpid());
    Outcome out;
    act(out);
    state.acted = true;
    if (state.dir[0]) write_start(out, seconds_since(t0));
    errno = saved;
}

}  // namespace

// Writes the exit record now (the destructor calls it at exit(); a program that ends with _exit() may call
// it first). 0 when written. The one exported symbol of the library.
extern "C" __attribute__((visibility("default"))) int hb_text_report_exit(void) {
    if (!state.acted || !state.dir[0]) return -1;
    const int saved = errno;
    const int pid = static_cast<int>(getpid());
    Record r;
    write_identity(r, pid);
    if (pid != state.pid) r.number("forked_from", state.pid);  // a child's text is its parent's
    write_coverage(r, measure("/proc/self/smaps", state.text.lo, state.text.hi));
    char name[64];
    if (pid != state.pid || state.image == 0) std::snprintf(name, sizeof name, "text-exit-%d.json", pid);
    else std::snprintf(name, sizeof name, "text-exit-%d-%d.json", pid, state.image);
    int error = publish(state.dir, name, r.finish(), false);
    errno = saved;
    return error ? -1 : 0;
}

namespace {
__attribute__((destructor(101), used)) void hb_text_exit() { hb_text_report_exit(); }
}  // namespace
