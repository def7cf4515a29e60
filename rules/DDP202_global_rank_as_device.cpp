// DDP202 global-rank-as-device: a global rank used as a CUDA device index.
#include <optional>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// A name that is a parameter of a function of this file: the function, the
// parameter's position among its parameters (self included), and whether the
// function takes `self` first. std::nullopt otherwise.
struct ParameterOf {
  const FunctionInfo* fn = nullptr;
  int position = -1;
  bool method = false;
};
std::optional<ParameterOf> parameter_of(const SemanticModel& model, TSNode expr) {
  const Kinds& k = kinds();
  if (node_symbol(expr) != k.identifier) return std::nullopt;
  BindingList bindings = model.bindings_of(model.text(expr), model.region_of(expr));
  if (bindings.size() != 1 || bindings[0]->kind != Binding::Kind::Parameter || bindings[0]->scope == 0)
    return std::nullopt;
  const Region& scope = model.regions()[bindings[0]->scope];
  if (scope.function < 0) return std::nullopt;
  ParameterOf out;
  out.fn = &model.functions()[scope.function];
  TSNode params = field(out.fn->node, k.f_parameters);
  if (node_is_null(params)) return std::nullopt;
  std::uint32_t at = node_start_byte(bindings[0]->target);
  int index = 0;
  for (TSNode p : children(params)) {
    if (!ts_node_is_named(p)) continue;
    if (at >= node_start_byte(p) && at < node_end_byte(p)) out.position = index;
    ++index;
  }
  out.method = index > 0 && model.text(ts_node_named_child(params, 0)).rfind("self", 0) == 0;
  return out;
}

bool global_rank(const SemanticModel& model, TSNode expr, int depth);

// True for a value that is a local rank or reduced to one: `x % n`,
// LOCAL_RANK from the environment, a name with "local" in it, `int()` of these.
bool local_rank_value(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 4) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return local_rank_value(model, parenthesized_inner(expr), depth + 1);
  if (s == k.binary_operator) return model.text(field(expr, k.f_operator)) == "%";
  std::string env = model.env_var_read(expr);
  if (!env.empty()) return env == "LOCAL_RANK" || env == "SLURM_LOCALID" || env == "OMPI_COMM_WORLD_LOCAL_RANK";
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    return c != nullptr && c->method == "int" && model.positional_count(*c) == 1 &&
           local_rank_value(model, model.argument(*c, "", 0), depth + 1);
  }
  if (s == k.identifier || s == k.attribute) return lowercase(model.last_name(expr)).find("local") != std::string::npos;
  return false;
}

// For a parameter of a function of this file (not one mp.spawn starts): what
// its callers pass decides. Called here: a global rank only if every call
// passes one (`run(dist.get_rank())`; `run(local_rank)` or `run(0)` is not).
// Never called here: its value comes from a caller in another file
// (stylegan2-ada's training_loop(rank=...) gets the mp.spawn index of a
// single-machine launcher from train.py), or from a function passed as a
// callback; unknown, so its name decides nothing. Returns std::nullopt for a
// name that is not such a parameter.
std::optional<bool> parameter_global_rank(const SemanticModel& model, TSNode expr, int depth) {
  std::optional<ParameterOf> param = parameter_of(model, expr);
  if (!param) return std::nullopt;
  // A function other files import (by name, or the module whole) has callers
  // there too, and what they pass is not known here (DINOv3's scoring helper
  // gets the global rank from its own file's test entry and the current
  // device from the training script): no claim. The caller that passes the
  // global rank is flagged where that rank becomes a device.
  const ProjectFacts& facts = model.project();
  const int f = static_cast<int>(param->fn - model.functions().data());
  if (model.is_top_level_function(f) && (facts.imported_whole || facts.imported_names.contains(param->fn->name)))
    return false;
  std::string_view name = model.text(expr);
  int calls = 0;
  for (const CallSite* c : model.calls_named(param->fn->name)) {
    ++calls;
    if (model.has_unpacked_arguments(*c)) return false;  // `run(**cfg)`: unknown
    int position = param->position < 0 ? -1 : param->position - (param->method && !node_is_null(c->receiver) ? 1 : 0);
    TSNode arg = model.argument(*c, name, position);
    if (node_is_null(arg)) return false;  // its default, or unknown
    if (!global_rank(model, arg, depth + 1)) return false;
  }
  if (calls == 0) return false;
  return true;
}

