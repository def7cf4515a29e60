// Which rules run: --select / --ignore with codes or code prefixes (Ruff's model).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "linter/diagnostic.hpp"

namespace ddplint {

/// Rule selection by code prefixes. `ALL` selects every rule. The most specific
/// (longest) matching prefix decides; on a tie, ignore wins. An empty `select`
/// means every rule.
class RuleSelection {
 public:
  RuleSelection() = default;
  RuleSelection(std::vector<std::string> select, std::vector<std::string> ignore)
      : select_(std::move(select)), ignore_(std::move(ignore)) {}

  /// True if the rule with `code` runs.
  bool enabled(std::string_view code) const;

  /// Checks every prefix against `rules`. Returns an error message naming the
  /// first prefix that matches no rule, or std::nullopt.
  std::optional<std::string> validate(std::span<const Rule> rules) const;

 private:
  std::vector<std::string> select_, ignore_;
};

/// Splits a comma-separated option value (`DDP1,DDP401`) into trimmed, non-empty items.
std::vector<std::string> split_codes(std::string_view list);

}  // namespace ddplint
