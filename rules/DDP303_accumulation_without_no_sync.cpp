// DDP303 accumulation-without-no-sync: DDP all-reduces on every micro-step.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// Innermost loop region around `node` within its function, or -1.
int loop_of(const SemanticModel& model, TSNode node) { return model.innermost_loop(model.region_of(node)); }

// The innermost Branch region between `node` and its loop `loop` whose test is
// periodic, or -1.
int periodic_branch(const SemanticModel& model, TSNode node, int loop) {
  for (int r = model.region_of(node); r > 0 && r != loop; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind == Region::Kind::Branch && (region.guard & kGuardPeriodic)) return r;
  }
  return -1;
}

// The script already skips the all-reduce on micro-steps some way, or may:
// a `no_sync()` context (DDP's, or a framework's `no_backward_sync`), an
// `accelerator.accumulate(...)`, an assignment to DDP's
// `require_backward_grad_sync`, or a `with` over a callable of this project
// given the DDP model (edm's `misc.ddp_sync(ddp, last_round)`, which enters
// `ddp.no_sync()` on the other rounds): what that context does is not in this
// file. Code, not text: a comment naming no_sync changes nothing.
bool syncs_selectively(const SemanticModel& model, const std::vector<DdpWrap>& wraps) {
  const Kinds& k = kinds();
  for (const CallSite& c : model.calls()) {
    if (c.method == "no_sync" || c.method == "no_backward_sync") return true;
    if (c.method == "accumulate" && !node_is_null(c.receiver)) return true;
    TSNode parent = ts_node_parent(c.node);
    if (node_is_null(parent) || node_symbol(parent) != k.with_item || c.canonical.rfind("torch.", 0) == 0) continue;
    for (const Argument& a : model.arguments(c)) {
      std::string path = model.path_of(a.value);
      for (const DdpWrap& w : wraps)
        if (!path.empty() && (path == w.result || path == w.module)) return true;
    }
  }
  for (const Binding& b : model.bindings())
    if (model.last_name(b.target) == "require_backward_grad_sync") return true;
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.wraps_ddp()) return;
  std::vector<const CallSite*> steps, backwards;
  for (const CallSite& c : model.calls()) {
    if (!model.is_training_call(c)) continue;
    (c.method == "backward" ? backwards : steps).push_back(&c);
  }
  if (steps.empty() || backwards.empty() || syncs_selectively(model, ddp_wraps(model))) return;
  // the regions that hold a backward in a loop nested inside them: each
  // backward's loop marks its enclosing regions once (not a pass over every
  // backward for every step, which was quadratic in a file of many loops)
  std::vector<std::uint8_t> holds_inner_backward(model.regions().size(), 0);
  for (const CallSite* b : backwards) {
    int bl = loop_of(model, b->node);
    if (bl < 0) continue;
    for (int r = model.regions()[bl].parent; r > 0 && !holds_inner_backward[r]; r = model.regions()[r].parent)
      holds_inner_backward[r] = 1;  // (an ancestor already marked has its own ancestors marked)
  }
  for (const CallSite* step : steps) {
    int step_loop = loop_of(model, step->node);
    if (step_loop < 0) continue;
    // (a) the optimizer steps only every K iterations, `if (i + 1) % accum == 0: optimizer.step()`,
    // and a backward of the same loop runs outside that branch (more often
    // than the step); a backward and a step both under `if i % k == 0:` are
    // a periodic step of their own (a GAN's lazy regularisation), not accumulation
    bool periodic_step = false;
    if (model.enclosing_guards(step->node) & kGuardPeriodic) {
      int branch = periodic_branch(model, step->node, step_loop);
      for (const CallSite* b : backwards) {
        if (loop_of(model, b->node) != step_loop || node_start_byte(b->node) > node_start_byte(step->node)) continue;
        if (branch >= 0 && region_within(model, b->region, branch)) continue;
        // a step between them, outside the branch, takes that backward's gradients
        bool consumed = false;
        for (const CallSite* other : steps) {
          std::uint32_t at = node_start_byte(other->node);
          consumed = consumed || (other != step && loop_of(model, other->node) == step_loop &&
                                  at > node_start_byte(b->node) && at < node_start_byte(step->node) &&
                                  (branch < 0 || !region_within(model, other->region, branch)));
        }
        if (!consumed) periodic_step = true;
      }
    }
    // (b) backward in an inner loop over micro-batches, the step after it in the outer loop
    bool inner_backward = holds_inner_backward[step_loop] != 0;
    if (!periodic_step && !inner_backward) continue;
    auto [start, end] = first_line_range(model, step->node);
    ctx.report(start, end,
               "gradient accumulation with DDP and no model.no_sync(): every micro-step's backward all-reduces "
               "the gradients, although only the last one before this step needs it; run the other micro-steps "
               "under `with model.no_sync():`");
  }
}
}  // namespace

// needs: a DDP/FSDP wrap (wraps_ddp()) and a backward() call
extern const Rule kRuleDDP303{
    .info = {.code = "DDP303", .name = "accumulation-without-no-sync", .severity = Severity::Warning,
             .summary = "Gradient accumulation in a DDP script without model.no_sync(): DDP all-reduces every micro-step",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel|fully_shard;backward"},
    .check = &check};

}  // namespace ddplint::rules
