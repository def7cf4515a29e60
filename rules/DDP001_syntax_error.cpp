// DDP001 syntax-error: the file does not parse.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  const auto& error = model.first_syntax_error();
  if (!error) return;
  auto [start, end] = first_line_range(model, error->node);
  ctx.report(start, end, "syntax error: " + error->message + "; findings after this point may be incomplete");
}
}  // namespace

extern const Rule kRuleDDP001{
    .info = {.code = "DDP001", .name = "syntax-error", .severity = Severity::Error,
             .summary = "The file does not parse; other rules run on what parsed",
             .url = "https://docs.python.org/3/reference/grammar.html", .in_tests = true, .needs = "*"},
    .check = &check};

}  // namespace ddplint::rules
