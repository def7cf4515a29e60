// Private helpers shared by the parts of the semantic model (linter/model/*.cpp):
// the recursion bound, two string tests, and the sorted name indexes. Not for rules.
#pragma once

#include "linter/semantic_model.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace ddplint::model_detail {

inline constexpr int kMaxDepth = 24;  // bound on recursion through bindings and nesting

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// `b op' a` written as `a op b`: the mirrored comparison (`0 < rank` is `rank > 0`).
inline std::string_view mirrored(std::string_view op) {
  if (op == "<") return ">";
  if (op == "<=") return ">=";
  if (op == ">") return "<";
  if (op == ">=") return "<=";
  return op;
}

using Entry = CallRange::Entry;

// A name index: (name_hash, position) entries sorted by hash, then name (only
// where hashes meet), then position, so that the entries of one name are
// contiguous and in file order. `name(position)` gives an entry's name.
template <typename Name>
void sort_index(std::span<Entry> table, Name name) {
  std::sort(table.begin(), table.end(), [&](const Entry& a, const Entry& b) {
    if (a.first != b.first) return a.first < b.first;
    std::string_view na = name(a.second), nb = name(b.second);
    if (na != nb) return na < nb;
    return a.second < b.second;
  });
}

// The entries of `key` in an index sorted by sort_index: [first, last).
template <typename Name>
std::pair<const Entry*, const Entry*> index_run(std::span<const Entry> table, std::string_view key, Name name) {
  const std::uint64_t h = name_hash(key);
  const Entry* begin = table.data();
  const Entry* end = begin + table.size();
  const Entry* first = std::lower_bound(begin, end, h, [](const Entry& e, std::uint64_t v) { return e.first < v; });
  while (first != end && first->first == h && name(first->second) != key) ++first;  // (a collision)
  const Entry* last = first;
  for (int step = 0; step < 16; ++step, ++last) {  // most runs are short: walked
    if (last == end || last->first != h || name(last->second) != key) return {first, last};
  }
  // a long run (a name bound or called thousands of times): its end by binary
  // search, not a pass over all of it for each lookup
  last = std::upper_bound(last, end, key, [&](std::string_view k, const Entry& e) {
    return e.first != h || k < name(e.second);  // within the hash, entries are sorted by name
  });
  return {first, last};
}

}  // namespace ddplint::model_detail
