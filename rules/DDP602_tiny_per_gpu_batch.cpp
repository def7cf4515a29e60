// DDP602 tiny-per-gpu-batch: a per-rank batch below the threshold.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.is_distributed()) return;
  // per-GPU batch sizes below this are flagged: `tiny-batch-threshold` (default 8, the rule catalog's)
  const std::int64_t kTinyBatchThreshold = ctx.options().tiny_batch_threshold;
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    if (loader_feeds_no_training(model, *call)) continue;  // e.g. prompts for generating images once
    TSNode bs = model.argument(*call, "batch_size", 1);
    if (node_is_null(bs) || evaluation_loader(model, *call)) continue;
    if (!node_is_null(model.argument(*call, "batch_sampler", 4))) continue;  // batch_size unused
    Value v = model.value_of(bs);
    if (v.kind != Value::Kind::Int || v.i < 1 || v.i >= kTinyBatchThreshold) continue;
    TSNode at = argument_node(model, *call, bs);
    // a total divided by the world size that the project's launches set (value_of)
    std::string world;
    const std::vector<LaunchOfScript>& launches = model.project().launched_by;
    if (!launches.empty() && launches.front().world_size > 0 && model.divides_by_world_size(bs))
      world = ", with the world size of " + std::to_string(launches.front().world_size) + " that " +
              launches.front().where() + " starts";
    ctx.report(node_start_byte(at), node_end_byte(at),
               "per-GPU batch of " + std::to_string(v.i) + world + " (below " + std::to_string(kTinyBatchThreshold) +
                   "): each step's kernels are too small to keep the GPU busy while the gradient all-reduce "
                   "costs the same as for a large batch");
  }
}
}  // namespace

// needs: reports the batch_size of DataLoader calls
extern const Rule kRuleDDP602{
    .info = {.code = "DDP602", .name = "tiny-per-gpu-batch", .severity = Severity::Info,
             .summary = "A distributed script whose per-rank batch size is a constant below the threshold (default 8)",
             .url = "https://pytorch.org/docs/stable/notes/ddp.html", .opt_in = true,
             .needs = "torch;DataLoader"},
    .check = &check};

}  // namespace ddplint::rules
