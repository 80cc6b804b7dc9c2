// The names of hashlookup's set kinds and hashes (see hashlookup_sets.h). Out of line on purpose: the
// parse code then stays out of the translation units of the timed lookup loops, whose compiled code
// (which calls GCC inlines) it would otherwise shift.
#include "workloads/hashlookup_sets.h"

#include "common/choice.h"

namespace hb::hashlookup {
namespace {

// Every kind and hash the registry lists, with the Debian package that provides it (for the refusal below).
template <class Value>
struct PackagedChoice {
    const char* name;
    Value value;
    const char* package;
};
constexpr PackagedChoice<SetKind> kSetKinds[] = {
    {"flat", SetKind::flat, ""},
    {"node", SetKind::node, ""},
    {"robin", SetKind::robin, "robin-map-dev"},
    {"absl", SetKind::absl, "libabsl-dev"},
    {"boost", SetKind::boost, "libboost1.81-dev"},
};
constexpr PackagedChoice<HashKind> kHashes[] = {{"own", HashKind::own, ""}, {"xxh3", HashKind::xxh3, "libxxhash-dev"}};

// The value of `name` in `choices`; throws std::invalid_argument naming the valid names, or, for one
// missing from `built` (what CMake found: HB_SET_KINDS or HB_HASHES, "a,b,c"), the package that adds it.
template <class Value, size_t N>
Value parse_built(const char* param, const std::string& name, const PackagedChoice<Value> (&choices)[N],
                  const char* built) {
    const auto& entry = find_choice(param, name, choices);
    if ((std::string(",") + built + ",").find("," + name + ",") == std::string::npos)
        throw std::invalid_argument(std::string(param) + " '" + name +
                                    "' is not in this build of hugebench._core: apt-get install " + entry.package +
                                    ", then rebuild (pip install --no-build-isolation .)");
    return entry.value;
}

}  // namespace

SetKind parse_set_kind(const std::string& name) { return parse_built("set_kind", name, kSetKinds, HB_SET_KINDS); }

HashKind parse_hash(const std::string& name) { return parse_built("hash", name, kHashes, HB_HASHES); }

}  // namespace hb::hashlookup
