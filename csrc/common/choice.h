// The one way a string parameter becomes its C++ value: a table of (name, value) entries and
// parse_choice(), whose refusal names the parameter, the bad value and every valid name. A workload keeps
// its tables beside its enums; an entry may carry more than name and value (hashlookup's set kinds say
// whether this build has them), find_choice() returns the whole entry for that.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace hb {

template <class Value>
struct Choice {
    const char* name;
    Value value;
};

// The entry of `choices` called `name`; otherwise std::invalid_argument
// "unknown <param> '<name>': <param> must be one of a, b, c".
template <class Entry, size_t N>
const Entry& find_choice(const char* param, const std::string& name, const Entry (&choices)[N]) {
    std::string names;
    for (const Entry& entry : choices) {
        if (name == entry.name) return entry;
        names += (names.empty() ? "" : ", ") + std::string(entry.name);
    }
    throw std::invalid_argument("unknown " + std::string(param) + " '" + name + "': " + param + " must be one of " +
                                names);
}

template <class Entry, size_t N>
auto parse_choice(const char* param, const std::string& name, const Entry (&choices)[N]) {
    return find_choice(param, name, choices).value;
}

}  // namespace hb
