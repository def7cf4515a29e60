// The built-in rules, sorted by code.
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
