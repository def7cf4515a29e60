// Which rules run: --select / --ignore with codes or code prefixes (Ruff's model).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "linter/diagnostic.hpp"

namespace ddplint {

/// Rule selection by code prefixes, in layers (Ruff's model): a configuration
/// file, then the command line or editor settings, then per-file ignores.
/// With no layer every rule runs. In each layer:
/// - a non-empty `select` replaces what the layers below enabled;
/// - `extend_select` adds to it, `ignore` removes from it;
/// - for each rule the most specific (longest) matching prefix of the layer
///   decides, and on a tie ignore wins; `ALL` matches every rule with length 0;
/// - a rule the layer does not mention keeps its state (or is off, when the
///   layer has a `select`).
/// An opt-in rule (RuleInfo::opt_in) starts off, and only an item equal to its
/// code in `select` or `extend_select` turns it on.
class RuleSelection {
 public:
  RuleSelection() = default;
  /// One layer: `select` (empty: every rule) minus `ignore`.
  RuleSelection(std::vector<std::string> select, std::vector<std::string> ignore) {
    add_layer(std::move(select), {}, std::move(ignore));
  }

  /// Adds a layer on top of the existing ones. `select_given` makes an empty
  /// `select` replace too (a configuration's `select = []` selects nothing);
  /// by default only a non-empty `select` replaces.
  RuleSelection& add_layer(std::vector<std::string> select, std::vector<std::string> extend_select,
                           std::vector<std::string> ignore, bool select_given = false);

  /// True if the rule with `code` runs; `opt_in`: the rule is off unless a
  /// layer selects its exact code (RuleInfo::opt_in).
  bool enabled(std::string_view code, bool opt_in = false) const;
  /// True if `rule` runs: its code and opt-in flag, and its severity against
  /// the least severity required (require_severity).
  bool enabled(const RuleInfo& rule) const {
    return (!min_severity_ || rule.severity <= *min_severity_) && enabled(rule.code, rule.opt_in);
  }

  /// True if a finding of severity `s` is reported: a rule may report some
  /// findings below its own severity (Diagnostic::severity_override).
  bool reports(Severity s) const { return !min_severity_ || s <= *min_severity_; }

  /// Only rules of `least` severity or higher run (`--min-severity warning`:
  /// errors and warnings; Severity orders error < warning < info).
  RuleSelection& require_severity(Severity least) {
    min_severity_ = least;
    return *this;
  }

  /// Checks every prefix against `rules`. Returns an error message naming the
  /// first prefix that matches no rule, or std::nullopt.
  std::optional<std::string> validate(std::span<const Rule> rules) const;

  /// Same layers, so the same rules enabled (caches compare selections by value).
  bool operator==(const RuleSelection&) const = default;

 private:
  struct Layer {
    std::vector<std::string> select, extend_select, ignore;
    bool replaces = false;  ///< the layer has a select: rules it does not match are off
    bool operator==(const Layer&) const = default;
  };
  std::vector<Layer> layers_;
  std::optional<Severity> min_severity_;
};

/// Checks one list of codes or prefixes against `rules`: the first item that
/// matches no rule, or std::nullopt.
std::optional<std::string> unknown_code(const std::vector<std::string>& prefixes, std::span<const Rule> rules);

/// A rule selector as written by a user, in the form selections compare: a
/// rule's kebab-case name (`dataloader-without-workers`, any case) becomes its
/// code, anything else is upper-cased (`ddp303` -> `DDP303`, `all` -> `ALL`).
std::string canonical_selector(std::string_view item, std::span<const Rule> rules);

/// canonical_selector() over each item of `items`, in place.
void canonicalize_selectors(std::vector<std::string>& items, std::span<const Rule> rules);

/// The rule that `item` names, by code in any case or by name; nullptr when none does.
const Rule* find_rule(std::string_view item, std::span<const Rule> rules);

/// Levenshtein distance of two short words (rule codes, names, option names).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The word of `candidates` closest to `word` by edit_distance (case
/// ignored), within a third of its length (at least 1 edit); empty when none.
std::string closest_word(std::string_view word, const std::vector<std::string>& candidates);

/// The rule code or name (or `ALL`) closest to `item` by edit distance, for a
/// "did you mean" hint: empty when none is within a third of its length
/// (at least 1 edit, case ignored).
std::string closest_rule_word(std::string_view item, std::span<const Rule> rules);

/// "unknown rule code or prefix 'X'", with "did you mean 'Y'?" when
/// closest_rule_word() finds one, and "(see --list-rules)".
std::string unknown_rule_message(std::string_view item, std::span<const Rule> rules);

/// Splits a comma-separated option value (`DDP1,DDP401`) into trimmed, non-empty items.
std::vector<std::string> split_codes(std::string_view list);

}  // namespace ddplint
