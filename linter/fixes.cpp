#include "linter/fixes.hpp"

#include <algorithm>

namespace ddplint {

std::vector<Edit> applicable_edits(std::span<const Diagnostic> diagnostics, bool include_unsafe) {
  std::vector<const Fix*> fixes;
  for (const Diagnostic& d : diagnostics) {
    if (!d.fix || d.fix->edits.empty()) continue;
    if (d.fix->applicability == Fix::Applicability::Unsafe && !include_unsafe) continue;
    fixes.push_back(&*d.fix);
  }
  auto first = [](const Fix* f) {
    std::uint32_t m = f->edits.front().start;
    for (const Edit& e : f->edits) m = std::min(m, e.start);
    return m;
  };
  std::stable_sort(fixes.begin(), fixes.end(), [&](const Fix* a, const Fix* b) { return first(a) < first(b); });
  std::vector<Edit> taken;
  for (const Fix* fix : fixes) {
    std::vector<Edit> mine = fix->edits;
    std::sort(mine.begin(), mine.end(), [](const Edit& a, const Edit& b) { return a.start < b.start; });
    bool clash = false;
    for (std::size_t i = 1; i < mine.size(); ++i) clash |= mine[i].start < mine[i - 1].end;
    for (const Edit& e : mine) {
      for (const Edit& t : taken) {
        // overlapping or touching ranges (an insertion at the other's boundary included)
        if (e.start <= t.end && t.start <= e.end) clash = true;
      }
    }
    if (clash) continue;
    taken.insert(taken.end(), mine.begin(), mine.end());
  }
  std::sort(taken.begin(), taken.end(), [](const Edit& a, const Edit& b) { return a.start < b.start; });
  return taken;
}

std::string apply_edits(std::string_view text, std::span<const Edit> edits) {
  std::string out;
  out.reserve(text.size() + 64);
  std::uint32_t at = 0;
  for (const Edit& e : edits) {
    if (e.start < at || e.end < e.start || e.end > text.size()) continue;  // not sorted or out of range: skipped
    out.append(text.substr(at, e.start - at));
    out.append(e.replacement);
    at = e.end;
  }
  out.append(text.substr(std::min<std::size_t>(at, text.size())));
  return out;
}

}  // namespace ddplint
