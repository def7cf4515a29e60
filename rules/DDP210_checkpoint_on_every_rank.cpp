// DDP210 checkpoint-on-every-rank: torch.save not guarded by a rank-0 check.
#include <algorithm>
#include <map>
#include <vector>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// An early exit for the other ranks before `node` in its function:
// `if rank != 0: return`, `if not is_main_process(): return`, and a function
// that refuses a run of several processes (`if dist.get_world_size() != 1:
// raise RuntimeError(...)`): only one process gets past it.
bool early_return_for_other_ranks(const SemanticModel& model, TSNode node) {
  int scope = model.regions()[model.region_of(node)].scope;
  const Kinds& k = kinds();
  // only the regions inside the scope whose bodies start before the node (not
  // every region of the file for every torch.save: quadratic in a long file)
  const std::uint32_t before = std::min(model.region_range(scope).second, node_start_byte(node));
  for (std::size_t i = static_cast<std::size_t>(scope) + 1;
       i < model.regions().size() && model.region_range(static_cast<int>(i)).first < before; ++i) {
    const Region& r = model.regions()[i];
    if (r.kind != Region::Kind::Branch || r.negated || r.scope != scope) continue;
    if (node_end_byte(r.node) > node_start_byte(node)) continue;
    std::string_view body = model.text(field(r.node, k.f_consequence));
    if (model.several_processes_test(r.condition, false) && (body.starts_with("return") || body.starts_with("raise")))
      return true;
    if (!(model.classify_condition(r.condition, true) & kGuardMainProcess)) continue;
    if (body.rfind("return", 0) == 0) return true;
  }
  return false;
}

// Function `f` is handed to a call of this file as a value (`mp.spawn(main_worker,
// ...)`, `Process(target=run)`): whatever starts it runs it on every rank.
bool passed_as_argument(const SemanticModel& model, int f) {
  std::string_view name = model.functions()[static_cast<std::size_t>(f)].name;
  for (const CallSite& call : model.calls())
    for (const Argument& a : model.arguments(call))
      if (!node_is_null(a.value) && node_symbol(a.value) == kinds().identifier && model.text(a.value) == name) return true;
  return false;
}

// For a method: its class (the function's definition is in the class body,
// decorated or not); null otherwise.
TSNode class_of_method(TSNode def) {
  TSNode p = ts_node_parent(def);
  if (!node_is_null(p) && node_symbol(p) == kinds().decorated_definition) p = ts_node_parent(p);
  if (node_is_null(p) || node_symbol(p) != kinds().block) return TSNode{};
  p = ts_node_parent(p);
  return !node_is_null(p) && node_symbol(p) == kinds().class_definition ? p : TSNode{};
}

// The calls of a method that callers_of does not resolve: through `self` in
// its own class (`self._snapshot(epoch)`), and on an instance the file makes
// (`Trainer(...).fit(30)`, or `t.fit(30)` after `t = Trainer(...)`).
std::vector<TSNode> method_calls(const SemanticModel& model, int f) {
  std::vector<TSNode> out;
  const FunctionInfo& info = model.functions()[static_cast<std::size_t>(f)];
  TSNode cls = class_of_method(info.node);
  if (node_is_null(cls)) return out;
  std::string_view class_name = model.text(field(cls, kinds().f_name));
  auto instance = [&](TSNode receiver) {
    TSNode v = node_symbol(receiver) == kinds().call ? receiver : model.single_assignment(receiver);
    if (node_is_null(v) || node_symbol(v) != kinds().call) return false;
    TSNode callee = field(v, kinds().f_function);
    return !node_is_null(callee) && node_symbol(callee) == kinds().identifier && model.text(callee) == class_name;
  };
  for (const CallSite* c : model.calls_named(info.name)) {
    if (node_is_null(c->receiver)) continue;
    bool self = node_symbol(c->receiver) == kinds().identifier && model.text(c->receiver) == "self" &&
                node_start_byte(c->node) >= node_start_byte(cls) && node_end_byte(c->node) <= node_end_byte(cls);
    if (self || instance(c->receiver)) out.push_back(c->node);
  }
  return out;
}

// Which ranks run `node`.
enum class Ranks { MainOnly, Every, Unknown };

