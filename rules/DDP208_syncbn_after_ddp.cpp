// DDP208 syncbn-after-ddp: SyncBatchNorm conversion applied after the DDP wrap.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  auto wraps = ddp_wraps(model);
  if (wraps.empty()) return;
  for (const CallSite* c : model.calls_to("torch.nn.SyncBatchNorm.convert_sync_batchnorm")) {
    if (!after_wrap_of(model, wraps, *c, model.path_of(model.argument(*c, "module", 0)))) continue;
    auto [start, end] = first_line_range(model, c->node);
    ctx.report(start, end,
               "SyncBatchNorm conversion after the DistributedDataParallel wrap: DDP keeps the original "
               "BatchNorm layers (or the new ones are not registered with DDP); convert before wrapping");
  }
}
}  // namespace

// needs: reports convert_sync_batchnorm calls after a DDP/FSDP wrap
extern const Rule kRuleDDP208{
    .info = {.code = "DDP208", .name = "syncbn-after-ddp", .severity = Severity::Error,
             .summary = "SyncBatchNorm.convert_sync_batchnorm applied after the DDP wrap",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.SyncBatchNorm.html",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel;convert_sync_batchnorm"},
    .check = &check};

}  // namespace ddplint::rules
