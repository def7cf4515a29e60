// DDP301 manual-gradient-allreduce: gradients of a DDP model reduced again by hand.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

/// True for all_reduce/reduce/broadcast calls on gradients in a script that wraps
/// a model in DDP or FSDP (shared with DDP302, which skips these).
bool is_manual_gradient_reduce(const SemanticModel& model, const CallSite& call) {
  if (!model.wraps_ddp()) return false;
  std::string_view c = call.canonical;
  if (c != "torch.distributed.all_reduce" && c != "torch.distributed.reduce" &&
      c != "torch.distributed.broadcast" && c != "torch.distributed.all_reduce_coalesced")
    return false;
  TSNode tensor = model.argument(call, c == "torch.distributed.all_reduce_coalesced" ? "tensors" : "tensor", 0);
  if (node_is_null(tensor) || !mentions_gradient(model, tensor) || in_autograd_function_backward(model, call.node))
    return false;
  // over a group of its own (`group=spatial_group`, a tensor- or
  // model-parallel subgroup): a reduction DDP's data-parallel all-reduce does
  // not make (`group=None` and `dist.group.WORLD` are DDP's default group)
  const int group_slot = c == "torch.distributed.all_reduce" || c == "torch.distributed.broadcast" ? 2 : 3;
  TSNode group = model.argument(call, "group", group_slot);
  if (node_is_null(group)) return !model.has_unpacked_arguments(call);
  if (model.value_of(group).kind == Value::Kind::None) return true;
  std::string name = model.canonical_name(group);
  return name == "torch.distributed.group.WORLD" || name == "torch.distributed.GroupMember.WORLD";
}

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.wraps_ddp()) return;
  for (const CallSite& call : model.calls()) {
    if (!is_manual_gradient_reduce(model, call)) continue;
    auto [start, end] = first_line_range(model, call.node);
    ctx.report(start, end,
               std::string("`") + std::string(call.method) +
                   "` on gradients of a DistributedDataParallel model: DDP already all-reduces gradients "
                   "during backward(), so they are synchronised twice (and averaged values get summed again)");
  }
}
}  // namespace

// needs: a DDP/FSDP wrap (wraps_ddp()) and an all_reduce/reduce/broadcast/all_reduce_coalesced call
extern const Rule kRuleDDP301{
    .info = {.code = "DDP301", .name = "manual-gradient-allreduce", .severity = Severity::Error,
             .summary = "all_reduce/reduce/broadcast on .grad of a model that DDP already synchronises",
             .url = "https://pytorch.org/docs/stable/notes/ddp.html",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel|fully_shard;reduce|broadcast"},
    .check = &check};

}  // namespace ddplint::rules
