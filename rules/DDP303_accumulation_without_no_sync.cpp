// DDP303 accumulation-without-no-sync: DDP all-reduces on every micro-step.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

#include <array>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ddplint::rules {

namespace {

// Innermost loop region around `node` within its function, or -1.
int loop_of(const SemanticModel& model, TSNode node) { return model.innermost_loop(model.region_of(node)); }

// The innermost Branch region between `node` and its loop `loop` whose test is
// periodic, or -1.
int periodic_branch(const SemanticModel& model, TSNode node, int loop) {
  for (int r = model.region_of(node); r > 0 && r != loop; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind == Region::Kind::Branch && (region.guard & kGuardPeriodic)) return r;
  }
  return -1;
}

// True when branch region `branch` tests a modulo whose interval is an
// option of this file that defaults to 1 (`(step + 1) %
// args.gradient_accumulation_steps == 0` with `default=1`) and no launch
// script of the project starts the file: as the project ships, every
// iteration steps, and accumulation is something a user may turn on. (Where
// launch scripts start it, the model's launched value decides.)
bool interval_defaults_to_one(const SemanticModel& model, int branch) {
  if (branch < 0 || !model.project().launched_by.empty()) return false;
  const Kinds& k = kinds();
  std::vector<TSNode> stack{model.regions()[branch].condition};
  for (int budget = 64; !stack.empty() && budget > 0; --budget) {
    TSNode n = stack.back();
    stack.pop_back();
    if (node_is_null(n)) continue;
    if (node_symbol(n) == k.binary_operator && model.text(field(n, k.f_operator)) == "%") {
      TSNode interval = field(n, k.f_right);
      if (node_symbol(interval) != k.attribute || !model.defines_option(model.text(field(interval, k.f_attribute))))
        return false;
      Value v = model.value_of(interval);
      return v.kind == Value::Kind::Int && v.i == 1;
    }
    for (TSNode ch : children(n)) stack.push_back(ch);
  }
  return false;
}

// The script already skips the all-reduce on micro-steps some way, or may:
// a `no_sync()` context (DDP's, or a framework's `no_backward_sync`, called
// or bound to a name to be entered later), an
// `accelerator.accumulate(...)`, an assignment to DDP's
// `require_backward_grad_sync`, or a `with` over a callable of this project
// given the DDP model (edm's `misc.ddp_sync(ddp, last_round)`, which enters
// `ddp.no_sync()` on the other rounds): what that context does is not in this
// file. Code, not text: a comment naming no_sync changes nothing.
// Returns where each such use is: the top-level function that holds it
// (top_level_function_of), -1 at module level or in a method or nested function.
// True when `expr` holds a test `isinstance(x, FullyShardedDataParallel)`.
bool tests_fsdp(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 8) return false;
  if (node_symbol(expr) == kinds().call) {
    const CallSite* c = model.call_at(expr);
    if (c != nullptr && node_symbol(c->callee) == kinds().identifier && model.text(c->callee) == "isinstance") {
      TSNode cls = model.argument(*c, "", 1);
      if (!node_is_null(cls) && model.canonical_name(cls).ends_with("FullyShardedDataParallel")) return true;
    }
  }
  for (TSNode child : children(expr))
    if (ts_node_is_named(child) && tests_fsdp(model, child, depth + 1)) return true;
  return false;
}

// True when `node` runs only where the model is FSDP: in the branch of a test
// `isinstance(model, FSDP)` (a no_sync chosen there is not DDP's).
bool only_under_fsdp(const SemanticModel& model, TSNode node) {
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind == Region::Kind::Function) return false;
    if (region.kind == Region::Kind::Branch && !region.negated && tests_fsdp(model, region.condition)) return true;
  }
  return false;
}

