// hashlookup's keys and their lookup order (hashsets uses both too): random letter strings generated on
// every core the process may use, and the seeded shuffle whose first `lookups` keys are the sample the
// timed phase looks up. Out of the lookup loop's translation unit, like hashlookup_sets.cpp.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "common/checks.h"
#include "common/rng.h"
#include "workloads/hashlookup.h"

namespace hb::hashlookup {
namespace {

constexpr uint64_t kShuffleStream = 2;  // hashlookup.cpp's streams 1-3; each key block has two of its own
constexpr uint64_t kBlockStreams = 1ull << 32;

// Keys come in blocks of this many; block b draws its lengths and its letters from streams of its own,
// so a key depends on the seed and its index only, never on how many threads generate the blocks.
constexpr uint64_t kKeysPerBlock = 1 << 16;

uint64_t length_stream(uint64_t block) { return kBlockStreams + 2 * block; }
uint64_t letter_stream(uint64_t block) { return kBlockStreams + 2 * block + 1; }

// Letters a-z/A-Z, eight per 64-bit draw: each is the high part of (state * 52), the low part carries
// on. 52^8 < 2^46, so the bias of any letter is below 2^-18; no rejection branch (the old 6-bit
// rejection sampler mispredicted on one letter in five and made 60M keys take over 10 s).
class LetterSource {
public:
    explicit LetterSource(Rng& rng) : rng_(rng) {}
    char next() {
        static constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        if (left_ == 0) {
            state_ = rng_.next();
            left_ = 8;
        }
        --left_;
        const __uint128_t product = static_cast<__uint128_t>(state_) * 52;
        state_ = static_cast<uint64_t>(product);
        return kLetters[static_cast<unsigned>(product >> 64)];
    }

private:
    Rng& rng_;
    uint64_t state_ = 0;
    int left_ = 0;
};

void fill_letters(std::vector<std::string>& keys, uint64_t seed, uint64_t block) {
    Rng rng(seed, letter_stream(block));
    LetterSource letters(rng);
    const size_t end = std::min<size_t>(keys.size(), (block + 1) * kKeysPerBlock);
    for (size_t i = block * kKeysPerBlock; i < end; ++i)
        for (char& c : keys[i]) c = letters.next();
}

// Every block's letters, on `threads` threads (the caller's one of them) taking blocks in turn. A thread
// that cannot be started leaves its share to the others; the keys are the same either way.
void fill_all_letters(std::vector<std::string>& keys, uint64_t seed, unsigned threads) {
    const uint64_t blocks = (keys.size() + kKeysPerBlock - 1) / kKeysPerBlock;
    std::atomic<uint64_t> next{0};
    auto work = [&] {
        for (uint64_t b = next.fetch_add(1); b < blocks; b = next.fetch_add(1)) fill_letters(keys, seed, b);
    };
    std::vector<std::thread> helpers;
    const uint64_t wanted = std::min<uint64_t>(threads, blocks);
    try {
        for (uint64_t t = 1; t < wanted; ++t) helpers.emplace_back(work);
    } catch (const std::system_error&) {
        // fewer helpers: the started ones and this thread take every block
    }
    work();
    for (auto& helper : helpers) helper.join();
}

}  // namespace

unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
    return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

// The strings are constructed (and so allocated) on the calling thread, one after another, as a
// single-threaded program would: the allocator under test places them in that order, whichever threads
// then write their letters.
std::vector<std::string> generate_keys(uint64_t count, uint64_t seed, int64_t key_min, int64_t key_max,
                                       unsigned threads) {
    require(key_min >= 0 && key_min <= key_max, "key lengths need 0 <= key_min <= key_max");
    std::vector<std::string> keys;
    keys.reserve(count);
    for (uint64_t block = 0; block * kKeysPerBlock < count; ++block) {
        Rng lengths(seed, length_stream(block));
        const uint64_t end = std::min(count, (block + 1) * kKeysPerBlock);
        for (uint64_t i = block * kKeysPerBlock; i < end; ++i)
            keys.emplace_back(static_cast<size_t>(lengths.between(key_min, key_max)), '\0');
    }
    fill_all_letters(keys, seed, threads == 0 ? usable_cores() : threads);
    return keys;
}

// Forward Fisher-Yates: step i swaps a uniform pick of positions [i, n) into position i, so after `prefix`
// steps the first `prefix` keys are a uniform random sample of all the keys without replacement, in random
// order, and the rest are not touched (prefix >= n - 1: a uniform shuffle of all of them).
void shuffle_keys(std::vector<std::string>& keys, uint64_t seed, uint64_t prefix) {
    Rng rng(seed, kShuffleStream);
    const size_t n = keys.size();
    const size_t steps = n < 2 ? 0 : std::min<size_t>(prefix, n - 1);
    for (size_t i = 0; i < steps; ++i) std::swap(keys[i], keys[i + rng.bounded(n - i)]);
}

}  // namespace hb::hashlookup
