// DDP504 grad-scaler-with-bf16: a GradScaler next to bfloat16 autocast.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  // every CUDA autocast in the file must resolve to bfloat16 (and there is one)
  int bf16 = 0;
  for (const CallSite& call : model.calls()) {
    std::string p = autocast_precision(model, call);
    bool autocast = call.canonical == "torch.autocast" || call.canonical == "torch.amp.autocast" ||
                    call.canonical == "torch.cuda.amp.autocast";
    if (autocast && call.canonical != "torch.cuda.amp.autocast") {
      Value device = model.value_of(model.argument(call, "device_type", 0));
      if (device.kind == Value::Kind::Str && device.s != "cuda") continue;  // CPU autocast: no scaler involved
    }
    if (autocast && p != "bf16") return;  // fp16 or unknown somewhere: the scaler may be needed
    if (p == "bf16") ++bf16;
  }
  if (bf16 == 0) return;
  for (const CallSite& call : model.calls()) {
    if (!call.method.ends_with("GradScaler")) continue;
    // GradScaler(enabled=(dtype == "float16")): switched off for bf16 runs
    TSNode enabled = model.argument(call, "enabled", call.canonical == "torch.cuda.amp.GradScaler" ? 4 : 5);
    if (!node_is_null(enabled)) {
      Value v = model.value_of(enabled);
      if (!v.known() || !v.truthy()) continue;
    }
    ctx.report(node_start_byte(call.callee), node_end_byte(call.callee),
               "GradScaler with bfloat16 autocast: bfloat16 has float32's exponent range, so gradients do not "
               "underflow and loss scaling is unneeded work; drop the scaler (or enable it only for float16)");
  }
}
}  // namespace

// needs: a bf16 autocast call, and reports GradScaler calls
extern const Rule kRuleDDP504{
    .info = {.code = "DDP504", .name = "grad-scaler-with-bf16", .severity = Severity::Info,
             .summary = "GradScaler used together with bfloat16 autocast",
             .url = "https://pytorch.org/docs/stable/amp.html#gradient-scaling", .needs = "torch;autocast;GradScaler"},
    .check = &check};

}  // namespace ddplint::rules
