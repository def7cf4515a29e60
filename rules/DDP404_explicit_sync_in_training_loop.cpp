// DDP404 explicit-sync-in-training-loop: torch.cuda.synchronize()/empty_cache() every step.
#include <unordered_set>

#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// A function whose body is a synchronize and a wall-clock read (yolov5/7's
// `def time_synchronized(): torch.cuda.synchronize(); return time.time()`):
// a timer, whose synchronize is what makes the time it returns correct.
bool wall_clock_timer(const SemanticModel& model, int scope) {
  if (scope == 0) return false;
  for (const CallSite& c : model.calls()) {
    if (model.regions()[c.region].scope != scope) continue;
    if (c.canonical == "time.time" || c.canonical == "time.perf_counter" || c.canonical == "time.monotonic")
      return true;
  }
  return false;
}

// Timing code: scopes (functions, or the module) that create CUDA events or
// read elapsed_time, so a synchronize there brackets a measurement; and
// wall-clock timer functions.
std::unordered_set<int> timing_scopes(const SemanticModel& model) {
  std::unordered_set<int> scopes;
  for (const CallSite& c : model.calls()) {
    int scope = model.regions()[c.region].scope;
    if (c.canonical == "torch.cuda.Event" || c.method == "elapsed_time") scopes.insert(scope);
  }
  for (const CallSite* c : model.calls_to("torch.cuda.synchronize")) {
    int scope = model.regions()[c->region].scope;
    if (!model.is_step_loop(model.innermost_loop(c->region)) && wall_clock_timer(model, scope)) scopes.insert(scope);
  }
  return scopes;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  std::unordered_set<int> timing;
  bool timing_known = false;
  DrainedSyncs drained;
  bool drained_known = false;
  for (std::string_view name : {"torch.cuda.synchronize", "torch.cuda.empty_cache"}) {
    for (const CallSite* call : model.calls_to(name)) {
      if (!model.runs_every_step(call->node, kRareGuards)) continue;
      bool sync = name == "torch.cuda.synchronize";
      if (sync && !timing_known) timing = timing_scopes(model), timing_known = true;
      if (sync && timing.contains(model.regions()[call->region].scope)) continue;
      // right after another sync of the step with no work queued between (a
      // loss.item() just before it): one stall, reported once, at the first
      if (sync && !drained_known) drained = syncs_after_sync(model, ddp_wraps(model), lambda_ranges(model)), drained_known = true;
      if (sync && drained.contains(call)) continue;
      auto [start, end] = first_line_range(model, call->node);
      ctx.report(start, end,
                 sync ? "torch.cuda.synchronize() on every training step: the CPU waits for all queued GPU work, "
                        "so it cannot queue the next step ahead"
                      : "torch.cuda.empty_cache() on every training step: it synchronises and returns cached "
                        "blocks to the driver, so the next step pays for cudaMalloc again");
    }
  }
}
}  // namespace

// needs: reports torch.cuda.synchronize/empty_cache calls run every step, or a Lightning per-step hook
extern const Rule kRuleDDP404{
    .info = {.code = "DDP404", .name = "explicit-sync-in-training-loop", .severity = Severity::Warning,
             .summary = "torch.cuda.synchronize() or torch.cuda.empty_cache() on every training step",
             .url = "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
             .needs = "torch;synchronize|empty_cache;backward|step|on_train_batch|zero_grad"},
    .check = &check};

}  // namespace ddplint::rules
