#include "linter/lint.hpp"

#include <algorithm>
#include <optional>

#include "linter/prefilter.hpp"
#include "linter/semantic_model.hpp"
#include "linter/suppressions.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

namespace {
// The prefilter for this rule set and selection, compiled once per thread
// for each distinct set of enabled rules (files of one run share one or a few).
const Prefilter& prefilter_for(std::span<const Rule> rules, const RuleSelection& selection) {
  struct Entry {
    std::vector<const char*> needs;  // identity of the rule set: each rule's needs literal
    RuleSelection selection;
    Prefilter prefilter;
  };
  thread_local std::vector<Entry> cache;
  auto same_rules = [&](const Entry& e) {
    if (e.needs.size() != rules.size()) return false;
    for (std::size_t i = 0; i < rules.size(); ++i)
      if (e.needs[i] != rules[i].info.needs.data()) return false;
    return true;
  };
  // selections compared by value: a few short lists, cheaper than asking every rule's state per file
  for (const Entry& e : cache) {
    if (e.selection == selection && same_rules(e)) return e.prefilter;
  }
  if (cache.size() >= 16) cache.erase(cache.begin());
  std::vector<const char*> needs;
  for (const Rule& r : rules) needs.push_back(r.info.needs.data());
  cache.push_back(Entry{std::move(needs), selection, Prefilter(rules, selection)});
  return cache.back().prefilter;
}

// The prefilter of the whole catalog `rules`, whatever is selected.
const Prefilter& catalog_prefilter(std::span<const Rule> rules) {
  static const RuleSelection everything;
  return prefilter_for(rules, everything);
}

LintResult lint_decoded(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                        const RuleSelection& selection, const RuleOptions& options) {
  LintResult result;
  if (!tree) {
    result.error = "tree-sitter could not parse the file";
    return result;
  }
  SemanticModel model(source, tree);
  std::vector<Diagnostic> found;
  std::optional<bool> training_script;  // some rule of the catalog may fire here (for `needs = "*"`)
  for (const Rule& rule : rules) {
    if (!selection.enabled(rule.info.code)) continue;
    if (rule.info.needs == "*") {  // DDP001: reported in files other rules could fire on, prefiltered or not
      if (!training_script) training_script = catalog_prefilter(rules).may_fire(source.text());
      if (!*training_script) continue;
    }
    RuleContext ctx(rule.info, found, options);
    rule.check(model, ctx);
  }
  if (found.empty()) return result;  // no `# noqa` to read, no line index to build
  Suppressions noqa = Suppressions::collect(model);
  const LineIndex& lines = source.lines();
  for (Diagnostic& d : found) {
    if (!noqa.suppresses(d, lines.line_of(d.start))) result.diagnostics.push_back(std::move(d));
  }
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.rule->code < b.rule->code;
  });
  return result;
}

}  // namespace

LintResult lint(const SourceFile& source, std::span<const Rule> rules, const RuleSelection& selection,
                const RuleOptions& options, bool prefilter) {
  std::string detail;
  if (source.check_decodable(&detail) != DecodeError::None) return LintResult{{}, detail};
  if (prefilter && !prefilter_for(rules, selection).may_fire(source.text())) {
    LintResult skipped;
    skipped.skipped = true;
    return skipped;
  }
  return lint_decoded(source, parse_python(source), rules, selection, options);
}

LintResult lint(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                const RuleSelection& selection, const RuleOptions& options) {
  std::string detail;
  if (source.check_decodable(&detail) != DecodeError::None) return LintResult{{}, detail};
  return lint_decoded(source, tree, rules, selection, options);
}

}  // namespace ddplint
