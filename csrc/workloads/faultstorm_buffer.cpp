#include "workloads/faultstorm_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <new>
#include <stdexcept>
#include <utility>

#include "common/choice.h"
#include "common/mapping.h"
#include "common/syscalls.h"

namespace hb::faultstorm {
namespace {

constexpr Choice<Backing> kBackings[] = {
    {"vector", Backing::vector},
    {"new", Backing::new_array},
    {"malloc", Backing::malloc},
    {"mmap-private", Backing::mmap_private},
    {"mmap-private-populate", Backing::mmap_private_populate},
    {"mmap-shared", Backing::mmap_shared},
    {"mmap-shared-populate", Backing::mmap_shared_populate},
    {"madv-hugepage", Backing::madv_hugepage},
    {"madv-populate", Backing::madv_populate},
    {"hugetlb", Backing::hugetlb},
};

std::string read_first_line(const char* path) {
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line)) return "unknown";
    return line;
}

// The message of the one failure users hit with hugetlb: the pool is smaller than the buffer.
std::runtime_error hugetlb_pool_error(size_t bytes) {
    const size_t pages_needed = round_up(bytes, kHugePageBytes) / kHugePageBytes;
    return std::runtime_error(
        "backing 'hugetlb' needs the explicit huge page pool: set hugetlb.2MB to >= " +
        std::to_string(pages_needed) + " pages in the YAML system section (free 2 MiB pages now: " +
        read_first_line("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages") + ")");
}

}  // namespace

size_t base_page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

Backing parse_backing(const std::string& name) { return parse_choice("backing", name, kBackings); }

std::unique_ptr<Buffer> Buffer::obtain(Backing backing, size_t bytes) {
    if (bytes == 0) throw std::invalid_argument("buffer_bytes must be > 0");
    std::unique_ptr<Buffer> buffer(new Buffer());
    buffer->backing_ = backing;
    buffer->size_ = bytes;
    buffer->mapping_page_size_ = base_page_size();
    const int anon_private = MAP_PRIVATE | MAP_ANONYMOUS;
    const int anon_shared = MAP_SHARED | MAP_ANONYMOUS;
    switch (backing) {
        case Backing::vector:
        case Backing::new_array:
        case Backing::malloc:
            buffer->allocate_from_allocator();
            break;
        case Backing::mmap_private:
            buffer->map_anonymous(anon_private, "MAP_PRIVATE|MAP_ANONYMOUS", base_page_size());
            break;
        case Backing::mmap_private_populate:
            buffer->map_anonymous(anon_private | MAP_POPULATE, "MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE",
                                  base_page_size());
            break;
        case Backing::mmap_shared:
            buffer->map_anonymous(anon_shared, "MAP_SHARED|MAP_ANONYMOUS", base_page_size());
            break;
        case Backing::mmap_shared_populate:
            buffer->map_anonymous(anon_shared | MAP_POPULATE, "MAP_SHARED|MAP_ANONYMOUS|MAP_POPULATE",
                                  base_page_size());
            break;
        case Backing::madv_hugepage:
            buffer->map_huge_aligned();
            break;
        case Backing::madv_populate:
            buffer->map_anonymous(anon_private, "MAP_PRIVATE|MAP_ANONYMOUS", base_page_size());
            buffer->populate_by_madvise();
            break;
        case Backing::hugetlb:
            buffer->map_anonymous(anon_private | MAP_HUGETLB | MAP_HUGE_2MB,
                                  "MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB|MAP_HUGE_2MB", kHugePageBytes);
            break;
    }
    return buffer;
}

// vector: value-initialisation zero-fills every byte, so for this backing "obtain" includes a
// full write of the buffer (the faults land here, on one thread). new/malloc leave it untouched.
void Buffer::allocate_from_allocator() {
    switch (backing_) {
        case Backing::vector:
            vector_ = std::vector<char>(size_);
            data_ = vector_.data();
            map_flags_ = "std::vector<char>(n) via operator new (allocator's choice), zero-filled";
            break;
        case Backing::new_array:
            array_.reset(new char[size_]);
            data_ = array_.get();
            map_flags_ = "new char[n] via operator new (allocator's choice), untouched";
            break;
        default:
            data_ = static_cast<char*>(std::malloc(size_));
            if (data_ == nullptr) throw std::bad_alloc();
            map_flags_ = "malloc(n) (allocator's choice), untouched";
            break;
    }
}

void Buffer::map_anonymous(int flags, const std::string& flag_text, size_t page_size) {
    const size_t length = round_up(size_, page_size);
    void* address = mmap(nullptr, length, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (address == MAP_FAILED) {
        const int err = errno;
        if (backing_ == Backing::hugetlb && err == ENOMEM) throw hugetlb_pool_error(size_);
        throw std::runtime_error("mmap(" + flag_text + ") of " + std::to_string(length) +
                                 " bytes failed: " + errno_text(err));
    }
    data_ = static_cast<char*>(address);
    mapped_bytes_ = length;
    mapping_page_size_ = page_size;
    map_flags_ = "mmap(" + flag_text + ")";
}

void Buffer::map_huge_aligned() {
    AlignedMapping m = map_2m_aligned(size_, MADV_HUGEPAGE);
    data_ = m.base;
    mapped_bytes_ = m.length;
    map_flags_ = std::move(m.flags);
}

void Buffer::populate_by_madvise() {
    if (madvise(data_, mapped_bytes_, MADV_POPULATE_WRITE) == 0) {
        map_flags_ += "+madvise(MADV_POPULATE_WRITE)";
        return;
    }
    const int err = errno;
    release();
    if (err == EINVAL) throw std::runtime_error("kernel lacks MADV_POPULATE_WRITE (5.14+)");
    throw std::runtime_error("madvise(MADV_POPULATE_WRITE) failed: " + errno_text(err));
}

void Buffer::release() {
    if (mapped_bytes_ > 0 && data_ != nullptr) {
        munmap(data_, mapped_bytes_);
    } else if (backing_ == Backing::malloc) {
        std::free(data_);
    }
    std::vector<char>().swap(vector_);
    array_.reset();
    data_ = nullptr;
    mapped_bytes_ = 0;
}

}  // namespace hb::faultstorm
