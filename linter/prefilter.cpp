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
    needs_.push_back(std::move(n));
    return static_cast<int>(needs_.size() - 1);
  };
  // each rule's own needs, compiled whether or not it is selected (for `*`)
  std::vector<int> compiled(rules.size(), kAlways);
  bool catalog_wide = false;  // an enabled rule needs "*"
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].check == nullptr && rules[i].check_noqa == nullptr) {  // a launch-script rule: never fires on Python (launch scripts are not prefiltered)
      compiled[i] = kNever;
      rule_needs_.push_back(kNever);
      continue;
    }
    std::string_view needs = rules[i].info.needs;
    bool enabled = selection.enabled(rules[i].info);
    if (needs == "*") {
      compiled[i] = kCatalog;
      catalog_wide = catalog_wide || enabled;
    } else if (needs.empty()) {
      catalog_everything_ = true;
      everything_ = everything_ || enabled;
    } else {
      compiled[i] = compile(needs);
      if (enabled) order_.push_back(compiled[i]);
    }
    rule_needs_.push_back(enabled ? compiled[i] : kNever);
  }
  for (int c : compiled)
    if (c >= 0) catalog_.push_back(c);
  catalog_.push_back(compile(kTrainingScript));
  if (catalog_wide) {
    order_ = catalog_;  // every enabled rule's needs are among the catalog's
    everything_ = everything_ || catalog_everything_;
  }
  // may_fire() stops at the first rule whose needs are all present: rules
  // needing fewer groups first, then fewer strings (`torch|cuda|nccl` settles
  // a torch script with one search that ends at its import, instead of full
  // scans for the absent second group of `torch;DataLoader` and the like). The
  // answer does not depend on the order.
  auto cost = [&](int n) {
    std::size_t k = 0;
    for (const Group& g : needs_[n]) k += g.size();
    return std::pair(needs_[n].size(), k);
  };
  for (auto* order : {&order_, &catalog_})
    std::stable_sort(order->begin(), order->end(), [&](int a, int b) { return cost(a) < cost(b); });
}

Prefilter::Scan::Scan(const Prefilter& prefilter, std::string_view text) : p_(prefilter), text_(text) {
  if (p_.strings_.size() > kOnStack) on_heap_.assign(p_.strings_.size(), 0);
  seen_ = on_heap_.empty() ? on_stack_ : on_heap_.data();
}

bool Prefilter::Scan::holds(const Needs& needs) {
  auto present = [&](int i) {
    if (seen_[i] == 0) seen_[i] = contains_text(text_, p_.strings_[i]) ? 2 : 1;
    return seen_[i] == 2;
  };
  for (const Group& group : needs)
    if (!std::any_of(group.begin(), group.end(), present)) return false;
  return true;
}

bool Prefilter::Scan::any_holds(const std::vector<int>& order) {
  for (int n : order)
    if (holds(p_.needs_[n])) return true;
  return false;
}

bool Prefilter::Scan::may_fire() { return p_.everything_ || any_holds(p_.order_); }

bool Prefilter::Scan::rule_may_fire(std::size_t index) {
  int n = p_.rule_needs_[index];
  if (n >= 0) return holds(p_.needs_[n]);
  if (n == kCatalog) return p_.catalog_everything_ || any_holds(p_.catalog_);
  return n == kAlways;
}

}  // namespace ddplint
