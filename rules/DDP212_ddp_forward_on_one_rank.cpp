// DDP212 ddp-forward-on-one-rank: the DDP-wrapped model called inside a rank-0 guard.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  auto wraps = ddp_wraps(model);
  if (wraps.empty()) return;
  std::string storage;
  for (const CallSite& c : model.calls()) {
    // a forward: the wrapped object itself called, `model(x)` / `self.model(x)`
    std::string_view callee = model.path_view(c.callee, storage);
    if (callee.empty()) continue;
    bool wrapped = false;
    for (const DdpWrap& w : wraps) wrapped = wrapped || (!w.result.empty() && callee == w.result);
    if (!wrapped) continue;
    if (!(model.enclosing_guards(c.node) & kGuardMainProcess)) continue;
    auto [start, end] = first_line_range(model, c.node);
    ctx.report(start, end,
               "forward of the DDP-wrapped model under a rank-0 guard: DDP may broadcast buffers or expect the "
               "other ranks in its next collective, so the job can hang; evaluate `model.module` on rank 0, or "
               "evaluate on every rank");
  }
}
}  // namespace

extern const Rule kDdpForwardOnOneRank{
    {"DDP212", "ddp-forward-on-one-rank", Severity::Warning,
     "The DDP-wrapped model called (forward) inside a rank-0 guard: the job can hang",
     "https://pytorch.org/docs/stable/notes/ddp.html", {}, false, false, "torch"},
    &check};

}  // namespace ddplint::rules
