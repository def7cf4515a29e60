#include "linter/selection.hpp"

#include <algorithm>
#include <cctype>

namespace ddplint {

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Info: return "info";
  }
  return "warning";
}

namespace {
// Length of the longest item of `prefixes` that matches `code` (ALL counts as 0), or -1.
int longest_match(const std::vector<std::string>& prefixes, std::string_view code) {
  int best = -1;
  for (const auto& p : prefixes) {
    if (p == "ALL") best = std::max(best, 0);
    else if (code.substr(0, p.size()) == p) best = std::max(best, static_cast<int>(p.size()));
  }
  return best;
}
}  // namespace

bool RuleSelection::enabled(std::string_view code) const {
  int sel = select_.empty() ? 0 : longest_match(select_, code);
  if (sel < 0) return false;
  int ign = longest_match(ignore_, code);
  return ign < sel || ign < 0 ? true : false;
}

std::optional<std::string> RuleSelection::validate(std::span<const Rule> rules) const {
  for (const auto* list : {&select_, &ignore_}) {
    for (const auto& p : *list) {
      if (p == "ALL") continue;
      bool any = std::any_of(rules.begin(), rules.end(),
                             [&](const Rule& r) { return r.info.code.substr(0, p.size()) == p; });
      if (!any) return "unknown rule code or prefix '" + p + "' (see --list-rules)";
    }
  }
  return std::nullopt;
}

std::vector<std::string> split_codes(std::string_view list) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= list.size()) {
    std::size_t j = list.find(',', i);
    if (j == std::string_view::npos) j = list.size();
    std::string item(list.substr(i, j - i));
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    item.erase(item.begin(), std::find_if(item.begin(), item.end(), not_space));
    item.erase(std::find_if(item.rbegin(), item.rend(), not_space).base(), item.end());
    if (!item.empty()) out.push_back(std::move(item));
    i = j + 1;
  }
  return out;
}

}  // namespace ddplint