std::vector<int> selective_syncs(const SemanticModel& model, const std::vector<std::string>& ddp_paths) {
  const Kinds& k = kinds();
  std::vector<int> out;
  for (std::string_view method : {"no_sync", "no_backward_sync"})
    for (const CallSite* c : model.calls_named(method)) out.push_back(model.top_level_function_of(c->node));
  for (const CallSite* c : model.calls_named("accumulate"))
    if (!node_is_null(c->receiver)) out.push_back(model.top_level_function_of(c->node));
  // the `with` statements' items (through the regions: no parent walk per call)
  std::string storage;
  for (const Region& region : model.regions()) {
    if (region.kind != Region::Kind::With) continue;
    for (TSNode value : with_item_values(region.node)) {
      const CallSite* c = node_symbol(value) == k.call ? model.call_at(value) : nullptr;
      if (c == nullptr || c->canonical.rfind("torch.", 0) == 0) continue;
      for (const Argument& a : model.arguments(*c)) {
        std::string_view path = model.path_view(a.value, storage);
        for (const std::string& p : ddp_paths)
          if (!path.empty() && path == p) out.push_back(model.top_level_function_of(region.node));
      }
    }
  }
  // the context chosen into a name, entered later: `ctx = model.no_sync if
  // not last else contextlib.nullcontext`, then `with ctx():`
  for (const Binding& b : model.bindings()) {
    if (node_is_null(b.value) || only_under_fsdp(model, b.target)) continue;
    std::array<TSNode, 2> arms{b.value, TSNode{}};
    if (node_symbol(b.value) == k.conditional_expression && ts_node_named_child_count(b.value) == 3)
      arms = {ts_node_named_child(b.value, 0), ts_node_named_child(b.value, 2)};
    for (TSNode arm : arms) {
      if (node_is_null(arm) || node_symbol(arm) != k.attribute) continue;
      std::string_view name = model.last_name(arm);
      if (name == "no_sync" || name == "no_backward_sync") out.push_back(model.top_level_function_of(b.target));
    }
  }
  constexpr std::string_view kFlag = "require_backward_grad_sync";
  for (const Binding& b : model.bindings())
    if (b.path.ends_with(kFlag) && (b.path.size() == kFlag.size() || b.path[b.path.size() - kFlag.size() - 1] == '.'))
      out.push_back(model.top_level_function_of(b.target));
  return out;
}

// True when the uses `where` (selective_syncs) may cover the accumulation
// that `step` ends: one at module level or in a method, one in the step's own
// top-level function, or one in a function this file calls (it may be called
// from the step's loop). One in another top-level function that nothing in
// this file calls covers only that function's loop (engine.py's
// train_one_epoch_no_sync beside train_one_epoch, each called from train.py;
// found by a new user's trial).
bool covered(const SemanticModel& model, const std::vector<int>& where, const CallSite& step) {
  int f = model.top_level_function_of(step.node);
  for (int w : where)
    if (w < 0 || w == f || !model.callers_of(w).empty()) return true;
  return false;
}

// Where the DDP model is in a function: the names that hold it there.
// `paths` are this file's wraps (`model`, `self.model`, with the scope that
// binds each) and `given` the function's parameters that some call passes
// the DDP model (from this file, or from another file of the project).
struct DdpHandles {
  std::vector<std::pair<std::string, int>> paths;         // (path, scope region of the wrap)
  std::map<int, std::set<std::string, std::less<>>> given;  // function index -> parameters
};

// True when `path` is rebound in the function of scope region `scope`
// (`model = model.module`, `model = build()`): from there it no longer holds
// what the caller passed.
bool rebound_in(const SemanticModel& model, std::string_view path, int scope) {
  for (const Binding* b : model.bindings_of(path, scope))
    if (b->scope == scope && b->kind != Binding::Kind::Parameter) return true;
  return false;
}

