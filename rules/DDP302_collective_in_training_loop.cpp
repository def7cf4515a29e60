// DDP302 collective-in-training-loop: a collective on every training step.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

bool is_manual_gradient_reduce(const SemanticModel& model, const CallSite& call);

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite& call : model.calls()) {
    if (!is_collective(call.canonical)) continue;
    // rank-dependent branches are a different fault (the other ranks never join)
    if (!model.runs_every_step(call.node, kRareGuards | kGuardRankDependent)) continue;
    if (is_manual_gradient_reduce(model, call)) continue;  // reported as DDP301
    auto [start, end] = first_line_range(model, call.node);
    std::string name(call.canonical.substr(std::string_view("torch.distributed.").size()));
    ctx.report(start, end,
               "`" + name + "` on every training step: each call waits for the slowest rank and adds a "
               "round of communication outside DDP's overlapped gradient buckets; do it every N steps or "
               "after the loop");
  }
}
}  // namespace

// needs: a torch.distributed collective (is_collective: every name contains one of these) run every step (a training loop)
extern const Rule kRuleDDP302{
    .info = {.code = "DDP302", .name = "collective-in-training-loop", .severity = Severity::Warning,
             .summary = "A collective (all_reduce, barrier, all_gather, ...) executed on every training step",
             .url = "https://pytorch.org/docs/stable/distributed.html#collective-functions",
             .needs = "torch;reduce|gather|broadcast|scatter|barrier|all_to_all;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
