// Applying fixes: choosing a non-overlapping set and rewriting the text.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/lint.hpp"
#include "linter/selection.hpp"
#include "linter/source.hpp"

namespace ddplint {

/// The edits of every fix among `diagnostics` that may be applied together, in
/// document order: safe fixes (and unsafe ones too if `include_unsafe`), each
/// taken whole or not at all, skipping a fix whose edits overlap or touch an
/// edit already taken (two insertions at one offset would have no defined
/// order). The result is sorted by offset and non-overlapping.
std::vector<Edit> applicable_edits(std::span<const Diagnostic> diagnostics, bool include_unsafe);

/// `text` with `edits` applied. `edits` must be sorted by offset and must not
/// overlap (as applicable_edits returns them); offsets are bytes of `text`.
std::string apply_edits(std::string_view text, std::span<const Edit> edits);

/// Most passes fix_source makes: a fix can expose another (Ruff stops at 100;
/// no ddplint fix chains more than once, so 10 is ample).
inline constexpr int kMaxFixPasses = 10;

/// The result of fixing one source.
struct FixOutcome {
  SourceFile source;        ///< the text after the fixes (the original text if nothing applied)
  LintResult remaining;     ///< the findings of `source`: what the fixes left
  std::map<std::string_view, std::size_t> fixed;  ///< rule code -> findings fixed
  std::size_t fixed_total = 0;
  bool changed = false;     ///< `source` differs from the input
};

/// Lints `source` and applies its fixes (safe ones; unsafe ones too if
/// `include_unsafe`), re-linting and repeating until no fix applies or
/// kMaxFixPasses passes. A source with a syntax error (DDP001) or that cannot
/// be linted is returned unchanged. `project`: the file's project facts (see lint()).
/// `fixable` (may be null: every rule): only the fixes of the rules it
/// enables apply (the configuration's `fixable` minus `unfixable`).
/// A notebook's virtual source (source.notebook()) keeps its cells: a fix with
/// an edit that NotebookIndex::editable refuses is not applied, and the
/// result carries the index moved by the edits.
FixOutcome fix_source(SourceFile source, std::span<const Rule> rules, const RuleSelection& selection,
                      bool include_unsafe, const RuleOptions& options = RuleOptions{},
                      const ProjectFacts* project = nullptr, const RuleSelection* fixable = nullptr);

/// A unified diff (`--- a/PATH`, `+++ b/PATH`, hunks with 3 lines of context)
/// from `before` to `after`, computed with the dtl library; "" when they are equal.
std::string unified_diff(std::string_view before, std::string_view after, const std::string& path);

}  // namespace ddplint
