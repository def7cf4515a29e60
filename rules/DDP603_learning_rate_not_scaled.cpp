// DDP603 learning-rate-not-scaled: the global batch grows with world_size, the LR stays constant.
#include <vector>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// Somewhere the learning rate is multiplied by (or divided into) a world-size
// value: `lr * world_size`, `args.lr * dist.get_world_size()`, a line naming
// lr that multiplies by the GPU count.
bool lr_scaled_somewhere(const SemanticModel& model) {
  const Kinds& k = kinds();
  for (const Binding& b : model.bindings()) {
    std::string target = lowercase(model.last_name(b.target));
    if (target.find("lr") == std::string::npos && target.find("learning_rate") == std::string::npos) continue;
    TSNode v = b.value;
    if (node_is_null(v)) continue;
    std::vector<TSNode> stack{v};
    for (int budget = 256; !stack.empty() && budget > 0; --budget) {
      TSNode n = stack.back();
      stack.pop_back();
      if (node_symbol(n) == k.binary_operator || node_symbol(n) == k.augmented_assignment) {
        if (model.is_world_size_value(field(n, k.f_left)) || model.is_world_size_value(field(n, k.f_right)))
          return true;
      }
      for (TSNode c : children(n)) stack.push_back(c);
    }
    if (node_symbol(v) == k.augmented_assignment || b.kind == Binding::Kind::Augmented) {
      if (model.is_world_size_value(field(v, k.f_right))) return true;
    }
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.is_distributed()) return;
  // the per-rank batch is fixed (no loader divides it by the world size)
  bool any_loader = false;
  for (const CallSite* c : model.calls_to(kDataLoader)) {
    if (evaluation_loader(model, *c)) continue;
    TSNode batch = model.argument(*c, "batch_size", 1);
    // `DataLoader(ds, **kwargs)`: its batch size is not known here
    if (node_is_null(batch) && model.has_unpacked_arguments(*c)) return;
    any_loader = true;
    if (model.divides_by_world_size(batch)) return;
  }
  if (!any_loader) return;
  // optimizers built with a constant learning rate: what the rule reports
  // (found first: most scripts have none, and the checks below cost more)
  std::vector<std::pair<const CallSite*, TSNode>> constant_lrs;  // (optimizer call, its lr)
  for (const CallSite& c : model.calls()) {
    if (!is_optimizer_constructor(c.canonical)) continue;
    TSNode lr = model.argument(c, "lr", 1);
    if (node_is_null(lr)) continue;
    Value v = model.value_of(lr);
    if (!v.is_number()) continue;  // unknown: a schedule or a computed value
    constant_lrs.emplace_back(&c, lr);
  }
  if (constant_lrs.empty() || lr_scaled_somewhere(model)) return;
  // something else is divided by the world size (accumulation steps, tokens per
  // rank): the script keeps a global quantity fixed, so the batch may not grow
  for (const Binding& b : model.bindings())
    if (!node_is_null(b.value) && model.divides_by_world_size(b.value)) return;
  for (auto [call, lr] : constant_lrs) {
    TSNode at = argument_node(model, *call, lr);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "constant learning rate while the global batch (per-GPU batch x world_size) grows with the number "
               "of GPUs: tuned for one GPU count, the step size is off for another; scale it with world_size "
               "(linear scaling with warm-up) or state the global batch it was tuned for");
  }
}
}  // namespace

// needs: a training DataLoader, and reports torch.optim optimizers' lr
extern const Rule kRuleDDP603{
    .info = {.code = "DDP603", .name = "learning-rate-not-scaled", .severity = Severity::Info,
             .summary = "Per-rank batch fixed (global batch grows with world_size) while the learning rate is a constant",
             .url = "https://pytorch.org/docs/stable/notes/ddp.html", .opt_in = true,
             .needs = "torch;DataLoader;optim"},
    .check = &check};

}  // namespace ddplint::rules
