// smaps sums over an address range, for libhbtext.so and hb-textfill (see hb_text_smaps.h).
#include "hb_text_smaps.h"

#include <cstdlib>

namespace hb_text {

const char* const kSumFields[5] = {"AnonHugePages", "FilePmdMapped", "Private_Hugetlb", "Shared_Hugetlb", "Rss"};

namespace {

// "7f00-7f20 r-xp ..." -> true with the range
bool vma_header(const char* line, uintptr_t& start, uintptr_t& end) {
    char* after = nullptr;
    start = std::strtoull(line, &after, 16);
    if (after == line || *after != '-') return false;
    const char* second = after + 1;
    end = std::strtoull(second, &after, 16);
    return after != second && *after == ' ';
}

void add_field(const char* line, Coverage& c) {
    for (int i = 0; i < kSums; ++i) {
        size_t len = std::strlen(kSumFields[i]);
        if (std::strncmp(line, kSumFields[i], len) == 0 && line[len] == ':')
            c.bytes[i] += std::strtoll(line + len + 1, nullptr, 10) * 1024;
    }
}

}  // namespace

// The smaps sums of the VMAs in `smaps_path` that overlap [lo, hi).
Coverage measure(const char* smaps_path, uintptr_t lo, uintptr_t hi) {
    Coverage c;
    Lines lines(smaps_path);
    c.read = lines.ok();
    bool inside = false;
    while (const char* line = lines.next()) {
        uintptr_t start, end;
        if (vma_header(line, start, end)) {
            inside = start < hi && lo < end;
            if (inside && !c.span_end) c.span_start = start;
            if (inside) c.span_end = end;
        } else if (inside) {
            add_field(line, c);
        }
    }
    return c;
}

}  // namespace hb_text
