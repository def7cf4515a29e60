// DDP501 no-mixed-precision: a CUDA training loop with no autocast and no half-precision model.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// A reduced-precision dtype's canonical name.
bool half_dtype_name(std::string_view d) { return d == "torch.float16" || d == "torch.half" || d == "torch.bfloat16"; }

// `torch.bfloat16`, or a name bound once to an expression that may be one
// (`dtype = torch.bfloat16 if bf16_ok else torch.float32`): a model cast with
// `.to(dtype)` may train in half precision, so no claim.
bool may_be_half_dtype(const SemanticModel& model, TSNode e, int depth) {
  if (node_is_null(e) || depth > 4) return false;
  if (half_dtype_name(model.canonical_name(e))) return true;
  if (node_symbol(e) == kinds().identifier) return may_be_half_dtype(model, model.single_assignment(e), depth + 1);
  if (node_symbol(e) == kinds().conditional_expression || node_symbol(e) == kinds().parenthesized_expression) {
    for (TSNode ch : children(e))
      if (may_be_half_dtype(model, ch, depth + 1)) return true;
  }
  return false;
}

// Anything that makes the step run in reduced precision: autocast (any
// spelling, also as a decorator), a half/bfloat16 model or default dtype,
// or mixed precision set up by a framework (Accelerator, Lightning).
bool uses_reduced_precision(const SemanticModel& model) {
  // autocast or a scaler referenced in any form (`partial(torch.autocast, ...)`,
  // `amp_autocast = ...`, a config key): the script already knows about AMP
  // (a `# TODO: try autocast` or a docstring is not a use)
  for (std::string_view word : {"autocast", "GradScaler", "mixed_precision", "MixedPrecision", "mp_policy"})
    if (model.mentions_in_code(word)) return true;
  for (const CallSite& c : model.calls()) {
    std::string_view m = c.method;
    if (m == "autocast" || m == "half" || m == "bfloat16") return true;
    if (c.canonical == "torch.set_default_dtype") return true;
    // apex AMP (`from apex import amp; amp.initialize(model, optimizer, opt_level="O1")`):
    // mixed precision, by a deprecated route
    if (c.canonical == "apex.amp.initialize") return true;
    // from_pretrained(..., torch_dtype=torch.bfloat16) (newer transformers: dtype=);
    // "auto" takes the checkpoint's dtype: unknown, so not guessed
    if (c.method == "from_pretrained") {
      for (std::string_view key : {"torch_dtype", "dtype"}) {
        TSNode d = model.argument(c, key);
        if (node_is_null(d)) continue;
        std::string name = model.canonical_name(d);
        Value v = model.value_of(d);
        if (half_dtype_name(name) || (v.kind == Value::Kind::Str && v.s == "auto") || (!v.known() && name.empty()))
          return true;
      }
    }
    if (m == "to") {
      for (TSNode a : {model.argument(c, "dtype", 0), model.argument(c, "", 1)})
        if (may_be_half_dtype(model, a, 0)) return true;
    }
    // Accelerator(mixed_precision=...), Trainer(precision=...), Fabric(precision=...)
    for (const Argument& a : model.arguments(c)) {
      if (a.kind != Argument::Kind::Keyword || (a.keyword != "mixed_precision" && a.keyword != "precision")) continue;
      TSNode p = model.argument(c, a.keyword);  // the first such keyword, as Python would reject a repeat
      Value v = model.value_of(p);
      if (!v.known() || (v.kind == Value::Kind::Str && v.s != "no" && v.s != "32" && v.s != "32-true" &&
                         v.s != "fp32")) {
        return true;  // unknown or a reduced precision: do not guess
      }
      if (v.kind == Value::Kind::Int && v.i == 16) return true;
    }
  }
  for (TSNode d : model.decorators()) {
    if (model.text(d).find("autocast") != std::string_view::npos) return true;
  }
  // a framework whose precision is not written here comes from the launch:
  // Accelerate's from ACCELERATE_MIXED_PRECISION, which `accelerate launch`
  // exports from its config (accelerate/state.py, utils/launch.py), Fabric's
  // from LT_PRECISION (`fabric run`), TrainingArguments' from the command line
  // (HfArgumentParser): unknown, so not guessed
  for (const FrameworkConfig& config : model.framework_configs())
    if (config.framework != Framework::Lightning) return true;
  return false;
}