// A global rank: dist.get_rank(), os.environ["RANK"], or a name such as `rank`,
// `global_rank`, `ddp_rank` that is not bound to a local rank. `x % ngpus` and
// names with "local" are local ranks.
bool global_rank(const SemanticModel& model, TSNode expr, int depth) {
  if (node_is_null(expr) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return global_rank(model, parenthesized_inner(expr), depth + 1);
  std::string env = model.env_var_read(expr);
  if (!env.empty()) return env == "RANK" || env == "SLURM_PROCID" || env == "OMPI_COMM_WORLD_RANK";
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    if (!c) return false;
    if (c->canonical == "torch.distributed.get_rank" || c->method == "get_rank") return true;
    if (c->method == "int" && model.positional_count(*c) == 1) return global_rank(model, model.argument(*c, "", 0), depth + 1);
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    std::string name = lowercase(model.last_name(expr));
    TSNode bound = model.single_assignment(expr);
    if (!node_is_null(bound)) return global_rank(model, bound, depth + 1);
    // bound more than once, once to a local rank (`rank = rank %
    // torch.cuda.device_count()`, `rank %= n`, `rank = int(os.environ["LOCAL_RANK"])`
    // when set): which one reaches the device is not known here
    std::string path = model.path_of(expr);
    BindingList bindings = path.empty() ? BindingList{} : model.bindings_of(path, model.region_of(expr));
    if (bindings.size() > 1)
      for (const Binding* b : bindings)
        if (b->kind == Binding::Kind::Augmented || (b->kind == Binding::Kind::Assign && local_rank_value(model, b->value)))
          return false;
    if (name.find("local") != std::string::npos || model.spawned_process_index(expr)) return false;
    if (std::optional<bool> passed = parameter_global_rank(model, expr, depth)) return *passed;
    // by its name alone, only in a file that joins a process group (or reads
    // the launcher's rank variables): elsewhere `rank` is whatever the file
    // numbers (an evaluation pool's GPU index, `for rank, part in enumerate(...)`)
    if (!model.is_distributed()) return false;
    return name == "rank" || name == "global_rank" || name == "world_rank" || name == "ddp_rank" ||
           name == "proc_rank" || name == "process_rank";
  }
  return false;  // `rank % ngpus`, arithmetic: not a plain global rank
}

// A device expression that indexes a GPU by a global rank: the rank itself,
// f"cuda:{rank}", torch.device("cuda", rank), or a name bound to one of these.
bool global_rank_device(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.string) {
    bool cuda = false;
    for (TSNode c : children(expr)) {
      if (node_symbol(c) == k.string_content) cuda = cuda || model.text(c).rfind("cuda:", 0) == 0;
      if (node_symbol(c) == k.interpolation && cuda && ts_node_named_child_count(c) > 0 &&
          global_rank(model, ts_node_named_child(c, 0), 0))
        return true;
    }
    return false;
  }
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    if (c && c->canonical == "torch.device") {
      return global_rank_device(model, model.argument(*c, "type", 0), depth + 1) ||
             global_rank(model, model.argument(*c, "index", 1), 0);
    }
  }
  if (s == k.identifier || s == k.attribute) {
    TSNode bound = model.single_assignment(expr);
    if (!node_is_null(bound) && node_symbol(bound) != k.call && node_symbol(bound) != k.string)
      return global_rank(model, bound, depth + 1);
    if (!node_is_null(bound)) return global_rank_device(model, bound, depth + 1);
  }
  return global_rank(model, expr, depth + 1);
}

void report(const SemanticModel& model, RuleContext& ctx, TSNode at) {
  auto [start, end] = first_line_range(model, at);
  ctx.report(start, end,
             "a global rank used as a CUDA device index: on more than one node the global rank exceeds the GPUs "
             "of a node (rank 8 asks for cuda:8 on an 8-GPU machine); use the local rank "
             "(os.environ[\"LOCAL_RANK\"])");
}

void check(const SemanticModel& model, RuleContext& ctx) {
  // MASTER_ADDR set to this machine in code: the job cannot span nodes, so
  // the global rank is the local rank
  if (!model.uses_cuda() || model.pins_master_to_this_machine()) return;
  for (std::string_view set_device : {"torch.cuda.set_device", "torch.accelerator.set_device_index",
                                      "torch.accelerator.set_device_idx"}) {
    for (const CallSite* c : model.calls_to(set_device)) {
      TSNode d = model.argument(*c, "device", 0);
      if (global_rank_device(model, d)) report(model, ctx, d);
    }
  }
  for (std::string_view method : {"to", "cuda"}) {
    for (const CallSite* c : model.calls_named(method)) {
      if (node_is_null(c->receiver)) continue;
      TSNode d = model.argument(*c, "device", 0);
      if (global_rank_device(model, d)) report(model, ctx, d);
    }
  }
  for (const CallSite* c : model.calls_to(kDDP)) {
    TSNode ids = model.argument(*c, "device_ids", 1);
    if (node_is_null(ids)) continue;
    for (TSNode e : children(ids))
      if (global_rank_device(model, e)) report(model, ctx, e);
  }
}
}  // namespace

// needs: fires without torch: uses_cuda() (a "cuda"/"nccl" string, .cuda()) and .to(rank)/.cuda(rank)
extern const Rule kRuleDDP202{
    .info = {.code = "DDP202", .name = "global-rank-as-device", .severity = Severity::Error,
             .summary = "A global rank (dist.get_rank(), RANK, args.rank) used as a CUDA device index",
             .url = "https://pytorch.org/docs/stable/elastic/run.html#environment-variables",
             .needs = "torch|cuda|nccl"},
    .check = &check};

}  // namespace ddplint::rules
