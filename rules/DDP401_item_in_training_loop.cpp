// DDP401 item-in-training-loop: .item() on every step (host-device sync).
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  for (const CallSite* call : model.calls_named("item")) {
    if (node_is_null(call->receiver) || model.positional_count(*call) != 0) continue;
    if (!model.runs_every_step(call->node, kRareGuards)) continue;
    if (host_tensor(model, call->receiver)) continue;  // a CPU tensor: no GPU work to wait for
    auto [start, end] = first_line_range(model, call->node);
    ctx.report(start, end,
               "`.item()` on every training step: a host-device sync that waits for all queued GPU work, "
               "so the CPU cannot queue the next step ahead; accumulate on the GPU and read it every N steps");
  }
}
}  // namespace

// needs: fires without torch: uses_cuda() ("cuda"/"nccl"), .item(), a training loop (backward()/.step())
extern const Rule kRuleDDP401{
    .info = {.code = "DDP401", .name = "item-in-training-loop", .severity = Severity::Warning,
             .summary = "`.item()` on every step of a CUDA training loop: a host-device sync",
             .url = "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
             .needs = "torch|cuda|nccl;item;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