// The file builds or wraps the model it trains (a torch.nn module, a DDP/FSDP
// wrap, a pretrained model). A training loop that only receives its model as a
// parameter cannot know the precision the caller set up (FSDP MixedPrecision).
bool builds_model(const SemanticModel& model) {
  if (model.wraps_ddp()) return true;
  for (const CallSite& c : model.calls()) {
    std::string_view cn = c.canonical;
    if (cn.rfind("torch.nn.", 0) == 0 && cn.find("functional") == std::string_view::npos &&
        cn.find(".utils.") == std::string_view::npos && cn.find(".init.") == std::string_view::npos)
      return true;
    if (c.method == "from_pretrained" || cn.rfind("torchvision.models", 0) == 0 || cn.rfind("timm.", 0) == 0) return true;
  }
  return false;
}

// True when the file is part of a job spread over several GPUs: it joins a
// process group, wraps in DDP/FSDP or reads the launcher's variables, starts
// its worker processes (mp.spawn, a Lightning Trainer or Fabric), configures
// Accelerate or the HF Trainer, or splits batches with DataParallel. A
// one-process, one-GPU script gives no sign that its model is large enough
// for Tensor Cores to decide the step (RL agents and tutorials train MLPs
// whose steps are bound by kernel launches): no claim.
bool multi_gpu_job(const SemanticModel& model) {
  return model.is_distributed() || model.starts_processes() || !model.framework_configs().empty() ||
         !model.calls_to(kDataParallel).empty();
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda() || !model.trains() || !builds_model(model) || !multi_gpu_job(model)) return;
  int first_step_loop = -1;
  for (std::size_t r = 0; r < model.regions().size(); ++r) {
    if (model.is_step_loop(static_cast<int>(r))) {
      first_step_loop = static_cast<int>(r);
      break;
    }
  }
  if (first_step_loop < 0 || uses_reduced_precision(model)) return;
  // the loop trains a model handed in by a caller in another file (`def
  // train(model, ...)`, never called here): its precision (FSDP
  // MixedPrecision, an autocast around the call) is set there
  int scope = model.regions()[first_step_loop].scope;
  if (model.regions()[scope].kind == Region::Kind::Function &&
      model.callers_of(model.regions()[scope].function).empty()) {
    for (const Binding& b : model.bindings()) {
      if (b.kind != Binding::Kind::Parameter || b.scope != scope) continue;
      std::string_view name = model.text(b.target);
      if (name.find("model") != std::string_view::npos || name.find("net") != std::string_view::npos) return;
    }
  }
  auto [start, end] = first_line_range(model, model.regions()[first_step_loop].node);
  ctx.report(start, end,
             "CUDA training loop in float32 with no autocast: Tensor Cores run matrix multiplies several times "
             "faster in bfloat16/float16; wrap the forward pass and loss in torch.autocast(\"cuda\", "
             "dtype=torch.bfloat16)");
}
}  // namespace

// needs: fires without torch: uses_cuda(), trains() (backward()/.step()), a model from from_pretrained() or timm
extern const Rule kRuleDDP501{
    .info = {.code = "DDP501", .name = "no-mixed-precision", .severity = Severity::Info,
             .summary = "A CUDA training loop of a multi-GPU job with no autocast and no half/bfloat16 model",
             .url = "https://pytorch.org/docs/stable/amp.html",
             .needs = "torch|cuda|nccl;torch|from_pretrained|timm;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
