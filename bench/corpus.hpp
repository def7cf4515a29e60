// The benchmark tools' one way to read a corpus.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "linter/discovery.hpp"
#include "linter/source.hpp"

namespace ddplint::bench {

/// Calls `use(SourceFile&&)` for every *.py under `roots` (as folder discovery
/// finds them, in order), leaving out paths that cannot be listed or read.
template <class F>
void for_each_source(const std::vector<std::string>& roots, F&& use) {
  for (const auto& entry : discover(roots)) {
    if (!entry.error.empty()) continue;
    std::string err;
    auto data = read_file(entry.path, err);
    if (!data) continue;
    use(SourceFile(entry.path, std::move(*data)));
  }
}

}  // namespace ddplint::bench
