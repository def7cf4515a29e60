// DDP307 no-sync-without-forward: `with model.no_sync():` around backward() only.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite* ns : model.calls_named("no_sync")) {
    if (node_is_null(ns->receiver)) continue;
    // DDP's no_sync() is read by the forward; FSDP's by the post-backward hook
    // (wrapping only backward() is right there), and an unknown model makes no claim
    if (model.parallel_wrapper(ns->receiver) != ParallelWrapper::Ddp) continue;
    // the With region whose header holds this no_sync() call
    int with_region = -1;
    for (std::size_t r = 0; r < model.regions().size(); ++r) {
      const Region& reg = model.regions()[r];
      if (reg.kind != Region::Kind::With) continue;
      std::uint32_t b = node_start_byte(reg.node), e = node_end_byte(field(reg.node, kinds().f_body));
      if (b <= node_start_byte(ns->node) && node_start_byte(ns->node) < node_start_byte(field(reg.node, kinds().f_body)) &&
          node_end_byte(ns->node) <= e) {
        with_region = static_cast<int>(r);
        break;
      }
    }
    if (with_region < 0) continue;
    TSNode body = field(model.regions()[with_region].node, kinds().f_body);
    std::uint32_t b = node_start_byte(body), e = node_end_byte(body);
    std::string wrapped = model.path_of(ns->receiver);
    bool backward = false, forward = false;
    for (const CallSite& c : model.calls()) {
      std::uint32_t at = node_start_byte(c.node);
      if (at < b || at >= e) continue;
      if (c.method == "backward") backward = true;
      std::string callee = model.path_of(c.callee);
      // the model called (forward), or a same-file function that may call it: give the benefit of the doubt
      if (!callee.empty() && (callee == wrapped || callee.rfind(wrapped + ".", 0) == 0)) forward = true;
      if (node_symbol(c.callee) == kinds().identifier && !model.functions().empty()) {
        for (const FunctionInfo& f : model.functions())
          if (f.name == c.method) forward = true;
      }
    }
    if (!backward || forward) continue;
    auto [start, end] = first_line_range(model, model.regions()[with_region].node);
    ctx.report(start, end,
               "`no_sync()` around backward() only: DDP decides whether to synchronise during the forward pass, "
               "so this backward still all-reduces; run the forward inside the `with` block too");
  }
}
}  // namespace

// needs: a no_sync() on a name bound to a DDP wrap (parallel_wrapper), and backward()
extern const Rule kRuleDDP307{
    .info = {.code = "DDP307", .name = "no-sync-without-forward", .severity = Severity::Warning,
             .summary = "`with model.no_sync():` that runs backward() but not the model's forward: gradients are still all-reduced",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync",
             .needs = "no_sync;backward"},
    .check = &check};

}  // namespace ddplint::rules
