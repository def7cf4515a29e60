// DDP207 ddp-module-forward: model.module(...) in the training loop bypasses DDP.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// `x` is bound (anywhere in its scope chain, or as an attribute path) to a
// DistributedDataParallel / FSDP wrap.
bool ddp_wrapped(const SemanticModel& model, TSNode x) {
  std::string path = model.path_of(x);
  if (path.empty()) return false;
  for (const Binding* b : model.bindings_of(path, model.region_of(x))) {
    if (b->kind != Binding::Kind::Assign || node_is_null(b->value) || node_symbol(b->value) != kinds().call)
      continue;
    const CallSite* c = model.call_at(b->value);
    if (c && is_ddp_wrap(c->canonical)) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.wraps_ddp()) return;
  const Kinds& k = kinds();
  for (const CallSite& call : model.calls()) {
    // model.module(...) or model.module.forward(...)
    TSNode module_attr{};
    if (call.method == "module" && !node_is_null(call.receiver)) module_attr = call.callee;
    if (call.method == "forward" && !node_is_null(call.receiver) && node_symbol(call.receiver) == k.attribute &&
        model.text(field(call.receiver, k.f_attribute)) == "module")
      module_attr = call.receiver;
    if (node_is_null(module_attr)) continue;
    if (!ddp_wrapped(model, field(module_attr, k.f_object))) continue;
    if (!model.in_training_loop(call.node) && !model.runs_every_step(call.node, 0)) continue;
    if (under_no_grad(model, call.node)) continue;
    auto [start, end] = first_line_range(model, call.node);
    ctx.report(start, end,
               "forward through `.module` of a DDP-wrapped model in the training loop: DDP's hooks do not run, "
               "so this forward's gradients are not synchronised across ranks; call the wrapped model");
  }
}
}  // namespace

// needs: reports `.module` calls of a DDP/FSDP-wrapped name in a training loop
extern const Rule kRuleDDP207{
    .info = {.code = "DDP207", .name = "ddp-module-forward", .severity = Severity::Error,
             .summary = "model.module(...) in the training loop of a DDP-wrapped model: gradients are not synchronised",
             .url = "https://pytorch.org/docs/stable/notes/ddp.html",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel;module;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
