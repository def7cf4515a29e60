// DDP405 tensor-truthiness-in-training-loop: float(t), int(t), bool(t), `if t > x:` every step.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

void report(const SemanticModel& model, RuleContext& ctx, TSNode at, const std::string& what) {
  auto [start, end] = first_line_range(model, at);
  ctx.report(start, end,
             what + " on a tensor every training step: turning a CUDA tensor into a Python value waits for the GPU "
                    "(a host-device sync); keep the test on the GPU (torch.where, masks) or do it every N steps");
}

// A condition that needs a tensor's value on the host: a tensor compared, or a tensor itself.
bool tensor_condition(const SemanticModel& model, TSNode cond, int depth = 0) {
  if (node_is_null(cond) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(cond);
  if (s == k.parenthesized_expression || s == k.not_operator) {
    return ts_node_named_child_count(cond) > 0 && tensor_condition(model, ts_node_named_child(cond, 0), depth + 1);
  }
  if (s == k.boolean_operator)
    return tensor_condition(model, field(cond, k.f_left), depth + 1) ||
           tensor_condition(model, field(cond, k.f_right), depth + 1);
  if (s == k.comparison_operator) {
    // `t is None` / `t is not None` test identity, not the value: no sync
    for (TSNode op : children(cond, false))
      if (!ts_node_is_named(op) && model.text(op).starts_with("is")) return false;
    for (TSNode operand : children(cond))
      if (tensor_valued(model, operand)) return true;
    return false;
  }
  return tensor_valued(model, cond);
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  BlockingLoaderSteps blocking(model);
  for (const CallSite& c : model.calls()) {
    if (!node_is_null(c.receiver) || (c.method != "float" && c.method != "int" && c.method != "bool")) continue;
    if (!model.bindings_of(c.method, c.region).empty()) continue;  // a shadowed builtin
    if (model.positional_count(c) != 1 || !tensor_valued(model, model.argument(c, "", 0))) continue;
    if (!model.runs_every_step(c.node, kRareGuards)) continue;
    if (blocking.holds(c)) continue;  // the loop waits for the GPU at each batch anyway
    report(model, ctx, c.node, "`" + std::string(c.method) + "(...)`");
  }
  for (const Region& r : model.regions()) {
    if (r.kind != Region::Kind::Branch || r.negated || node_is_null(r.condition)) continue;
    // (the step-loop test first: memoised per region, cheaper than following the condition's names)
    if (!model.runs_every_step(r.condition, kRareGuards) || !tensor_condition(model, r.condition)) continue;
    if (blocking.in_region(r.parent)) continue;
    report(model, ctx, r.condition, "an `if` condition");
  }
}
}  // namespace

// needs: reports calls and conditions run every step (a training loop), or a Lightning per-step hook
extern const Rule kRuleDDP405{
    .info = {.code = "DDP405", .name = "tensor-truthiness-in-training-loop", .severity = Severity::Info,
             .summary = "float(t), int(t), bool(t) or `if t > x:` on a tensor every training step: a host-device sync",
             .url = "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
             .needs = "torch;backward|step|on_train_batch|zero_grad"},
    .check = &check};

}  // namespace ddplint::rules
