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
// `exact`: only an item equal to the code matches (an opt-in rule's select).
int longest_match(const std::vector<std::string>& prefixes, std::string_view code, bool exact = false) {
  int best = -1;
  for (const auto& p : prefixes) {
    if (exact) {
      if (p == code) best = static_cast<int>(p.size());
    } else if (p == "ALL") best = std::max(best, 0);
    else if (code.substr(0, p.size()) == p) best = std::max(best, static_cast<int>(p.size()));
  }
  return best;
}
}  // namespace

RuleSelection& RuleSelection::add_layer(std::vector<std::string> select, std::vector<std::string> extend_select,
                                        std::vector<std::string> ignore, bool select_given) {
  bool replaces = select_given || !select.empty();
  layers_.push_back(Layer{std::move(select), std::move(extend_select), std::move(ignore), replaces});
  return *this;
}

bool RuleSelection::enabled(std::string_view code, bool opt_in) const {
  bool on = !opt_in;
  for (const Layer& layer : layers_) {
    int sel = std::max(longest_match(layer.select, code, opt_in), longest_match(layer.extend_select, code, opt_in));
    int ign = longest_match(layer.ignore, code);
    if (sel < 0 && ign < 0) on = layer.replaces ? false : on;
    else on = ign < sel;
  }
  return on;
}

std::optional<std::string> unknown_code(const std::vector<std::string>& prefixes, std::span<const Rule> rules) {
  for (const auto& p : prefixes) {
    if (p.empty()) return p;  // "" would match every rule: almost certainly a mistake
    if (p == "ALL") continue;
    bool any = std::any_of(rules.begin(), rules.end(),
                           [&](const Rule& r) { return r.info.code.substr(0, p.size()) == p; });
    if (!any) return p;
  }
  return std::nullopt;
}

std::optional<std::string> RuleSelection::validate(std::span<const Rule> rules) const {
  for (const Layer& layer : layers_)
    for (const auto* list : {&layer.select, &layer.extend_select, &layer.ignore})
      if (auto bad = unknown_code(*list, rules)) return "unknown rule code or prefix '" + *bad + "' (see --list-rules)";
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
