// DDP502 deprecated-cuda-amp: torch.cuda.amp.autocast / GradScaler.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
std::string_view deprecated_name(std::string_view canonical) {
  if (canonical == "torch.cuda.amp.autocast") return "autocast";
  if (canonical == "torch.cuda.amp.GradScaler") return "GradScaler";
  if (canonical == "torch.cuda.amp.custom_fwd") return "custom_fwd";
  if (canonical == "torch.cuda.amp.custom_bwd") return "custom_bwd";
  return {};
}

void report(RuleContext& ctx, TSNode at, std::string_view name) {
  std::string instead = name == "autocast"     ? "torch.amp.autocast(\"cuda\", ...)"
                        : name == "GradScaler" ? "torch.amp.GradScaler(\"cuda\", ...)"
                                               : "torch.amp." + std::string(name) + "(device_type=\"cuda\", ...)";
  ctx.report(ts_node_start_byte(at), ts_node_end_byte(at),
             "torch.cuda.amp." + std::string(name) + " is deprecated (a FutureWarning since PyTorch 2.4): use " +
                 instead);
}

void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite& call : model.calls()) {
    std::string_view name = deprecated_name(call.canonical);
    if (!name.empty()) report(ctx, call.callee, name);
  }
  // bare decorators: `@custom_bwd` (the called form is a call, handled above)
  for (TSNode d : model.decorators()) {
    if (ts_node_symbol(d) == kinds().call) continue;
    std::string_view name = deprecated_name(model.canonical_name(d));
    if (!name.empty()) report(ctx, d, name);
  }
}
}  // namespace

extern const Rule kDeprecatedCudaAmp{
    {"DDP502", "deprecated-cuda-amp", Severity::Warning,
     "torch.cuda.amp.autocast / GradScaler: deprecated, use torch.amp with \"cuda\"",
     "https://pytorch.org/docs/stable/amp.html", {}, false},
    &check};

}  // namespace ddplint::rules
