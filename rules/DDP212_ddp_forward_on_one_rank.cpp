// DDP212 ddp-forward-on-one-rank: the DDP-wrapped model called inside a rank-0 guard.
#include <algorithm>

#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  auto wraps = ddp_wraps(model);
  if (wraps.empty()) return;
  // the last name of each wrapped path: a call is a forward of it only if its
  // callee's last name (`model` in `self.model(x)`, CallSite::method) is one
  // of these, which settles most calls without building the callee's path
  // (each kept once, sorted: a file that wraps `model` in each of thousands of
  // functions has one name to compare, not one per wrap)
  std::vector<std::string_view> last_names, results;
  for (const DdpWrap& w : wraps) {
    if (w.result.empty()) continue;
    results.push_back(w.result);
    last_names.push_back(std::string_view(w.result).substr(w.result.rfind('.') + 1));
  }
  if (last_names.empty()) return;
  for (auto* names : {&last_names, &results}) {
    std::sort(names->begin(), names->end());
    names->erase(std::unique(names->begin(), names->end()), names->end());
  }
  std::string storage;
  for (const CallSite& c : model.calls()) {
    if (!c.method.empty() && !std::binary_search(last_names.begin(), last_names.end(), c.method)) continue;
    // a forward: the wrapped object itself called, `model(x)` / `self.model(x)`
    std::string_view callee = model.path_view(c.callee, storage);
    if (callee.empty() || !std::binary_search(results.begin(), results.end(), callee)) continue;
    if (!(model.enclosing_guards(c.node) & kGuardMainProcess)) continue;
    auto [start, end] = first_line_range(model, c.node);
    ctx.report(start, end,
               "forward of the DDP-wrapped model under a rank-0 guard: DDP may broadcast buffers or expect the "
               "other ranks in its next collective, so the job can hang; evaluate `model.module` on rank 0, or "
               "evaluate on every rank");
  }
}
}  // namespace

// needs: reports forwards of a DDP/FSDP-wrapped name (ddp_wraps)
extern const Rule kRuleDDP212{
    .info = {.code = "DDP212", .name = "ddp-forward-on-one-rank", .severity = Severity::Warning,
             .summary = "The DDP-wrapped model called (forward) inside a rank-0 guard: the job can hang",
             .url = "https://pytorch.org/docs/stable/notes/ddp.html",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel"},
    .check = &check};

}  // namespace ddplint::rules
