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

/// Which files the enabled rules could fire on, decided from bytes alone; and
/// which rules' own needs hold in a file (lint() asks this for DDP001's `*`;
/// skipping every rule whose needs are absent cost more in searches than it
/// saved: bench/README.md, "Seventh round").
class Prefilter {
 public:
  /// Compiles the `needs` of every rule of `rules` that `selection` enables.
  /// A rule with empty `needs` makes every file pass. A rule needing `*`
  /// (DDP001) passes a file wherever another rule of the catalog, selected or
  /// not, could fire, or the file mentions torch, cuda or nccl (kTrainingScript).
  /// Throws std::invalid_argument for a malformed `needs` (an empty alternative).
  Prefilter(std::span<const Rule> rules, const RuleSelection& selection);

  /// True if some enabled rule could fire on a file whose bytes are `text`:
  /// every group of its `needs` has an alternative occurring in `text`.
  /// Costs at most one scan of `text` per distinct needed string (memmem).
  bool may_fire(std::string_view text) const { return Scan(*this, text).may_fire(); }

  /// True when every file passes (some enabled rule needs nothing).
  bool passes_everything() const { return everything_; }

  /// The questions of one file's bytes, each distinct needed string searched
  /// for at most once whatever is asked. Keeps references to the Prefilter
  /// and to `text`, which must outlive it.
  class Scan {
   public:
    Scan(const Prefilter& prefilter, std::string_view text);
    /// Prefilter::may_fire for this text.
    bool may_fire();
    /// True if rule `index` (its position in the `rules` given to the
    /// Prefilter) could fire on this text: its own `needs` hold, or it needs
    /// nothing; for a rule needing `*`, may_fire() of the whole catalog (as
    /// if every rule were selected). False for a rule the selection disables.
    bool rule_may_fire(std::size_t index);

   private:
    bool holds(const std::vector<std::vector<int>>& needs);
    bool any_holds(const std::vector<int>& order);
    const Prefilter& p_;
    std::string_view text_;
    // per distinct string: 0 not looked for yet, 1 absent, 2 present (on the
    // stack for the catalog's few dozen strings)
    static constexpr std::size_t kOnStack = 128;
    unsigned char on_stack_[kOnStack] = {};
    std::vector<unsigned char> on_heap_;
    unsigned char* seen_;
  };

  /// DDP001's scripts besides those another rule could fire on: the text
  /// mentions torch, cuda or nccl.
  static constexpr std::string_view kTrainingScript = "torch|cuda|nccl";

 private:
  using Group = std::vector<int>;       // indices into strings_: any one
  using Needs = std::vector<Group>;     // every group
  std::vector<std::string> strings_;    // distinct needed strings
  std::vector<Needs> needs_;            // compiled needs: the enabled rules' and, for `*`, the catalog's
  std::vector<int> order_;              // indices into needs_ that may_fire() tries, fewest groups, then strings, first
  std::vector<int> catalog_;            // the same for every rule of the catalog and kTrainingScript (for `*`)
  // per rule of the constructor's span: an index into needs_, or kAlways
  // (needs nothing), kCatalog (`*`), kNever (disabled)
  static constexpr int kAlways = -1, kNever = -2, kCatalog = -3;
  std::vector<int> rule_needs_;
  bool everything_ = false;          // may_fire() passes every file
  bool catalog_everything_ = false;  // a rule of the catalog needs nothing: `*` holds everywhere
};

/// Parses a `needs` declaration (see RuleInfo::needs) into groups of
/// alternatives. "" gives no groups. Throws std::invalid_argument when an
/// alternative is empty (`a||b`, `a;`).
std::vector<std::vector<std::string_view>> parse_needs(std::string_view needs);

}  // namespace ddplint
