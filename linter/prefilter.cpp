#include "linter/prefilter.hpp"

#include "linter/source.hpp"


#include <algorithm>
#include <stdexcept>

namespace ddplint {

std::vector<std::vector<std::string_view>> parse_needs(std::string_view needs) {
  std::vector<std::vector<std::string_view>> groups;
  if (needs.empty()) return groups;
  auto split = [](std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    for (;;) {
      std::size_t at = s.find(sep);
      parts.push_back(s.substr(0, at));
      if (at == std::string_view::npos) return parts;
      s.remove_prefix(at + 1);
    }
  };
  for (std::string_view group : split(needs, ';')) {
    std::vector<std::string_view> alternatives = split(group, '|');
    for (std::string_view a : alternatives) {
      if (a.empty()) throw std::invalid_argument("empty alternative in needs \"" + std::string(needs) + "\"");
    }
    groups.push_back(std::move(alternatives));
  }
  return groups;
}

Prefilter::Prefilter(std::span<const Rule> rules, const RuleSelection& selection) {
  auto intern = [&](std::string_view s) {
    auto it = std::find(strings_.begin(), strings_.end(), s);
    if (it != strings_.end()) return static_cast<int>(it - strings_.begin());
    strings_.emplace_back(s);
    return static_cast<int>(strings_.size() - 1);
  };
  auto compile = [&](std::string_view needs) {
    Needs n;
    for (const auto& group : parse_needs(needs)) {
      Group g;
      for (std::string_view a : group) g.push_back(intern(a));
      n.push_back(std::move(g));
    }
    rules_.push_back(std::move(n));
  };
  bool catalog_wide = false;  // an enabled rule needs "*"
  for (const Rule& rule : rules) {
    if (!selection.enabled(rule.info.code)) continue;
    if (rule.info.needs == "*") {
      catalog_wide = true;
    } else if (rule.info.needs.empty()) {
      everything_ = true;
    } else {
      compile(rule.info.needs);
    }
  }
  if (catalog_wide) {
    for (const Rule& rule : rules) {
      if (rule.info.needs == "*") continue;
      if (rule.info.needs.empty()) everything_ = true;
      else compile(rule.info.needs);
    }
  }
  // may_fire() stops at the first rule whose needs are all present: rules
  // needing fewer strings first (one needing only `torch` settles a torch
  // script with one search that ends at its import, instead of full scans for
  // absent strings of rules listed before it). The answer does not depend on
  // the order.
  std::stable_sort(rules_.begin(), rules_.end(), [](const Needs& a, const Needs& b) {
    auto strings = [](const Needs& n) {
      std::size_t k = 0;
      for (const Group& g : n) k += g.size();
      return k;
    };
    return strings(a) < strings(b);
  });
}

bool Prefilter::may_fire(std::string_view text) const {
  if (everything_) return true;
  // per distinct string: 0 not looked for yet, 1 absent, 2 present (on the
  // stack for the catalog's few dozen strings)
  constexpr std::size_t kOnStack = 256;
  unsigned char on_stack[kOnStack] = {};
  std::vector<unsigned char> on_heap(strings_.size() > kOnStack ? strings_.size() : 0, 0);
  unsigned char* seen = strings_.size() > kOnStack ? on_heap.data() : on_stack;
  auto present = [&](int i) {
    if (seen[i] == 0) {
      const std::string& s = strings_[i];
      seen[i] = contains_text(text, s) ? 2 : 1;
    }
    return seen[i] == 2;
  };
  for (const Needs& needs : rules_) {
    bool all = true;
    for (const Group& group : needs) {
      if (!std::any_of(group.begin(), group.end(), present)) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
}

}  // namespace ddplint