// MainOnly: under a rank-0 guard here, after an early return for the other
// ranks, or in a function whose every call is. Every: at module level, in a
// function handed to a process launcher, or on some unguarded call path.
// Unknown: in a function nothing in this file calls (a helper that another
// file calls, under a guard or not: `if rank == 0: save_checkpoint(...)` in
// train.py, found by a new user's trial), or past the depth limit.
Ranks ranks_running(const SemanticModel& model, TSNode node, std::map<int, Ranks>& of_function, int depth = 0) {
  if (depth > 8) return Ranks::Unknown;
  if (model.enclosing_guards(node) & kGuardMainProcess) return Ranks::MainOnly;
  if (early_return_for_other_ranks(model, node)) return Ranks::MainOnly;
  const Region& scope = model.regions()[model.regions()[model.region_of(node)].scope];
  if (scope.kind != Region::Kind::Function) return Ranks::Every;
  // once per function: a chain of helpers each called many times is walked
  // once, not once per path (a function being walked counts as Unknown, so
  // recursion ends)
  auto [memo, fresh] = of_function.emplace(scope.function, Ranks::Unknown);
  if (!fresh) return memo->second;
  std::vector<TSNode> callers;
  for (int ci : model.callers_of(scope.function)) callers.push_back(model.calls()[ci].node);
  if (callers.empty()) callers = method_calls(model, scope.function);
  Ranks all = Ranks::MainOnly;
  if (callers.empty()) all = passed_as_argument(model, scope.function) ? Ranks::Every : Ranks::Unknown;
  for (TSNode caller : callers) {
    Ranks r = ranks_running(model, caller, of_function, depth + 1);
    if (r == Ranks::Every) {
      all = Ranks::Every;
      break;
    }
    if (r == Ranks::Unknown) all = Ranks::Unknown;
  }
  of_function[scope.function] = all;
  return all;
}

// A fresh identifier that differs between processes and calls: `uuid.uuid4()`
// (or a library's `uuid4` wrapper such as lhotse's), `uuid1()`, `os.getpid()`.
bool unique_per_call(const CallSite& c) {
  return c.method == "uuid4" || c.method == "uuid1" || c.canonical == "os.getpid";
}

// A per-rank shard or a file of each process's own: the path mentions the
// rank (`f"ckpt_rank{rank}.pt"`) or a fresh identifier (`f"batch-{uuid4()}.pt"`,
// unique_per_call), directly or through names bound once.
bool per_rank_path(const SemanticModel& model, TSNode path) {
  if (node_is_null(path)) return false;
  std::vector<TSNode> stack{path};
  for (int budget = 512; !stack.empty() && budget > 0; --budget) {
    TSNode n = stack.back();
    stack.pop_back();
    TSSymbol s = node_symbol(n);
    if ((s == kinds().identifier || s == kinds().attribute || s == kinds().call) && model.is_rank_value(n)) return true;
    if (s == kinds().call)
      if (const CallSite* c = model.call_at(n); c && unique_per_call(*c)) return true;
    if (s == kinds().identifier) {  // any assignment of the name (if/elif branches bind it twice)
      for (const Binding* b : model.bindings_of(model.text(n), model.region_of(n)))
        if (b->kind == Binding::Kind::Assign && !node_is_null(b->value) && !node_eq(b->target, n))
          stack.push_back(b->value);
    }
    for (TSNode c : children(n)) stack.push_back(c);
  }
  return false;
}

// An in-memory buffer (`io.BytesIO()`): nothing is written to disk.
bool memory_buffer(const SemanticModel& model, TSNode target) {
  if (node_is_null(target)) return false;
  TSNode v = node_symbol(target) == kinds().call ? target : model.single_assignment(target);
  if (node_is_null(v) || node_symbol(v) != kinds().call) return false;
  const CallSite* c = model.call_at(v);
  return c && (c->canonical == "io.BytesIO" || c->method == "BytesIO");
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.is_distributed()) return;
  std::map<int, Ranks> of_function;  // the ranks running each function of the file, once known
  for (const CallSite* call : model.calls_to("torch.save")) {
    if (ranks_running(model, call->node, of_function) != Ranks::Every) continue;
    TSNode target = model.argument(*call, "f", 1);
    if (per_rank_path(model, target) || memory_buffer(model, target)) continue;
    auto [start, end] = first_line_range(model, call->node);
    ctx.report(start, end,
               "torch.save on every rank: all ranks write the same file at once (N times the I/O, and a torn "
               "file if they race); save under `if rank == 0:` (or is_main_process())");
  }
}
}  // namespace

// needs: reports torch.save calls
extern const Rule kRuleDDP210{
    .info = {.code = "DDP210", .name = "checkpoint-on-every-rank", .severity = Severity::Warning,
             .summary = "torch.save in a distributed script not guarded by a rank-0 check",
             .url = "https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints",
             .needs = "torch;save"},
    .check = &check};

}  // namespace ddplint::rules
