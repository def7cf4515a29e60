// DDP212 ddp-forward-on-one-rank: the DDP-wrapped model called inside a rank-0 guard.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  auto wraps = ddp_wraps(model);
  if (wraps.empty()) return;
  std::string built;
  for (const CallSite& c : model.calls()) {
    // a forward: the wrapped object itself called, `model(x)` / `self.model(x)`
    // (a callee written plainly is its own path: no string is built for it)
    std::string_view callee = model.text(c.callee);
    TSSymbol s = node_symbol(c.callee);
    if (s != kinds().identifier && s != kinds().attribute) continue;
    if (callee.find_first_of(" \t\r\n\\#") != std::string_view::npos) {
      built = model.path_of(c.callee);
      callee = built;
    }
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
