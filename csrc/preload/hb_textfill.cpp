// hb-textfill FILE | hb-textfill --range OFFSET LENGTH FILE
//
// Fills the page cache of FILE's text (its largest executable PT_LOAD, 2 MiB-aligned interior in file
// offsets) or of the given range with 2 MiB folios where the kernel can: maps it at a 2 MiB-aligned address,
// MADV_HUGEPAGE, MADV_POPULATE_READ. Run after the cache was evicted and before the program is exec'd:
// the program's own mapping then finds large folios to map with PMDs. Prints one JSON object: file, offset,
// bytes, congruent (p_vaddr - p_offset a multiple of 2 MiB), load_aligned (the kernel will load it at a
// 2 MiB-aligned address: ET_EXEC, or p_align >= 2 MiB), FilePmdMapped and Rss of our mapping, error.
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hb_text_smaps.h"

using namespace hb_text;  // the parts shared with libhbtext.so

namespace {

struct Range {
    uint64_t offset = 0, bytes = 0;
    bool congruent = true, load_aligned = true;
    char error[256] = {};
};

bool read_at(int fd, void* out, size_t size, uint64_t at) {
    return pread(fd, out, size, static_cast<off_t>(at)) == static_cast<ssize_t>(size);
}

Range text_range(int fd) {
    Range r;
    Elf64_Ehdr eh;
    if (!read_at(fd, &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64) {
        std::snprintf(r.error, sizeof r.error, "not a 64-bit ELF file");
        return r;
    }
    uint64_t best = 0, align = 0;
    for (int i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (!read_at(fd, &ph, sizeof ph, eh.e_phoff + static_cast<uint64_t>(i) * eh.e_phentsize)) break;
        if (ph.p_type == PT_LOAD && ph.p_align > align) align = ph.p_align;
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || ph.p_filesz <= best) continue;
        best = ph.p_filesz;
        uint64_t lo = round_up(ph.p_offset, kHuge), hi = round_down(ph.p_offset + ph.p_filesz, kHuge);
        r.offset = lo;
        r.bytes = hi > lo ? hi - lo : 0;
        r.congruent = (ph.p_vaddr - ph.p_offset) % kHuge == 0;
    }
    r.load_aligned = r.congruent && (eh.e_type == ET_EXEC || align >= kHuge);
    if (!best) std::snprintf(r.error, sizeof r.error, "no executable PT_LOAD");
    return r;
}

// Maps [offset, offset + bytes) of fd at a 2 MiB-aligned address and populates it with MADV_HUGEPAGE.
Coverage fill(int fd, Range& r) {
    void* wide = mmap(nullptr, r.bytes + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    uintptr_t at = round_up(reinterpret_cast<uintptr_t>(wide), kHuge);
    void* mapped = wide == MAP_FAILED ? MAP_FAILED
                                      : mmap(reinterpret_cast<void*>(at), r.bytes, PROT_READ, MAP_PRIVATE | MAP_FIXED,
                                             fd, static_cast<off_t>(r.offset));
    if (mapped == MAP_FAILED) {
        std::snprintf(r.error, sizeof r.error, "mmap: %s", strerror(errno));
    } else if (madvise(mapped, r.bytes, MADV_HUGEPAGE) != 0) {
        std::snprintf(r.error, sizeof r.error, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
    } else if (madvise(mapped, r.bytes, MADV_POPULATE_READ) != 0) {
        std::snprintf(r.error, sizeof r.error, "madvise(MADV_POPULATE_READ): %s", strerror(errno));
    }
    return mapped == MAP_FAILED ? Coverage{} : measure("/proc/self/smaps", at, at + r.bytes);
}

}  // namespace

int main(int argc, char** argv) {
    bool ranged = argc == 5 && std::strcmp(argv[1], "--range") == 0;
    if (argc != 2 && !ranged) {
        std::fprintf(stderr, "usage: hb-textfill FILE | hb-textfill --range OFFSET LENGTH FILE\n");
        return 2;
    }
    const char* path = argv[argc - 1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Range r;
    if (fd < 0) std::snprintf(r.error, sizeof r.error, "open: %s", strerror(errno));
    else if (ranged) r.offset = std::strtoull(argv[2], nullptr, 0), r.bytes = std::strtoull(argv[3], nullptr, 0);
    else r = text_range(fd);
    if (!r.error[0] && r.offset % kHuge != 0) std::snprintf(r.error, sizeof r.error, "offset not 2 MiB-aligned");
    Coverage c = !r.error[0] && r.bytes ? fill(fd, r) : Coverage{};
    Record out;
    out.text("file", path);
    out.hex("offset", r.offset);
    out.hex("bytes", r.bytes);
    out.number("congruent", r.congruent);
    out.number("load_aligned", r.load_aligned);
    out.number("FilePmdMapped", c.bytes[1]);
    out.number("Rss", c.bytes[4]);
    out.text("error", r.error[0] ? r.error : nullptr);
    std::fputs(out.finish(), stdout);
    return r.error[0] ? 1 : 0;
}