// True when some call in the function of scope region `scope` runs a forward
// through `path` with autograd on: `path(...)`, `path.forward(...)`, `path`
// passed to a call (`loss = compute_loss(model, batch)`), or a function of
// this file called there that does so itself (`self.compute_loss(x)` reading
// `self.model`, a nested `def fwd(x): return model(x)`). A model used only
// under `torch.no_grad()` (a teacher) computes no gradients.
bool forwards(const SemanticModel& model, std::string_view path, int scope, int depth = 0) {
  if (depth > 2) return true;  // deeper than followed: may forward
  for (const CallSite& c : model.calls()) {
    if (model.regions()[c.region].scope != scope || under_no_grad(model, c.node)) continue;
    if (is_ddp_wrap(c.canonical)) continue;  // the wrap
    if (calls_as_model(model, c, path)) return true;
    std::vector<int> targets = model.resolve_local_function(c);
    int position = 0;
    for (const Argument& a : model.arguments(c)) {
      if (a.kind == Argument::Kind::ListSplat || a.kind == Argument::Kind::DictionarySplat) break;
      int at = a.kind == Argument::Kind::Keyword ? -1 : position++;
      if (model.path_of(a.value) != path) continue;
      // given to a function of this file: whether that function forwards
      // it with autograd on (`@torch.no_grad() def targets(teacher, x)` does not)
      if (targets.empty()) return true;  // code ddplint does not read here: may forward
      for (int f : targets) {
        if (model.functions()[f].no_grad) continue;
        std::string_view name = bound_parameter(model, f, a, at);
        if (name.empty() || forwards(model, name, model.functions()[f].region, depth + 1)) return true;
      }
    }
    // a function of this file that reads the same name itself (a global, `self.model`)
    for (int f : targets) {
      int body = model.functions()[f].region;
      if (body == scope || model.functions()[f].no_grad) continue;
      BindingList own = model.bindings_of(path, body);
      if (path.find('.') == std::string_view::npos && !own.empty() && own.front()->scope == body) continue;
      if (forwards(model, path, body, depth + 1)) return true;
    }
  }
  return false;
}

// True when the function of scope region `scope` calls `name` itself with
// autograd on (`name(x)`, `name.forward(x)`): it trains the module `name` holds.
bool trains_module(const SemanticModel& model, std::string_view name, int scope) {
  for (const CallSite& c : model.calls())
    if (model.regions()[c.region].scope == scope && calls_as_model(model, c, name) && !under_no_grad(model, c.node))
      return true;
  return false;
}

// True when the function of scope region `scope` calls, with autograd on, an
// object that may be another model: a name or attribute path (`net(x)`,
// `self.student(x)`) that no import names and that is not a function of this
// file, nor one of `handles`.
bool calls_other_model(const SemanticModel& model, const DdpHandles& handles, int scope) {
  const Kinds& k = kinds();
  for (const CallSite& c : model.calls()) {
    if (model.regions()[c.region].scope != scope || under_no_grad(model, c.node) || !c.canonical.empty()) continue;
    if (node_is_null(c.callee) || (node_symbol(c.callee) != k.identifier && node_symbol(c.callee) != k.attribute)) continue;
    std::string callee = model.path_of(c.callee);
    if (callee.empty() || !model.resolve_local_function(c).empty()) continue;
    if (node_symbol(c.callee) == k.identifier && model.bindings_of(callee, c.region).empty()) continue;  // a builtin
    bool handle = false;
    for (const auto& [path, wrap_scope] : handles.paths) handle = handle || path == callee;
    if (!handle) return true;
  }
  return false;
}

