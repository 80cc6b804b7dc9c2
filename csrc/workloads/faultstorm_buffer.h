// The big buffer of the faultstorm workload and the ways of obtaining it ("backings"). Each backing is
// one of the answers to "where did the service's buffer come from", so the kernel work it causes —
// page faults at obtain time, at first touch or in the middle of the steady phase — can be compared.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace hb::faultstorm {

enum class Backing {
    vector,                 // std::vector<char>(n): the allocator's path, then value-initialised (a zeroing write)
    new_array,              // new char[n]: the allocator's path, default-initialised (nothing touched)
    malloc,                 // malloc(n): the allocator's path, nothing touched
    mmap_private,           // MAP_PRIVATE|MAP_ANONYMOUS, lazy
    mmap_private_populate,  // ... |MAP_POPULATE
    mmap_shared,            // MAP_SHARED|MAP_ANONYMOUS (shmem-backed), lazy
    mmap_shared_populate,   // ... |MAP_POPULATE; the kernel populates shared mappings with *read* faults
                            // (mm/gup.c: "would not want to dirty them"), so each page's first write
                            // still costs ~0.4 us here, without a fault (measured on this KVM guest)
    madv_hugepage,          // 2 MiB-aligned private anonymous mapping + MADV_HUGEPAGE, lazy
    madv_populate,          // private anonymous mapping + MADV_POPULATE_WRITE (Linux 5.14+)
    hugetlb,                // MAP_HUGETLB from the explicit 2 MiB pool (reserved at mmap time)
};

// Names as the Python API spells them; parse_backing throws std::invalid_argument listing them.
Backing parse_backing(const std::string& name);

// Owns the memory of one backing; release() (or the destructor) gives it back.
class Buffer {
public:
    // Obtains `bytes` bytes; includes the populate / zeroing work the backing implies.
    // Throws std::invalid_argument for bad sizes and std::runtime_error naming the fix when the
    // kernel refuses (no MADV_POPULATE_WRITE, empty hugetlb pool).
    static std::unique_ptr<Buffer> obtain(Backing backing, size_t bytes);

    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { release(); }

    char* data() const { return data_; }
    size_t size() const { return size_; }
    // Length of the kernel mapping (rounded up to its page size); 0 for allocator-owned memory.
    size_t mapped_bytes() const { return mapped_bytes_; }
    // Page size of the mapping: 2 MiB for hugetlb, else the base page (THP may still upgrade it).
    size_t mapping_page_size() const { return mapping_page_size_; }
    Backing backing() const { return backing_; }
    // The flags and madvise calls really used, e.g. "mmap(MAP_PRIVATE|MAP_ANONYMOUS)+madvise(MADV_HUGEPAGE)".
    const std::string& map_flags() const { return map_flags_; }

    void release();

private:
    Buffer() = default;
    void map_anonymous(int flags, const std::string& flag_text, size_t page_size);
    void map_huge_aligned();
    void populate_by_madvise();
    void allocate_from_allocator();

    Backing backing_ = Backing::mmap_private;
    char* data_ = nullptr;
    size_t size_ = 0;
    size_t mapped_bytes_ = 0;
    size_t mapping_page_size_ = 0;
    std::string map_flags_;
    std::vector<char> vector_;  // only for Backing::vector
    std::unique_ptr<char[]> array_;  // only for Backing::new_array
};

size_t base_page_size();

}  // namespace hb::faultstorm
