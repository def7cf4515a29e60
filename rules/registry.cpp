// The rule registry. A rule is added with two files and nothing else to edit:
// rules/DDPnnn_<name>.cpp, which defines `extern const Rule kRuleDDPnnn{...}`
// (code "DDPnnn", name <name> with `_` written `-`), and rules/DDPnnn_<name>.md,
// its documentation (cmake/embed_rule_docs.cmake embeds it; build() attaches
// it). The build derives the list of rules from the .cpp file names.
#include "rules/registry.hpp"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

namespace ddplint::rules {

extern const std::pair<std::string_view, std::string_view> kRuleDocs[];
extern const std::size_t kRuleDocCount;

// The built-in rules: one line DDPLINT_RULE(DDPnnn) per rules/DDPnnn_*.cpp,
// sorted by code, written by the build (the `# --- rules ---` section of
// CMakeLists.txt) into <build>/generated/rule_list.inc. Expanded twice: once
// to declare each rule's object, once to list them.
#define DDPLINT_RULE(code) extern const Rule kRule##code;
#include "rule_list.inc"
#undef DDPLINT_RULE

namespace {
std::vector<Rule> build() {
  std::vector<Rule> rules = {
#define DDPLINT_RULE(code) kRule##code,
#include "rule_list.inc"
#undef DDPLINT_RULE
  };
  for (Rule& r : rules) {
    for (std::size_t i = 0; i < kRuleDocCount; ++i)
      if (kRuleDocs[i].first == r.info.code) r.info.docs = kRuleDocs[i].second;
  }
  std::sort(rules.begin(), rules.end(), [](const Rule& a, const Rule& b) { return a.info.code < b.info.code; });
  return rules;
}
}  // namespace

std::span<const Rule> all() {
  static const std::vector<Rule> rules = build();
  return rules;
}

const Rule* find(std::string_view code) {
  for (const Rule& r : all())
    if (r.info.code == code) return &r;
  return nullptr;
}

}  // namespace ddplint::rules
