"""Write one large, malloc-heavy C++ translation unit for the compiler experiment (experiments/gcc.yaml).

Each function instantiates a few templates, builds strings and containers and branches, so cc1plus spends
its time in the parser, template instantiation and the optimiser — the allocation-heavy parts of a compiler.
The output depends only on --functions and --seed, so every run compiles the same text.
"""

import argparse
import random


def function(i: int, rng: random.Random) -> str:
    a, b, c = (rng.randrange(1, 1000) for _ in range(3))
    return f"""
template <typename T> struct Box{i} {{ T value; std::vector<T> more; }};
std::string f{i}(int n) {{
    std::map<std::string, Box{i}<long>> m;
    std::vector<std::string> names;
    for (int k = 0; k < n + {a}; ++k) {{
        names.push_back(std::to_string(k * {b}) + "x{i}");
        m[names.back()].value = k % {c};
        if (k % 3 == 0) m[names.back()].more.push_back(k);
    }}
    std::sort(names.begin(), names.end());
    auto it = std::find_if(names.begin(), names.end(), [](const std::string& s) {{ return s.size() > {a % 7 + 3}; }});
    return it == names.end() ? std::string() : *it + std::to_string(m.size());
}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--functions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    parts = ["#include <algorithm>\n#include <map>\n#include <string>\n#include <vector>\n"]
    parts += [function(i, rng) for i in range(args.functions)]
    parts.append("int main() { return int(" + " + ".join(f"f{i}(1).size()" for i in range(min(args.functions, 50)))
                 + "); }\n")
    with open(args.out, "w") as f:
        f.write("".join(parts))


if __name__ == "__main__":
    main()
