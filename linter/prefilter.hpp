// The prefilter: a byte scan that tells, before parsing, that no enabled rule
// could fire on a file, so that the file is not parsed at all. Sound by
// construction when each rule's RuleInfo::needs is: a rule whose needed text
// is absent cannot report anything (tests/unit/prefilter_test.cpp and
// bench/prefilter_soundness check this on the fixtures and on both benchmark
// corpora: identical findings with and without the prefilter).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/selection.hpp"

namespace ddplint {

/// Which files the enabled rules could fire on, decided from bytes alone.
class Prefilter {
 public:
  /// Compiles the `needs` of every rule of `rules` that `selection` enables.
  /// A rule with empty `needs` makes every file pass. Throws
  /// std::invalid_argument for a malformed `needs` (an empty alternative).
  Prefilter(std::span<const Rule> rules, const RuleSelection& selection);

  /// True if some enabled rule could fire on a file whose bytes are `text`:
  /// every group of its `needs` has an alternative occurring in `text`.
  /// Costs at most one scan of `text` per distinct needed string (memmem).
  bool may_fire(std::string_view text) const;

  /// True when every file passes (some enabled rule needs nothing).
  bool passes_everything() const { return everything_; }

 private:
  using Group = std::vector<int>;       // indices into strings_: any one
  using Needs = std::vector<Group>;     // every group
  std::vector<std::string> strings_;    // distinct needed strings
  std::vector<Needs> rules_;            // one per enabled rule with needs
  bool everything_ = false;
};

/// Parses a `needs` declaration (see RuleInfo::needs) into groups of
/// alternatives. "" gives no groups. Throws std::invalid_argument when an
/// alternative is empty (`a||b`, `a;`).
std::vector<std::vector<std::string_view>> parse_needs(std::string_view needs);

}  // namespace ddplint
