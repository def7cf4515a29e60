#include "linter/lint.hpp"

#include <algorithm>

#include "linter/semantic_model.hpp"
#include "linter/suppressions.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

namespace {
LintResult lint_decoded(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                        const RuleSelection& selection, const RuleOptions& options) {
  LintResult result;
  if (!tree) {
    result.error = "tree-sitter could not parse the file";
    return result;
  }
  SemanticModel model(source, tree);
  std::vector<Diagnostic> found;
  for (const Rule& rule : rules) {
    if (!selection.enabled(rule.info.code)) continue;
    RuleContext ctx(rule.info, found, options);
    rule.check(model, ctx);
  }
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
                const RuleOptions& options) {
  std::string detail;
  if (source.check_decodable(&detail) != DecodeError::None) return LintResult{{}, detail};
  return lint_decoded(source, parse_python(source), rules, selection, options);
}

LintResult lint(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                const RuleSelection& selection, const RuleOptions& options) {
  std::string detail;
  if (source.check_decodable(&detail) != DecodeError::None) return LintResult{{}, detail};
  return lint_decoded(source, tree, rules, selection, options);
}

}  // namespace ddplint
