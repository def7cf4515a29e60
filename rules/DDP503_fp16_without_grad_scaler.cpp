// DDP503 fp16-without-grad-scaler: float16 autocast in training with no GradScaler.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// A function of this file has that name: a helper we can read, not hidden code.
bool defined_here(const SemanticModel& model, std::string_view name) {
  for (const FunctionInfo& f : model.functions())
    if (f.name == name) return true;
  return false;
}

// True when `expr` is a name bound to an instance of a class this file
// defines (`weights = LossWeights()`): its methods are in the file.
bool instance_of_local_class(const SemanticModel& model, TSNode expr) {
  TSNode bound = model.single_assignment(expr);
  if (node_is_null(bound) || node_symbol(bound) != kinds().call) return false;
  const CallSite* made = model.call_at(bound);
  if (made == nullptr || node_is_null(made->callee) || node_symbol(made->callee) != kinds().identifier) return false;
  for (const Binding* b : model.bindings_of(model.text(made->callee), 0))
    if (b->kind == Binding::Kind::Definition && node_symbol(ts_node_parent(b->target)) == kinds().class_definition)
      return true;
  return false;
}

// True when `expr` names a training framework's object: bound to
// `accelerate.Accelerator(...)`, `lightning...Fabric(...)`, a
// `deepspeed.initialize(...)` result, or named `accelerator`, `fabric`,
// `engine` or `model_engine`.
bool framework_object(const SemanticModel& model, TSNode expr) {
  std::string name = lowercase(model.last_name(expr));
  if (name == "accelerator" || name == "fabric" || name == "engine" || name == "model_engine") return true;
  TSNode bound = model.single_assignment(expr);
  const CallSite* made = !node_is_null(bound) && node_symbol(bound) == kinds().call ? model.call_at(bound) : nullptr;
  if (made == nullptr) return false;
  for (std::string_view prefix : {"accelerate.", "lightning.", "lightning_fabric.", "pytorch_lightning.", "deepspeed."})
    if (made->canonical.rfind(prefix, 0) == 0) return true;
  return false;
}

bool optimizer_name(std::string_view name) {
  std::string n = lowercase(name);
  return n.find("optim") != std::string::npos || n == "opt" || n.rfind("opt_", 0) == 0;
}

// A GradScaler made here, or the backward handed to code this file does not
// show: a callable named like a loss scaler (`loss_scaler(loss, optimizer)`,
// the MAE/ConvNeXt NativeScaler class of another module, which holds a
// GradScaler), or an unknown callable given both the loss and the optimizer.
// Whether that code scales the loss is unknown, so the rule stays silent.
bool has_grad_scaler(const SemanticModel& model) {
  const Kinds& k = kinds();
  for (const CallSite& c : model.calls()) {
    if (c.method.ends_with("GradScaler")) return true;  // torch.amp, torch.cuda.amp, ShardedGradScaler
    // a GradScaler made elsewhere and used here (`def train(..., scaler)`):
    // `scaler.scale(loss)` (then back-propagated, however spelled),
    // `scaler.unscale_(optimizer)`; not an object of a class this file
    // defines (`weights.scale(loss)` of a `class LossWeights`)
    if (!node_is_null(c.receiver) && (c.method == "scale" || c.method == "unscale_") && c.argument_count >= 1 &&
        !instance_of_local_class(model, c.receiver))
      return true;
    // the backward of a framework that scales the loss itself when set to
    // float16: Accelerate's `accelerator.backward(loss)` (its GradScaler,
    // accelerate/accelerator.py), Lightning Fabric's `fabric.backward(loss)`,
    // DeepSpeed's `engine.backward(loss)` (its loss scaler)
    if (c.method == "backward" && !node_is_null(c.receiver) && c.argument_count >= 1 && framework_object(model, c.receiver))
      return true;
    // in a file that makes a DeepSpeed engine, `model.backward(loss)` on an
    // engine handed to a function as a parameter: a tensor's backward takes
    // the loss as its receiver (a positional gradient is rare), and a module
    // has no backward method, so this is the engine's
    if (c.method == "backward" && !node_is_null(c.receiver) && c.argument_count >= 1 &&
        !model.calls_to("deepspeed.initialize").empty() &&
        lowercase(model.last_name(c.receiver)).find("loss") == std::string::npos)
      return true;
    if (is_timm_loss_scaler(c.canonical)) return true;  // holds a GradScaler (or scales through apex)
    if (c.canonical.rfind("torch.", 0) == 0 || defined_here(model, c.method)) continue;
    std::string callee = lowercase(model.last_name(c.callee));
    if (callee.find("scaler") != std::string::npos && callee != "scale") return true;
    bool optimizer = false, loss = false;
    for (TSNode arg : children(field(c.node, k.f_arguments))) {
      if (!ts_node_is_named(arg)) continue;
      TSNode value = node_symbol(arg) == k.keyword_argument ? field(arg, k.f_value) : arg;
      std::string_view name = model.last_name(value);
      optimizer = optimizer || optimizer_name(name);
      loss = loss || lowercase(name).find("loss") != std::string::npos;
    }
    if (optimizer && loss) return true;
  }
  return false;
}

