// DDP309 no-sync-on-step: no_sync() chosen on exactly the iterations that step the optimizer.
#include <optional>
#include <string>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// A condition's text without whitespace, to compare two spellings of one test.
std::string squeezed(const SemanticModel& model, TSNode condition) {
  std::string out;
  for (char c : model.text(condition))
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\\') out += c;
  while (out.size() >= 2 && out.front() == '(' && out.back() == ')') out = out.substr(1, out.size() - 2);
  return out;
}

struct Active {
  TSNode condition;
  bool when_true;  ///< active when the condition holds (false: when it does not)
};

// When the no_sync() call is in effect: chosen by a conditional expression
// (`model.no_sync() if C else nullcontext()`), or entered by a `with` that
// stands directly in an `if C:` / `else:` block.
std::optional<Active> active_when(const SemanticModel& model, const CallSite& call) {
  const Kinds& k = kinds();
  TSNode child = call.node;
  int levels = 0;
  for (TSNode p = ts_node_parent(call.node); !node_is_null(p) && levels < 4; child = p, p = ts_node_parent(p), ++levels) {
    if (node_symbol(p) != k.conditional_expression || ts_node_named_child_count(p) != 3) continue;
    TSNode body = ts_node_named_child(p, 0), condition = ts_node_named_child(p, 1);
    if (node_eq(child, condition)) return std::nullopt;
    return Active{condition, node_eq(child, body)};
  }
  const Region& region = model.regions()[call.region];
  if (region.kind == Region::Kind::Branch && !node_is_null(region.condition))
    return Active{region.condition, !region.negated};
  // `with model.no_sync():` is the With region's own statement: its branch is the parent region
  if (region.kind == Region::Kind::With && region.parent > 0) {
    const Region& outer = model.regions()[region.parent];
    if (outer.kind == Region::Kind::Branch && !node_is_null(outer.condition))
      return Active{outer.condition, !outer.negated};
  }
  return std::nullopt;
}

// The optimizer step of the same loop runs exactly when `active` holds: an
// enclosing branch of the step (within the loop) tests the same condition
// with the same outcome.
bool steps_when(const SemanticModel& model, const CallSite& step, int loop, const Active& active,
                const std::string& test) {
  for (int r = step.region; r > 0 && r != loop; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind != Region::Kind::Branch || node_is_null(region.condition)) continue;
    if (squeezed(model, region.condition) == test && (!region.negated) == active.when_true) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.wraps_ddp()) return;
  for (const CallSite* call : model.calls_named("no_sync")) {
    if (node_is_null(call->receiver)) continue;
    int loop = model.innermost_loop(call->region);
    if (loop < 0) continue;
    std::optional<Active> active = active_when(model, *call);
    if (!active) continue;
    std::string test = squeezed(model, active->condition);
    if (test.empty()) continue;
    for (const CallSite& step : model.calls()) {
      if (step.method != "step" || !model.is_training_call(step)) continue;
      if (model.innermost_loop(step.region) != loop || !steps_when(model, step, loop, *active, test)) continue;
      auto [start, end] = first_line_range(model, call->node);
      ctx.report(start, end,
                 "no_sync() is in effect on exactly the iterations that step the optimizer (the same condition): "
                 "those backward passes skip DDP's all-reduce, so every rank steps with its own gradients and "
                 "the replicas drift apart; use no_sync() on the other micro-steps and let the last one sync");
      break;
    }
  }
}
}  // namespace

// needs: a DDP wrap and a no_sync() call, with an optimizer step
extern const Rule kRuleDDP309{
    .info = {.code = "DDP309", .name = "no-sync-on-step", .severity = Severity::Error,
             .summary = "no_sync() chosen by the same condition as the optimizer step: the stepping backward is never all-reduced",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel|fully_shard;no_sync;step"},
    .check = &check};

}  // namespace ddplint::rules
