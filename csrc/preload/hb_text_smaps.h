// The parts libhbtext.so (hb_text.cpp) and hb-textfill (hb_textfill.cpp) share: 2 MiB rounding, a flat JSON
// record in one fixed buffer, /proc lines read without allocation, and the smaps sums over an address range.
// Guest code like both of them: no allocation, no C++ runtime; hidden in the library (CMake's preset).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace hb_text {

constexpr uintptr_t kHuge = uintptr_t{2} << 20;
constexpr uintptr_t kPage = 4096;

inline uintptr_t round_down(uintptr_t x, uintptr_t to) { return x & ~(to - 1); }
inline uintptr_t round_up(uintptr_t x, uintptr_t to) { return round_down(x + to - 1, to); }

// ---- a flat JSON record in one fixed buffer ------------------------------------------------------

class Record {
  public:
    void number(const char* key, long long v) { field(key, "%lld", v); }
    void hex(const char* key, uintptr_t v) { field(key, "%llu", static_cast<unsigned long long>(v)); }
    void real(const char* key, double v) { field(key, "%.6f", v); }
    void text(const char* key, const char* v) {
        if (!v) return field(key, "null");
        name(key);
        append("\"");
        for (const unsigned char* p = reinterpret_cast<const unsigned char*>(v); *p; ++p) {
            if (*p == '"' || *p == '\\') append("\\%c", *p);
            else if (*p < 0x20) append("\\u%04x", *p);
            else append("%c", *p);
        }
        append("\"");
    }
    // The whole object, or nullptr when it did not fit.
    const char* finish() {
        append(used_ ? "}\n" : "{}\n");
        return overflow_ ? nullptr : buf_;
    }

  private:
    template <typename... Args>
    void field(const char* key, const char* format, Args... args) {
        name(key);
        append(format, args...);
    }
    void name(const char* key) { append("%c\"%s\":", used_ ? ',' : '{', key); }
    template <typename... Args>
    void append(const char* format, Args... args) {
        int n = std::snprintf(buf_ + used_, sizeof buf_ - used_, format, args...);
        if (n < 0 || static_cast<size_t>(n) >= sizeof buf_ - used_) overflow_ = true;
        else used_ += static_cast<size_t>(n);
    }

    char buf_[8192];
    size_t used_ = 0;
    bool overflow_ = false;
};

// ---- /proc readers without allocation ------------------------------------------------------------

// Lines of a file through a fixed buffer; a line longer than the buffer is cut (smaps lines are short).
class Lines {
  public:
    explicit Lines(const char* path) : fd_(open(path, O_RDONLY | O_CLOEXEC)) {}
    ~Lines() {
        if (fd_ >= 0) close(fd_);
    }
    Lines(const Lines&) = delete;
    Lines& operator=(const Lines&) = delete;
    bool ok() const { return fd_ >= 0; }
    const char* next() {
        for (;;) {
            if (char* nl = static_cast<char*>(std::memchr(buf_ + pos_, '\n', len_ - pos_))) {
                *nl = '\0';
                const char* line = buf_ + pos_;
                pos_ = static_cast<size_t>(nl - buf_) + 1;
                return line;
            }
            std::memmove(buf_, buf_ + pos_, len_ - pos_);
            len_ -= pos_;
            pos_ = 0;
            if (len_ == sizeof buf_ - 1) len_ = 0;  // an over-long line: drop what we have of it
            ssize_t n = fd_ < 0 ? 0 : read(fd_, buf_ + len_, sizeof buf_ - 1 - len_);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return nullptr;  // a last line without '\n' does not occur in /proc
            len_ += static_cast<size_t>(n);
        }
    }

  private:
    int fd_;
    char buf_[4096];
    size_t len_ = 0, pos_ = 0;
};

extern const char* const kSumFields[5];  // "AnonHugePages", "FilePmdMapped", "Private_Hugetlb", "Shared_Hugetlb", "Rss"
constexpr int kSums = 5;

struct Coverage {
    bool read = false;
    long long bytes[kSums] = {};
    uintptr_t span_start = 0, span_end = 0;  // the VMAs summed
    long long huge() const { return bytes[0] + bytes[1] + bytes[2] + bytes[3]; }
};

// The smaps sums of the VMAs in `smaps_path` that overlap [lo, hi).
Coverage measure(const char* smaps_path, uintptr_t lo, uintptr_t hi);

}  // namespace hb_text
