// The built-in rules, sorted by code.
//
// To add a rule, add rules/DDPnnn_<name>.cpp (defining
// `extern const Rule kRuleDDPnnn{.info = {.code = "DDPnnn", .name = "<name>"
// with `_` as `-`, ...}, .check = &check}`) and rules/DDPnnn_<name>.md (its
// documentation); nothing else to edit: the build lists the rules from the
// file names (CMakeLists.txt, `# --- rules ---`) and registry.cpp expands that list.
#pragma once

#include <span>

#include "linter/diagnostic.hpp"

namespace ddplint::rules {

/// Every built-in rule, sorted by code, each with its Markdown documentation
/// (from rules/<CODE>_*.md) attached.
std::span<const Rule> all();

/// The rule with `code`, or nullptr.
const Rule* find(std::string_view code);

}  // namespace ddplint::rules