// True when the autocast `call` is an item of a `with` that also turns
// autograd off: `with torch.no_grad(), torch.autocast("cuda"):`.
bool with_no_grad_beside(const SemanticModel& model, const CallSite& call) {
  const Kinds& k = kinds();
  TSNode n = call.node;
  for (int up = 0; up < 4 && !node_is_null(n); ++up, n = ts_node_parent(n)) {
    if (node_symbol(n) != k.with_statement) continue;
    for (TSNode value : with_item_values(n)) {
      const CallSite* c = node_symbol(value) == k.call ? model.call_at(value) : nullptr;
      if (c != nullptr && (c->canonical == "torch.no_grad" || c->canonical == "torch.inference_mode" ||
                           c->method == "no_grad" || c->method == "inference_mode"))
        return true;
    }
    return false;
  }
  return false;
}

// True when the function holding `node` (its scope) itself runs backward() or
// an optimizer step: the autocast there is part of a training step. The module
// counts as such a scope when the node is in a training loop.
bool trains_in_scope(const SemanticModel& model, TSNode node) {
  int scope = model.regions()[model.region_of(node)].scope;
  if (scope == 0) return model.in_training_loop(node);
  for (const CallSite& c : model.calls())
    if (model.is_training_call(c) && model.regions()[model.region_of(c.node)].scope == scope) return true;
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.trains()) return;
  bool scaler_checked = false, scaler = false;
  for (const CallSite& call : model.calls()) {
    if (autocast_precision(model, call) != "fp16") continue;
    // with autograd off (validation, a preview) no gradient can underflow
    if (under_no_grad(model, call.node) || with_no_grad_beside(model, call)) continue;
    // a LightningModule: the Trainer backpropagates the loss its
    // training_step returns, through its precision plugin, which under
    // "16-mixed" scales it with a GradScaler (lightning/pytorch/plugins/
    // precision/amp.py); that precision is set where the Trainer is made
    if (model.in_lightning_module(call.node)) continue;
    // an autocast in a function that trains, or in a helper run on every step
    // (`loss = compute_loss(x)`); one in a function without backward that runs
    // only now and then (validation images every N steps) computes no gradients
    if (!model.in_training_loop(call.node) && !model.runs_every_step(call.node, 0)) continue;
    if (!trains_in_scope(model, call.node) && !model.runs_every_step(call.node, kRareGuards)) continue;
    if (!scaler_checked) scaler = has_grad_scaler(model), scaler_checked = true;
    if (scaler) return;
    // A float16 path the launched configuration does not take (`--precision`
    // defaults to bf16): a certain gap in an option, whose cost depends on the run.
    if ((model.enclosing_guards(call.node) & kGuardOffByDefault) || model.unselected_option(call.node)) {
      ctx.report_at(Severity::Info, node_start_byte(call.callee), node_end_byte(call.callee),
                    "float16 autocast with no GradScaler on a path the configuration does not take by default: "
                    "a run that chooses it underflows small gradients to zero; scale the loss with "
                    "torch.amp.GradScaler(\"cuda\") there, or offer bfloat16 only");
      continue;
    }
    ctx.report(node_start_byte(call.callee), node_end_byte(call.callee),
               "float16 autocast in a training loop with no GradScaler: small gradients underflow to zero in "
               "float16; scale the loss with torch.amp.GradScaler(\"cuda\"), or use dtype=torch.bfloat16");
  }
}
}  // namespace

// needs: reports fp16 autocast calls (autocast_precision) in a file that trains
extern const Rule kRuleDDP503{
    .info = {.code = "DDP503", .name = "fp16-without-grad-scaler", .severity = Severity::Error,
             .summary = "float16 autocast in a training loop with no GradScaler: gradients underflow",
             .url = "https://pytorch.org/docs/stable/amp.html#gradient-scaling",
             .needs = "torch;autocast;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
