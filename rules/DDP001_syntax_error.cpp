// DDP001 syntax-error: the file does not parse.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  auto error = model.first_syntax_error();
  if (!error) return;
  TSNode node = *error;
  std::string message;
  if (ts_node_is_missing(node)) {
    message = std::string("syntax error: missing `") + ts_node_type(node) + "`";
  } else {
    // show the first token tree-sitter could not place
    TSNode first = node;
    while (ts_node_child_count(first) > 0) first = ts_node_child(first, 0);
    std::string token(model.text(first).substr(0, 40));
    message = token.empty() ? "syntax error" : "syntax error: unexpected `" + token + "`";
  }
  message += "; findings after this point may be incomplete";
  auto [start, end] = first_line_range(model, node);
  ctx.report(start, end, std::move(message));
}
}  // namespace

extern const Rule kSyntaxError{
    {"DDP001", "syntax-error", Severity::Error, "The file does not parse; other rules run on what parsed",
     "https://docs.python.org/3/reference/grammar.html", {}, false},
    &check};

}  // namespace ddplint::rules
