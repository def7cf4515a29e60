// DDP802 standalone-multi-node: torchrun --standalone with --nnodes above 1.
#include <string>

#include "linter/launch_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const Launch& l : model.launches()) {
    if (!l.is_torch_launcher() || l.opaque_options) continue;  // `$ARGS` may hold another --nnodes
    const LaunchOption* standalone = l.option("standalone");
    const LaunchOption* nnodes = l.option("nnodes");
    if (standalone == nullptr || nnodes == nullptr || !nnodes->value || !nnodes->value->value) continue;
    std::optional<std::int64_t> n = parse_node_count(*nnodes->value->value);
    if (!n || *n <= 1) continue;
    ctx.report(standalone->start, standalone->end,
               "--standalone with " + nnodes->written + " " + *nnodes->value->value +
                   ": each node runs its own rendezvous on localhost, so the nodes never join one job (each waits "
                   "for nodes that never come, or trains alone); give every node --rdzv-backend=c10d and the same "
                   "--rdzv-endpoint and --rdzv-id instead");
  }
}
}  // namespace

// needs: none (launch scripts are not prefiltered)
extern const Rule kRuleDDP802{
    .info = {.code = "DDP802", .name = "standalone-multi-node", .severity = Severity::Error,
             .summary = "torchrun --standalone with --nnodes above 1: the nodes never meet",
             .url = "https://pytorch.org/docs/stable/elastic/run.html"},
    .check_launch = &check_launch};

}  // namespace ddplint::rules