// Whether the gradients that the step at `step` (in scope region `scope`)
// takes come from the DDP model: true when that function forwards a name
// holding it; false when it calls as a model only parameters that no call
// gives the DDP model (a file that wraps one model and accumulates on
// another), or when no DDP model reaches it and the file wraps none; else
// (the file wraps one, the function calls none of its parameters as a model,
// as a script or a step helper using a global) true.
bool trains_ddp_model(const SemanticModel& model, const DdpHandles& handles, int scope) {
  int f = scope == 0 ? -1 : model.regions()[scope].function;
  for (const auto& [path, wrap_scope] : handles.paths) {
    // the wrap's own name, or one this function reads from outside (a global, `self.model`)
    if (wrap_scope != scope && path.find('.') == std::string::npos) {
      BindingList own = model.bindings_of(path, scope);
      if (!own.empty() && own.front()->scope == scope) continue;  // the function's own `model` is another object
    }
    if (forwards(model, path, scope)) return true;
  }
  bool trains_other = false;
  auto it = handles.given.find(f);
  if (f >= 0) {
    for (const auto& [parameter, default_value] : model.parameters_of(f)) {
      bool given = it != handles.given.end() && it->second.contains(parameter) && !rebound_in(model, parameter, scope);
      if (given && forwards(model, parameter, scope)) return true;
      if (!given && trains_module(model, parameter, scope)) trains_other = true;
    }
  }
  // no forward of the DDP model here: the file-wide reading only where the
  // function runs no other model's forward either (its loss comes from code
  // ddplint does not follow); `self.student(x)` beside a DDP teacher under
  // no_grad trains the student alone
  return !trains_other && model.wraps_ddp() && !calls_other_model(model, handles, scope);
}

// The parameters of this file's functions that a call in this file passes a
// name holding the DDP model (`train(model, ...)` after `model = DDP(model)`),
// added to `given`.
void given_in_file(const SemanticModel& model, const std::vector<std::pair<std::string, int>>& paths,
                   std::map<int, std::set<std::string, std::less<>>>& given) {
  for (const CallSite& c : model.calls()) {
    std::vector<int> targets = model.resolve_local_function(c);
    if (targets.empty()) continue;
    int position = 0;
    for (const Argument& a : model.arguments(c)) {
      if (a.kind == Argument::Kind::ListSplat || a.kind == Argument::Kind::DictionarySplat) break;
      bool keyword = a.kind == Argument::Kind::Keyword;
      int at = keyword ? -1 : position++;
      std::string path = model.path_of(a.value);
      const CallSite* inline_wrap = node_symbol(a.value) == kinds().call ? model.call_at(a.value) : nullptr;
      bool ddp = inline_wrap != nullptr && is_ddp_wrap(inline_wrap->canonical);
      for (const auto& [p, scope] : paths) ddp = ddp || (!path.empty() && path == p);
      if (!ddp) continue;
      for (int f : targets)
        if (std::string_view name = bound_parameter(model, f, a, at); !name.empty()) given[f].emplace(name);
    }
  }
}

// A loss-scaler call that runs backward every time and the optimizer step
// only when a keyword says so, given a periodic condition: MAE's and
// ConvNeXt's `loss_scaler(loss, optimizer, update_grad=(i + 1) % accum == 0)`,
// timm's `need_update=`. The value of that keyword, or a null node.
TSNode periodic_update_flag(const SemanticModel& model, const CallSite& call) {
  if (call.method == "backward" || call.method == "step") return {};
  for (std::string_view kw : {"update_grad", "need_update"}) {
    TSNode v = model.argument(call, kw);
    if (!node_is_null(v) && (model.classify_condition(v, false) & kGuardPeriodic)) return v;
  }
  return {};
}

