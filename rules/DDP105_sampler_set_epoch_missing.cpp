// DDP105 sampler-set-epoch-missing: a shuffling DistributedSampler never re-seeded per epoch.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// The file has an epoch loop: a training loop that contains a step loop, or any
// loop around a call of a function that trains.
bool has_epoch_loop(const SemanticModel& model) {
  for (std::size_t r = 0; r < model.regions().size(); ++r) {
    const Region& reg = model.regions()[r];
    if (reg.kind != Region::Kind::Loop || model.is_step_loop(static_cast<int>(r))) continue;
    if (model.in_training_loop(reg.node) || model.in_training_loop(field(reg.node, kinds().f_body))) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  auto samplers = model.calls_to("torch.utils.data.DistributedSampler");
  if (samplers.empty()) return;
  // any set_epoch call counts: `sampler.set_epoch(e)`, `loader.sampler.set_epoch(e)`, helpers
  if (!model.calls_named("set_epoch").empty()) return;
  if (!has_epoch_loop(model)) return;
  for (const CallSite* s : samplers) {
    // DistributedSampler(dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False)
    TSNode shuffle = model.argument(*s, "shuffle", 3);
    if (!node_is_null(shuffle)) {
      Value v = model.value_of(shuffle);
      if (!v.known() || !v.truthy()) continue;  // shuffle=False, or unknown
    }
    if (model.has_unpacked_arguments(*s)) continue;
    // an evaluation sampler (`val_sampler`, or over `eval_dataset`): the order of
    // an averaged evaluation does not matter
    // (the sampler may be one arm of a conditional expression:
    // `SequentialSampler(ds) if local_rank == -1 else DistributedSampler(ds)`)
    TSNode value = s->node;
    for (TSNode p = ts_node_parent(value); !node_is_null(p); value = p, p = ts_node_parent(p)) {
      TSSymbol ps = node_symbol(p);
      if (ps == kinds().parenthesized_expression) continue;
      if (ps == kinds().conditional_expression && !node_eq(ts_node_named_child(p, 1), value)) continue;
      break;
    }
    if (evaluation_name(model.last_name(model.assigned_to(value))) ||
        evaluation_name(model.last_name(model.argument(*s, "dataset", 0))))
      continue;
    ctx.report(node_start_byte(s->callee), node_end_byte(s->callee),
               "DistributedSampler shuffles with a seed fixed to the epoch it is told, and nothing calls "
               "sampler.set_epoch(epoch): every epoch visits the samples in the same order");
  }
}
}  // namespace

// needs: reports DistributedSampler calls in a file with an epoch loop (a training loop: backward()/.step())
extern const Rule kRuleDDP105{
    .info = {.code = "DDP105", .name = "sampler-set-epoch-missing", .severity = Severity::Warning,
             .summary = "A shuffling DistributedSampler in an epoch loop with no sampler.set_epoch(epoch): same order every epoch",
             .url = "https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler",
             .needs = "torch;DistributedSampler;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
