// DDP204 data-parallel: torch.nn.DataParallel instead of DistributedDataParallel.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

#include <optional>

namespace ddplint::rules {

namespace {
// The file trains: it builds an optimizer, runs backward() or an optimizer
// step, or puts a module in training mode. An inference or evaluation
// script's DataParallel replicates no training step.
bool file_trains(const SemanticModel& model) {
  for (const CallSite& c : model.calls()) {
    if (model.is_training_call(c)) return true;
    if (is_optimizer_constructor(c.canonical)) return true;
    if (c.method == "train" && model.positional_count(c) == 0) return true;  // `model.train()`
  }
  return false;
}

// The wrap is the fallback of a distributed set-up: another branch of an
// enclosing `if`/`elif`/`else` wraps the model in DDP or FSDP, or starts a
// process group (`if config.distributed: ... DDP(...) elif ...:
// DataParallel(model)`). Which branch the project's runs take is a setting
// the file does not show: no claim. The same holds when the distributed
// wrap sits in an `if` of its own in the same function, beside the branch of
// the DataParallel wrap (`if args.n_gpu > 1: DataParallel(model)` then `if
// args.local_rank != -1: DDP(model)`, where launch mode decides the GPU count
// the first test sees).
bool fallback_of_distributed(const SemanticModel& model, TSNode wrap) {
  const Kinds& k = kinds();
  bool conditional = false;
  for (TSNode branch = ts_node_parent(wrap); !node_is_null(branch); branch = ts_node_parent(branch)) {
    TSSymbol s = node_symbol(branch);
    if (s == k.function_definition || s == k.class_definition || s == k.module) {
      if (!conditional) return false;
      std::uint32_t scope_start = node_start_byte(branch), scope_end = node_end_byte(branch);
      for (const CallSite& c : model.calls()) {
        std::uint32_t at = node_start_byte(c.node);
        if (at < scope_start || at >= scope_end || !(is_ddp_wrap(c.canonical) || c.canonical == "torch.distributed.init_process_group"))
          continue;
        // the distributed wrap is in this scope itself, not in a nested function, and under an `if` too
        bool nested = false, guarded = false;
        for (TSNode up = ts_node_parent(c.node); !node_is_null(up) && !node_eq(up, branch); up = ts_node_parent(up)) {
          TSSymbol u = node_symbol(up);
          if (u == k.function_definition || u == k.class_definition || u == k.lambda) nested = true;
          if (u == k.if_statement || u == k.elif_clause || u == k.else_clause) guarded = true;
        }
        if (!nested && guarded) return true;
      }
      return false;
    }
    if (s != k.block) continue;
    TSNode owner = ts_node_parent(branch);
    if (node_is_null(owner)) return false;
    TSSymbol o = node_symbol(owner);
    TSNode chain = o == k.if_statement ? owner : (o == k.elif_clause || o == k.else_clause) ? ts_node_parent(owner) : TSNode{};
    if (node_is_null(chain) || node_symbol(chain) != k.if_statement) continue;
    conditional = true;
    std::uint32_t in_start = node_start_byte(branch), in_end = node_end_byte(branch);
    std::uint32_t chain_start = node_start_byte(chain), chain_end = node_end_byte(chain);
    for (const CallSite& c : model.calls()) {
      std::uint32_t at = node_start_byte(c.node);
      if (at < chain_start || at >= chain_end || (at >= in_start && at < in_end)) continue;
      if (is_ddp_wrap(c.canonical) || c.canonical == "torch.distributed.init_process_group") return true;
    }
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  std::optional<bool> trains;
  for (const CallSite* call : model.calls_to(kDataParallel)) {
    // a wrap in a helper another file calls serves that file's training;
    // otherwise this file must train
    int f = model.top_level_function_of(call->node);
    bool called_elsewhere = f >= 0 && model.project().result_uses.contains(model.functions()[f].name);
    if (!called_elsewhere) {
      if (!trains) trains = file_trains(model);
      if (!*trains) continue;
    }
    if (fallback_of_distributed(model, call->node)) continue;
    ctx.report(node_start_byte(call->callee), node_end_byte(call->callee),
               "torch.nn.DataParallel drives every GPU from one Python process: it copies the model to each "
               "GPU every step and gathers outputs on the first one; DistributedDataParallel (one process "
               "per GPU) is faster even on one machine");
  }
  // Fabric's (and Lightning 1.x's Trainer's) "dp" strategy is DataParallel
  // (lightning/fabric/strategies/dp.py: DataParallelStrategy wraps the module
  // in torch.nn.DataParallel)
  for (const FrameworkStrategy& st : framework_strategies(model)) {
    if (st.name != "dp") continue;
    Value device = model.value_of(model.argument(*st.config->call, "accelerator"));
    if (device.kind == Value::Kind::Str && device.s == "cpu") continue;  // no GPUs to drive
    TSNode at = argument_node(model, *st.config->call, st.value);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "strategy=\"dp\" is torch.nn.DataParallel: one Python process drives every GPU, copies the model to "
               "each GPU every step and gathers outputs on the first one; strategy=\"ddp\" (one process per GPU) "
               "is faster even on one machine");
  }
}
}  // namespace

// needs: DataParallel calls (torch.nn.DataParallel, torch.nn.parallel.DataParallel), or a
// Lightning/Fabric strategy="dp" (the word dp)
extern const Rule kRuleDDP204{
    .info = {.code = "DDP204", .name = "data-parallel", .severity = Severity::Warning,
             .summary = "torch.nn.DataParallel: single-process, replicates the model every step; use DDP",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html",
             .needs = "DataParallel|dp"},
    .check = &check};

}  // namespace ddplint::rules
