// DDP205 ddp-before-device-move: the model is moved to its GPU after the DDP wrap.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  auto wraps = ddp_wraps(model);
  if (wraps.empty()) return;
  for (std::string_view method : {"to", "cuda"}) {
    for (const CallSite* c : model.calls_named(method)) {
      if (node_is_null(c->receiver)) continue;
      if (method == "to") {  // a device move, not a dtype cast
        TSNode a = model.argument(*c, "device", 0);
        if (node_is_null(a)) continue;
        std::string canonical = model.canonical_name(a);
        if (!canonical.empty() && canonical.rfind("torch.device", 0) != 0) continue;
      }
      if (!after_wrap_of(model, wraps, *c, model.path_of(c->receiver))) continue;
      auto [start, end] = first_line_range(model, c->node);
      ctx.report(start, end,
                 "the model is moved to its device after the DistributedDataParallel wrap: DDP broadcast the "
                 "parameters and built its gradient buckets where the model was; move it before wrapping");
    }
  }
}
}  // namespace

// needs: reports only after a DDP/FSDP wrap (ddp_wraps)
extern const Rule kRuleDDP205{
    .info = {.code = "DDP205", .name = "ddp-before-device-move", .severity = Severity::Error,
             .summary = "The model is wrapped in DDP before being moved to its GPU",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel"},
    .check = &check};

}  // namespace ddplint::rules
