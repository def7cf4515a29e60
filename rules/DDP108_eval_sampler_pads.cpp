// DDP108 eval-sampler-pads: a DistributedSampler on an evaluation loader repeats samples.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite* s : model.calls_to("torch.utils.data.DistributedSampler")) {
    if (model.has_unpacked_arguments(*s)) continue;
    // DistributedSampler(dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False)
    TSNode drop = model.argument(*s, "drop_last", 5);
    if (!node_is_null(drop)) {
      Value v = model.value_of(drop);
      if (!v.known() || v.truthy()) continue;
    }
    Value shuffle = model.value_of(model.argument(*s, "shuffle", 3));
    bool not_shuffled = shuffle.known() && !shuffle.truthy();
    // named for evaluation: the sampler, or the loader it is passed to inline
    bool named_eval = evaluation_name(model.last_name(model.assigned_to(s->node)));
    if (!named_eval) {
      TSNode dataset = model.argument(*s, "dataset", 0);
      named_eval = !node_is_null(dataset) && evaluation_name(model.last_name(dataset));
    }
    if (!not_shuffled && !named_eval) continue;
    ctx.report(node_start_byte(s->callee), node_end_byte(s->callee),
               "DistributedSampler on an evaluation set with drop_last=False pads the last shard by repeating "
               "samples, so metrics gathered across ranks count some samples twice; trim to len(dataset) or "
               "evaluate without padding");
  }
}
}  // namespace

// needs: reports DistributedSampler calls
extern const Rule kRuleDDP108{
    .info = {.code = "DDP108", .name = "eval-sampler-pads", .severity = Severity::Info,
             .summary = "A DistributedSampler on an evaluation loader with drop_last=False: duplicated samples skew metrics",
             .url = "https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler",
             .opt_in = true,
             .needs = "torch;DistributedSampler"},
    .check = &check};

}  // namespace ddplint::rules
