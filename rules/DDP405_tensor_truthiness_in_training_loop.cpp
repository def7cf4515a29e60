// DDP405 tensor-truthiness-in-training-loop: float(t), int(t), bool(t), `if t > x:` every step.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

#include <optional>

namespace ddplint::rules {

namespace {

void report(const SemanticModel& model, RuleContext& ctx, TSNode at, const std::string& what) {
  auto [start, end] = first_line_range(model, at);
  ctx.report(start, end,
             what + " on a tensor every training step: turning a CUDA tensor into a Python value waits for the GPU "
                    "(a host-device sync); keep the test on the GPU (torch.where, masks) or do it every N steps");
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  BlockingLoaderSteps blocking(model);
  std::optional<DrainedSyncs> drained;
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
    // right after another sync of the step with no work queued between (the
    // first of two NaN checks): one stall, reported once, at the first
    if (!drained) drained = syncs_after_sync(model, ddp_wraps(model), lambda_ranges(model));
    if (drained->contains_condition(r.condition)) continue;
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