// Accelerate's `model, optimizer, loader = accelerator.prepare(model, optimizer,
// loader)`: under multi-GPU launch each prepared module is wrapped in DDP
// (accelerate/accelerator.py, prepare_model: DistributedDataParallel(model,
// device_ids=[local_process_index], ...)). The names each result is bound to,
// with their scope; those called as a model are the DDP model.
std::vector<std::pair<std::string, int>> accelerate_prepared(const SemanticModel& model) {
  const Kinds& k = kinds();
  std::vector<std::pair<std::string, int>> out;
  for (const CallSite* c : model.calls_named("prepare")) {
    if (model.framework_object(c->receiver) != FrameworkObject::Accelerator) continue;
    // with a DeepSpeed plugin, prepare() returns a DeepSpeed engine that keeps
    // its own accumulation boundaries, not DDP
    const FrameworkConfig* config = model.framework_config_of(c->receiver);
    if (config == nullptr || model.framework_setting(*config, "deepspeed_plugin").state != FrameworkSetting::State::Default)
      continue;
    int scope = model.regions()[c->region].scope;
    TSNode parent = ts_node_parent(c->node);
    if (node_is_null(parent) || node_symbol(parent) != k.assignment) continue;
    TSNode left = field(parent, k.f_left);
    if (node_symbol(left) == k.identifier || node_symbol(left) == k.attribute) {
      out.emplace_back(model.path_of(left), scope);
      continue;
    }
    for (TSNode t : children(left))
      if (std::string p = model.path_of(t); !p.empty()) out.emplace_back(std::move(p), scope);
  }
  // only the results some call runs as a model (`model(batch)`,
  // `model.forward(x)`): not the optimizer, loader or scheduler prepared
  // beside it (the paths called so, gathered in one pass over the calls)
  if (out.empty()) return out;
  std::set<std::string, std::less<>> called;
  for (const CallSite& c : model.calls()) {
    called.insert(model.path_of(c.callee));
    if (c.method == "forward") called.insert(model.path_of(c.receiver));
  }
  std::erase_if(out, [&](const std::pair<std::string, int>& handle) { return !called.contains(handle.first); });
  return out;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  // the DDP model: wrapped in this file, or passed in by another file of the
  // project (main.py wraps, engine.py's train_one_epoch(model, ...) accumulates),
  // or prepared by Accelerate
  const auto& passed = model.project().ddp_parameters;
  std::vector<std::pair<std::string, int>> prepared = accelerate_prepared(model);
  if (!model.wraps_ddp() && passed.empty() && prepared.empty()) return;
  auto given_ddp = [&](const CallSite& c) -> const ProjectFacts::DdpArguments* {
    int f = model.top_level_function_of(c.node);
    if (f < 0) return nullptr;
    auto it = passed.find(model.functions()[f].name);
    return it == passed.end() ? nullptr : &it->second;
  };
  DdpHandles handles;
  std::vector<std::string> ddp_paths;
  for (const DdpWrap& w : ddp_wraps(model)) {
    // the wrap's result holds the DDP model; the module it wrapped, when named
    // otherwise (`ddp_net = DDP(net)`), forwards without DDP's reducer
    if (!w.result.empty()) handles.paths.emplace_back(w.result, w.scope), ddp_paths.push_back(w.result);
    if (!w.module.empty()) ddp_paths.push_back(w.module);
    if (!w.module.empty() && (w.result.empty() || w.result == w.module)) handles.paths.emplace_back(w.module, w.scope);
  }
  for (auto& [path, scope] : prepared) {
    ddp_paths.push_back(path);
    handles.paths.emplace_back(std::move(path), scope);
  }
  for (std::size_t f = 0; f < model.functions().size(); ++f) {
    if (!model.is_top_level_function(static_cast<int>(f))) continue;
    auto it = passed.find(model.functions()[f].name);
    if (it != passed.end()) handles.given[static_cast<int>(f)].insert(it->second.parameters.begin(), it->second.parameters.end());
  }
  given_in_file(model, handles.paths, handles.given);
  for (const auto& [function, d] : passed) ddp_paths.insert(ddp_paths.end(), d.parameters.begin(), d.parameters.end());
  // a training call counts where the gradients it takes come from the DDP model
  std::map<int, bool> scope_trains_ddp;
  std::vector<const CallSite*> steps, backwards;
  for (const CallSite& c : model.calls()) {
    if (!model.is_training_call(c)) continue;
    int scope = model.regions()[c.region].scope;
    auto [it, fresh] = scope_trains_ddp.emplace(scope, false);
    if (fresh) it->second = trains_ddp_model(model, handles, scope);
    if (!it->second) continue;
    (c.method == "backward" ? backwards : steps).push_back(&c);
  }
  if (steps.empty()) return;
  const std::vector<int> selective = selective_syncs(model, ddp_paths);
  std::erase_if(steps, [&](const CallSite* step) { return covered(model, selective, *step); });
  if (steps.empty()) return;
  bool accelerate = !model.wraps_ddp() && passed.empty();  // the DDP model comes from Accelerate's prepare
  auto report = [&](const CallSite* step) {
    std::string from;
    if (!model.wraps_ddp())
      if (const ProjectFacts::DdpArguments* d = given_ddp(*step))
        from = " (the DDP model is passed in at " + d->caller.path + ":" + std::to_string(d->caller.line) + ")";
    auto [start, end] = first_line_range(model, step->node);
    std::string instead = accelerate ? "train under `with accelerator.accumulate(model):` with "
                                       "Accelerator(gradient_accumulation_steps=N), which skips it on the others"
                                     : "run the other micro-steps under `with model.no_sync():`";
    ctx.report(start, end,
               "gradient accumulation with DDP and no model.no_sync(): every micro-step's backward all-reduces "
               "the gradients, although only the last one before this step needs it; " + instead + from);
  };
  // (c) a loss scaler told to step only on accumulation boundaries: it runs
  // backward (an all-reduce) on every micro-step
  for (const CallSite* step : steps)
    if (!node_is_null(periodic_update_flag(model, *step)) && model.innermost_loop(step->region) >= 0) report(step);
  if (backwards.empty()) return;
  // the regions that hold a backward in a loop nested inside them: each
  // backward's loop marks its enclosing regions once (not a pass over every
  // backward for every step, which was quadratic in a file of many loops)
  std::vector<std::uint8_t> holds_inner_backward(model.regions().size(), 0);
  for (const CallSite* b : backwards) {
    int bl = loop_of(model, b->node);
    if (bl < 0) continue;
    for (int r = model.regions()[bl].parent; r > 0 && !holds_inner_backward[r]; r = model.regions()[r].parent)
      holds_inner_backward[r] = 1;  // (an ancestor already marked has its own ancestors marked)
  }
  for (const CallSite* step : steps) {
    int step_loop = loop_of(model, step->node);
    if (step_loop < 0) continue;
    // (a) the optimizer steps only every K iterations, `if (i + 1) % accum == 0: optimizer.step()`,
    // and a backward of the same loop runs outside that branch (more often
    // than the step); a backward and a step both under `if i % k == 0:` are
    // a periodic step of their own (a GAN's lazy regularisation), not accumulation
    bool periodic_step = false;
    if (model.enclosing_guards(step->node) & kGuardPeriodic) {
      int branch = periodic_branch(model, step->node, step_loop);
      for (const CallSite* b : backwards) {
        if (loop_of(model, b->node) != step_loop || node_start_byte(b->node) > node_start_byte(step->node)) continue;
        if (branch >= 0 && region_within(model, b->region, branch)) continue;
        // a step between them, outside the branch, takes that backward's gradients
        bool consumed = false;
        for (const CallSite* other : steps) {
          std::uint32_t at = node_start_byte(other->node);
          consumed = consumed || (other != step && loop_of(model, other->node) == step_loop &&
                                  at > node_start_byte(b->node) && at < node_start_byte(step->node) &&
                                  (branch < 0 || !region_within(model, other->region, branch)));
        }
        if (!consumed) periodic_step = true;
      }
      if (periodic_step && interval_defaults_to_one(model, branch)) periodic_step = false;
    }
    // (b) backward in an inner loop over micro-batches, the step after it in the outer loop
    bool inner_backward = holds_inner_backward[step_loop] != 0;
    if (!periodic_step && !inner_backward) continue;
    if (!node_is_null(periodic_update_flag(model, *step))) continue;  // reported above
    report(step);
  }
}
}  // namespace

// needs: a DDP/FSDP wrap (wraps_ddp()) or Accelerate's prepare, and a backward() call
extern const Rule kRuleDDP303{
    .info = {.code = "DDP303", .name = "accumulation-without-no-sync", .severity = Severity::Warning,
             .summary = "Gradient accumulation in a DDP script without model.no_sync(): DDP all-reduces every micro-step",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync",
             .needs = "DistributedDataParallel|FullyShardedDataParallel|fully_shard|prepare;backward"},
    .check = &check};

}  // namespace ddplint::rules
