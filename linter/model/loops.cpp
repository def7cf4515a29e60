// Training loops: which calls train, which loops step the optimiser, the local
// call graph, and whether code runs on every step or in a training loop.
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ddplint {

using namespace model_detail;

bool SemanticModel::training_call(const CallSite& c) const {
  if (c.method == "backward") return true;
  // Lightning's manual optimization: `self.manual_backward(loss)` in a LightningModule
  if (c.method == "manual_backward" && !node_is_null(c.receiver) && text(c.receiver) == "self") return true;
  // The MAE/DeiT/ConvNeXt engine's `loss_scaler(loss, optimizer, ...)`: a
  // loss-scaler object called with the optimizer runs backward and the step
  // (timm's NativeScaler.__call__: scaler.scale(loss).backward(), then
  // scaler.step(optimizer) when update_grad). Not a function this file
  // defines (its body says what it does: `_make_train_step_no_scaler(task,
  // optimizer)` builds a step, it does not take one), nor a name that says
  // there is none (`..._no_scaler`).
  // timm's loss scalers whatever the object is named (timm/utils/cuda.py:
  // NativeScaler and ApexScaler `__call__(loss, optimizer, ..., need_update=True)`
  // run backward, then the step when need_update)
  if (!node_is_null(c.callee) && c.argument_count >= 2) {
    TSNode bound = single_assignment(c.callee);
    const CallSite* made = !node_is_null(bound) && node_symbol(bound) == kinds().call ? call_at(bound) : nullptr;
    if (made != nullptr && is_timm_loss_scaler(made->canonical)) return true;
  }
  std::string callee = node_is_null(c.callee) ? std::string() : lower(last_name(c.callee));
  if (contains(callee, "scaler") && !contains(callee, "no_scaler") && !contains(callee, "without_scaler") &&
      c.argument_count >= 2 && resolve_local_function(c).empty()) {
    for (const Argument& a : arguments(c)) {
      std::string name = lower(last_name(a.value));
      if (contains(name, "optim") || name == "opt") return true;
    }
  }
  if (c.method != "step" || node_is_null(c.receiver)) return false;
  std::string name = lower(last_name(c.receiver));
  if (contains(name, "sched")) return false;
  if (contains(name, "optim") || name == "opt" || name.rfind("opt_", 0) == 0 || contains(name, "scaler"))
    return true;
  TSNode v = single_assignment(c.receiver);
  if (!node_is_null(v) && node_symbol(v) == kinds().call) {
    const CallSite* ctor = call_at(v);
    if (ctor && (is_optimizer_constructor(ctor->canonical) ||
                 contains(ctor->canonical, "GradScaler")))
      return true;
  }
  return false;
}

std::vector<int> SemanticModel::resolve_local_function(const CallSite& c) const {
  std::vector<int> out;
  if (node_is_null(c.callee) || c.method.empty()) return out;
  auto it = functions_by_name_.find(c.method);
  if (it == functions_by_name_.end()) return out;
  const Kinds& k = kinds();
  bool plain = node_symbol(c.callee) == k.identifier;
  bool on_self = false;
  if (!plain && node_symbol(c.receiver) == k.identifier) {
    std::string_view r = text(c.receiver);
    on_self = r == "self" || r == "cls";
  }
  if (!plain && !on_self) return out;
  // A name defined several times resolves to one definition: the last one
  // before the call, else the first after it (a call inside a function body
  // runs after the module has defined everything). One target keeps the call
  // graph linear when a file repeats its definitions.
  std::uint32_t at = node_start_byte(c.node);
  int before = -1, after = -1;
  for (int f : it->second) {
    const Region& fr = regions_[functions_[f].region];
    bool is_method = fr.parent >= 0 && regions_[fr.parent].kind == Region::Kind::Class;
    if (is_method != on_self) continue;
    if (node_start_byte(functions_[f].node) < at) before = f;
    else if (after < 0) after = f;
  }
  if (before >= 0) out.push_back(before);
  else if (after >= 0) out.push_back(after);
  return out;
}

ProjectFacts::Trains SemanticModel::project_callee_trains(const CallSite& c) const {
  return project_callee(c).value_or(ProjectFacts::Trains::None);
}

std::optional<ProjectFacts::Trains> SemanticModel::project_callee(const CallSite& c) const {
  if (!project_ || project_->callees.empty() || c.canonical.empty()) return std::nullopt;
  auto it = project_->callees.find(c.canonical);
  if (it == project_->callees.end()) return std::nullopt;
  return it->second;
}

bool SemanticModel::applies_gradients() const {
  const Kinds& k = kinds();
  if (!framework_configs_.empty()) return true;
  for (std::size_t f = 0; f < functions_.size(); ++f)
    if (is_lightning_step_hook(static_cast<int>(f))) return true;
  for (const CallSite& c : calls_) {
    if (c.method == "step" || c.method == "zero_grad" || c.method == "manual_backward") return true;
    if (training_call(c) && c.method != "backward") return true;
    if (is_optimizer_constructor(c.canonical) || c.canonical.starts_with("deepspeed.") ||
        c.canonical.starts_with("accelerate.") || c.canonical.starts_with("lightning") ||
        c.canonical.starts_with("pytorch_lightning") || c.canonical.starts_with("transformers.Trainer"))
      return true;
    if (project_callee_trains(c) != ProjectFacts::Trains::None) return true;
    // a hand-written update: `p.add_(p.grad, alpha=-lr)`, `p.data.sub_(lr * g)`
    if (c.method == "add_" || c.method == "sub_" || c.method == "addcdiv_" || c.method == "addcmul_" ||
        c.method == "copy_")
      for (const Argument& a : arguments(c))
        if (!node_is_null(a.value) && node_symbol(a.value) == k.attribute &&
            text(field(a.value, k.f_attribute)) == "grad")
          return true;
  }
  // `p -= lr * p.grad`, `w.data -= ...`
  for (const Binding& b : bindings_) {
    if (b.kind != Binding::Kind::Augmented) continue;
    TSNode stmt = ts_node_parent(b.target);
    if (!node_is_null(stmt) && node_symbol(stmt) == k.augmented_assignment && text(field(stmt, k.f_operator)) == "-=")
      return true;
  }
  return false;
}

int SemanticModel::innermost_loop(int region) const {
  for (int r = region; r >= 0; r = regions_[r].parent) {
    Region::Kind kind = regions_[r].kind;
    if (kind == Region::Kind::Loop) return r;
    if (kind == Region::Kind::Function || kind == Region::Kind::Class || kind == Region::Kind::Module) return -1;
  }
  return -1;
}

namespace {
int function_of(std::span<const Region> regions, int region) {
  int scope = regions[region].scope;
  return regions[scope].kind == Region::Kind::Function ? regions[scope].function : -1;
}
}  // namespace

std::optional<SemanticModel::TrainingFlag> SemanticModel::training_flag(
    int f, std::span<const int> calls, const std::function<bool(const CallSite&, int)>& trains) const {
  const Kinds& k = kinds();
  const int fregion = functions_[f].region;
  auto params = parameters_of(f);
  std::optional<TrainingFlag> out;
  bool seen = false;
  for (int i : calls) {
    const CallSite& c = calls_[static_cast<std::size_t>(i)];
    if (regions_[c.region].scope != fregion || !trains(c, i)) continue;
    // the innermost branch of `f` around the call that tests a parameter by itself
    std::optional<TrainingFlag> here;
    for (int r = c.region; r > 0 && r != fregion; r = regions_[r].parent) {
      const Region& reg = regions_[r];
      if (reg.kind != Region::Kind::Branch || node_is_null(reg.condition)) continue;
      TSNode cond = reg.condition;
      bool when = !reg.negated;
      while (!node_is_null(cond)) {
        TSSymbol cs = node_symbol(cond);
        if (cs == k.parenthesized_expression && !node_is_null(parenthesized_inner(cond))) cond = parenthesized_inner(cond);
        else if (cs == k.not_operator) cond = ts_node_named_child(cond, 0), when = !when;
        else break;
      }
      if (node_is_null(cond) || node_symbol(cond) != k.identifier) continue;
      BindingList bound = bindings_of(text(cond), region_of(cond));
      if (bound.size() != 1 || bound[0]->kind != Binding::Kind::Parameter || bound[0]->scope != fregion) continue;
      for (std::size_t p = 0; p < params.size(); ++p)
        if (params[p].first == text(cond)) here = TrainingFlag{params[p].first, static_cast<int>(p), params[p].second, when};
      if (here) break;
    }
    if (!here) return std::nullopt;  // a training call no flag guards
    if (seen && (out->name != here->name || out->when != here->when)) return std::nullopt;
    out = here;
    seen = true;
  }
  return out;
}

void SemanticModel::analyse_loops() {
  step_loop_.assign(regions_.size(), 0);
  training_loop_.assign(regions_.size(), 0);
  std::vector<std::uint8_t> trains_direct(functions_.size(), 0), trains_any(functions_.size(), 0);
  callers_.assign(functions_.size(), {});
  std::vector<std::pair<int, std::vector<int>>> local_calls;  // call index -> callee functions

  // Marks what a training call (or a call of a training function) at `region`
  // implies; returns the enclosing function if its flags changed, else -1.
  std::vector<int> step_sites;  // regions of the calls that made a loop a step loop
  auto mark = [&](int region, bool direct) {
    int loop = innermost_loop(region);
    int f = function_of(regions_, region);
    bool changed = false;
    if (direct) {
      if (loop >= 0) {
        step_loop_[loop] = 1;
        step_sites.push_back(region);
      } else if (f >= 0 && !trains_direct[f]) {
        trains_direct[f] = 1;
        changed = true;
      }
    }
    for (int r = loop; r >= 0; r = regions_[r].parent) {
      Region::Kind kind = regions_[r].kind;
      if (kind == Region::Kind::Function || kind == Region::Kind::Class) break;
      if (kind != Region::Kind::Loop) continue;
      if (training_loop_[r]) break;  // its enclosing loops are marked already
      training_loop_[r] = 1;
    }
    if (f >= 0 && !trains_any[f]) {
      trains_any[f] = 1;
      changed = true;
    }
    return changed ? f : -1;
  };

  for (std::size_t i = 0; i < calls_.size(); ++i) {
    auto targets = resolve_local_function(calls_[i]);
    if (!targets.empty()) {
      for (int t : targets) callers_[t].push_back(static_cast<int>(i));
      local_calls.emplace_back(static_cast<int>(i), std::move(targets));
    }
  }
  std::unordered_map<int, const std::vector<int>*> targets_of;
  for (const auto& [ci, targets] : local_calls) targets_of[ci] = &targets;
  // The marks of the training calls, then up the call graph (each function's
  // flags change at most twice). A call of a function that trains only under
  // a flag parameter (`def compute_loss(batch, do_backward=True): ... if
  // do_backward: loss.backward()`) that passes a constant the flag fails on
  // (`compute_loss(batch, do_backward=False)` in a validation step) makes
  // its caller train nothing.
  std::vector<std::optional<TrainingFlag>> flag(functions_.size());
  auto skipped = [&](int ci, int t) {
    if (!flag[t]) return false;
    const CallSite& call = calls_[ci];
    if (has_unpacked_arguments(call)) return false;
    TSNode arg = argument(call, flag[t]->name, flag[t]->position);
    if (node_is_null(arg)) arg = flag[t]->fallback;
    if (node_is_null(arg)) return false;
    Value v = value_of(arg);
    return v.known() && v.truthy() != flag[t]->when;
  };
  auto propagate = [&] {
    std::vector<int> work;  // functions whose flags changed: their callers need another look
    for (std::size_t i = 0; i < calls_.size(); ++i) {
      const CallSite& c = calls_[i];
      if (training_call(c)) {
        trains_ = true;
        int f = mark(c.region, true);
        if (f >= 0) work.push_back(f);
      } else if (ProjectFacts::Trains t = project_callee_trains(c); t != ProjectFacts::Trains::None) {
        // a function of another module of the project: `engine.train_one_epoch(...)`
        // runs a training loop; `train_step(model, batch)` steps the optimizer
        trains_ = true;
        int f = mark(c.region, t == ProjectFacts::Trains::Direct);
        if (f >= 0) work.push_back(f);
      }
    }
    while (!work.empty()) {
      int g = work.back();
      work.pop_back();
      for (int ci : callers_[g]) {
        bool direct = false, any = false;
        for (int t : *targets_of[ci]) {
          if (skipped(ci, t)) continue;
          direct |= trains_direct[t] != 0, any |= trains_any[t] != 0;
        }
        if (!any && !direct) continue;
        int f = mark(calls_[ci].region, direct);
        if (f >= 0) work.push_back(f);
      }
    }
  };
  propagate();
  // the flag parameters of the functions that train, read off the marks; with
  // any, the marks again, skipping the calls that turn the flag off
  bool any_flag = false;
  std::vector<std::vector<int>> calls_of_function(functions_.size());  // the calls of each function's own body
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    const Region& scope = regions_[regions_[calls_[i].region].scope];
    if (scope.kind == Region::Kind::Function && scope.function >= 0 && trains_any[scope.function] &&
        !callers_[scope.function].empty())
      calls_of_function[scope.function].push_back(static_cast<int>(i));
  }
  for (std::size_t f = 0; f < functions_.size(); ++f) {
    if (!trains_any[f] || callers_[f].empty()) continue;
    flag[f] = training_flag(static_cast<int>(f), calls_of_function[f], [&](const CallSite& c, int ci) {
      if (training_call(c) || project_callee_trains(c) != ProjectFacts::Trains::None) return true;
      auto it = targets_of.find(ci);
      if (it == targets_of.end()) return false;
      for (int t : *it->second)
        if (trains_any[t]) return true;
      return false;
    });
    any_flag = any_flag || flag[f].has_value();
  }
  if (any_flag) {
    std::fill(step_loop_.begin(), step_loop_.end(), std::uint8_t{0});
    std::fill(training_loop_.begin(), training_loop_.end(), std::uint8_t{0});
    std::fill(trains_direct.begin(), trains_direct.end(), std::uint8_t{0});
    std::fill(trains_any.begin(), trains_any.end(), std::uint8_t{0});
    step_sites.clear();
    propagate();
  }
  // branch guards after the call graph and the loops: a test of a parameter
  // is what its callers pass (parameter_guard)
  for (Region& r : regions_) {
    if (r.kind == Region::Kind::Branch) r.guard = classify_condition(r.condition, r.negated);
  }
  // A loop whose every training call sits under a periodic branch of it
  // (`if global_step % train_frequency == 0:` around backward and the step, as
  // an RL script's environment loop trains every few environment steps) is
  // not itself a step loop: its iterations are not training steps, and what
  // runs outside that branch (the action copied to a CPU environment) is no
  // per-step cost of training. It stays a training loop, like an epoch loop.
  // Accumulation keeps its step loop: the backward of each micro-step is unguarded.
  {
    std::vector<std::uint8_t> unguarded(regions_.size(), 0);
    for (int site : step_sites) {
      int loop = innermost_loop(site);
      if (loop < 0 || unguarded[loop]) continue;
      GuardMask guards = 0;
      for (int r = site; r >= 0 && r != loop; r = regions_[r].parent)
        if (regions_[r].kind == Region::Kind::Branch) guards |= regions_[r].guard;
      if (!(guards & kGuardPeriodic)) unguarded[loop] = 1;
    }
    for (std::size_t r = 0; r < regions_.size(); ++r)
      if (step_loop_[r] && !unguarded[r]) step_loop_[r] = 0;
  }
  // Gradients computed and never applied: a file with backward() but nothing
  // that applies a gradient (no optimizer, GradScaler or engine step, no
  // zero_grad, no optimizer built, no hand-written `p -= lr * p.grad` or
  // `p.add_(p.grad, ...)`, no project function that trains, no framework)
  // reads the gradients for themselves: head importance, saliency, an
  // adversarial perturbation, a forward/backward timing benchmark. Its
  // loops are not step loops; where another file calls such a function
  // every step, that caller's step loop still says so (step_caller_elsewhere).
  if (trains_ && !applies_gradients())
    std::fill(step_loop_.begin(), step_loop_.end(), std::uint8_t{0});
  // a Lightning training_step is the body of the Trainer's step loop
  for (std::size_t f = 0; f < functions_.size(); ++f)
    if (is_lightning_step_hook(static_cast<int>(f))) trains_ = true;
  // training loops that stop within a few iterations (a probe, a tutorial's one step)
  few_iterations_.assign(regions_.size(), 0);
  for (std::size_t r = 0; r < regions_.size(); ++r)
    if (training_loop_[r] && stops_within_few(static_cast<int>(r))) few_iterations_[r] = 1;
  function_trains_.assign(functions_.size(), ProjectFacts::Trains::None);
  for (std::size_t f = 0; f < functions_.size(); ++f) {
    if (trains_direct[f]) function_trains_[f] = ProjectFacts::Trains::Direct;
    else if (trains_any[f]) function_trains_[f] = ProjectFacts::Trains::InLoop;
  }
}

namespace {
// The most iterations after which a loop counts as a few (few_iterations): a
// probe or a smoke test, far below any training run's length.
constexpr std::int64_t kFewIterations = 10;
}  // namespace

bool SemanticModel::stops_within_few(int r) const {
  const Kinds& k = kinds();
  const Region& loop = regions_[static_cast<std::size_t>(r)];
  if (loop.kind != Region::Kind::Loop) return false;
  TSNode body = field(loop.node, k.f_body);
  if (node_is_null(body)) return false;
  // the loop's own index: `i` of `for i, batch in enumerate(loader)` (no start)
  // or of `for i in range(n)`
  std::string_view index;
  if (node_symbol(loop.node) == k.for_statement) {
    TSNode target = field(loop.node, k.f_left);
    TSNode iterable = field(loop.node, k.f_right);
    const CallSite* it = node_is_null(iterable) ? nullptr : call_at(iterable);
    if (it != nullptr && node_symbol(it->callee) == k.identifier && bindings_of(text(it->callee), loop.scope).empty()) {
      std::string_view fn = text(it->callee);
      if (fn == "enumerate" && it->argument_count == 1 &&
          (node_symbol(target) == k.pattern_list || node_symbol(target) == k.tuple_pattern)) {
        TSNode first = ts_node_named_child(target, 0);
        if (!node_is_null(first) && node_symbol(first) == k.identifier) index = text(first);
      } else if (fn == "range" && node_symbol(target) == k.identifier) {
        index = text(target);
      }
    }
  }
  // names the body increments by one, each as a statement of its own (`step += 1`)
  std::vector<std::string_view> counters;
  for (TSNode stmt : children(body)) {
    if (node_symbol(stmt) != k.expression_statement) continue;
    TSNode e = ts_node_named_child(stmt, 0);
    if (node_is_null(e) || node_symbol(e) != k.augmented_assignment || text(field(e, k.f_operator)) != "+=") continue;
    TSNode left = field(e, k.f_left);
    Value one = value_of(field(e, k.f_right));
    if (node_symbol(left) == k.identifier && one.kind == Value::Kind::Int && one.i == 1) counters.push_back(text(left));
  }
  auto is_counter = [&](TSNode x) {
    if (node_is_null(x) || node_symbol(x) != k.identifier) return false;
    std::string_view n = text(x);
    return (!index.empty() && n == index) || std::find(counters.begin(), counters.end(), n) != counters.end();
  };
  for (TSNode stmt : children(body)) {
    if (node_symbol(stmt) != k.if_statement || !node_is_null(field(stmt, k.f_alternative))) continue;
    TSNode consequence = field(stmt, k.f_consequence);
    std::uint32_t n = node_is_null(consequence) ? 0 : ts_node_named_child_count(consequence);
    if (n == 0 || node_symbol(ts_node_named_child(consequence, n - 1)) != k.break_statement) continue;
    NodeList operands;
    std::string_view op;
    if (!binary_comparison(field(stmt, k.f_condition), operands, op)) continue;
    int counter_side = -1;
    if ((op == ">=" || op == ">" || op == "==") && is_counter(operands[0])) counter_side = 0;
    else if ((op == "<=" || op == "<" || op == "==") && is_counter(operands[1])) counter_side = 1;
    if (counter_side < 0) continue;
    Value bound = value_of(operands[static_cast<std::size_t>(1 - counter_side)]);
    // at most N + 1 iterations, whether the test comes before or after the increment
    if (bound.kind == Value::Kind::Int && bound.i >= 0 && bound.i + 1 <= kFewIterations) return true;
  }
  return false;
}

bool SemanticModel::is_top_level_function(int f) const {
  if (f < 0 || static_cast<std::size_t>(f) >= functions_.size()) return false;
  return regions_[functions_[f].region].parent == 0;
}

int SemanticModel::top_level_function_of(TSNode node) const {
  for (int r = region_of(node); r > 0; r = regions_[r].parent) {
    const Region& reg = regions_[r];
    if (reg.kind == Region::Kind::Class) return -1;
    if (reg.kind == Region::Kind::Function) return is_top_level_function(reg.function) ? reg.function : -1;
  }
  return -1;
}

// The caller in another file that runs function region `reg`'s function every
// step, when it is a top-level function the project facts name.
namespace {
// `step`: from the calls made every step, else from those made in a training loop.
const ProjectCaller* entry_of(const ProjectFacts* project, bool step, std::string_view name) {
  if (project == nullptr) return nullptr;
  const auto& entries = step ? project->step_entries : project->loop_entries;
  if (entries.empty()) return nullptr;
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second;
}
}  // namespace

const ProjectCaller* SemanticModel::step_caller_elsewhere(TSNode node) const {
  if (project_ == nullptr || project_->step_entries.empty()) return nullptr;
  for (int r = region_of(node); r >= 0; r = regions_[r].parent) {
    const Region& reg = regions_[r];
    if (reg.kind == Region::Kind::Loop && (step_loop_[r] || training_loop_[r])) return nullptr;
    if (reg.kind == Region::Kind::Function && is_top_level_function(reg.function))
      return entry_of(project_, true, functions_[reg.function].name);
  }
  return nullptr;
}

bool SemanticModel::runs_every_step(TSNode node, GuardMask exempt) const {
  std::vector<int> visiting;
  bool cycle = false;
  return runs_every_step_from(region_of(node), node_start_byte(node), exempt, 0, visiting, cycle);
}

bool SemanticModel::block_exits(TSNode block, bool loop, int depth) const {
  const Kinds& k = kinds();
  std::uint32_t n = node_is_null(block) ? 0 : ts_node_named_child_count(block);
  if (n == 0 || depth > kMaxDepth) return false;
  TSNode last = ts_node_named_child(block, n - 1);
  TSSymbol s = node_symbol(last);
  if (s == k.return_statement || s == k.raise_statement) return true;
  if (loop && (s == k.break_statement || std::string_view(ts_node_type(last)) == "continue_statement")) return true;
  if (s != k.if_statement) return false;
  // an if whose every branch exits, an else included
  if (!block_exits(field(last, k.f_consequence), loop, depth + 1)) return false;
  bool has_else = false;
  for (TSNode clause : children(last)) {
    TSSymbol cs = node_symbol(clause);
    if (cs == k.elif_clause && !block_exits(field(clause, k.f_consequence), loop, depth + 1)) return false;
    if (cs == k.else_clause) {
      has_else = true;
      if (!block_exits(field(clause, k.f_body), loop, depth + 1)) return false;
    }
  }
  return has_else;
}

bool SemanticModel::falls_through_rarely(TSNode if_statement, bool loop, GuardMask exempt, int depth) const {
  if (depth > kMaxDepth) return false;
  const std::uint64_t key = (static_cast<std::uint64_t>(node_start_byte(if_statement)) << 9) |
                            (static_cast<std::uint64_t>(loop) << 8) | exempt;
  if (auto m = rare_if_memo_.find(key); m != rare_if_memo_.end()) return m->second;
  bool rare = falls_through_rarely_uncached(if_statement, loop, exempt, depth);
  rare_if_memo_.emplace(key, rare);
  return rare;
}

bool SemanticModel::falls_through_rarely_uncached(TSNode if_statement, bool loop, GuardMask exempt, int depth) const {
  const Kinds& k = kinds();
  // each branch with the tests its path passed: its own condition, the
  // earlier ones negated. A branch passes when it leaves, when its path's
  // tests carry an exempt guard, or when its own body holds such an `if`
  // (which leaves somewhere). Some branch must leave: with none, every run
  // falls through one branch or another (`if rank == 0: ... else: ...` is
  // rank-dependent on both sides, yet every rank runs what follows).
  GuardMask earlier = 0;  // the guards of the earlier conditions, negated
  bool leaves = false;
  auto branch_passes = [&](TSNode condition, TSNode body) {
    if (block_exits(body, loop, depth + 1) || rare_tail(body, node_end_byte(body), loop, exempt, depth + 1)) {
      leaves = true;
      return true;
    }
    GuardMask path = earlier;
    if (!node_is_null(condition)) path |= classify_condition(condition, false);
    return (path & exempt) != 0;
  };
  TSNode condition = field(if_statement, k.f_condition);
  if (!branch_passes(condition, field(if_statement, k.f_consequence))) return false;
  earlier |= classify_condition(condition, true);
  for (TSNode clause : children(if_statement)) {
    TSSymbol cs = node_symbol(clause);
    if (cs == k.elif_clause) {
      TSNode c = field(clause, k.f_condition);
      if (!branch_passes(c, field(clause, k.f_consequence))) return false;
      earlier |= classify_condition(c, true);
    } else if (cs == k.else_clause) {
      return branch_passes(TSNode{}, field(clause, k.f_body)) && leaves;
    }
  }
  return (earlier & exempt) != 0 && leaves;  // no else: the path that takes no branch
}

bool SemanticModel::rare_tail(TSNode block, std::uint32_t at, bool loop, GuardMask exempt, int depth) const {
  if (node_is_null(block) || depth > kMaxDepth) return false;
  for (TSNode stmt : children(block)) {
    if (node_end_byte(stmt) > at) break;  // the statement holding `at`, and those after it
    if (node_symbol(stmt) == kinds().if_statement && falls_through_rarely(stmt, loop, exempt, depth)) return true;
  }
  return false;
}

bool SemanticModel::after_rare_early_exit(int r, std::uint32_t at, GuardMask exempt) const {
  const Kinds& k = kinds();
  if (exempt == 0) return false;
  TSNode body = field(regions_[r].node, k.f_body);
  if (node_is_null(body)) return false;
  bool loop = regions_[r].kind == Region::Kind::Loop;
  // the statements before `at` in its block and in the blocks around it up to
  // the body: `with torch.no_grad():` and `try:` bodies run in line
  std::vector<TSNode> blocks{body};
  for (std::size_t i = 0; i < blocks.size() && blocks.size() < 16; ++i) {
    for (TSNode stmt : children(blocks[i])) {
      if (node_start_byte(stmt) > at || node_end_byte(stmt) < at) continue;
      TSSymbol s = node_symbol(stmt);
      if (s == k.with_statement || s == k.try_statement) {
        TSNode inner = field(stmt, k.f_body);
        if (!node_is_null(inner) && node_start_byte(inner) <= at && at < node_end_byte(inner)) blocks.push_back(inner);
      }
    }
  }
  // what follows an `if` whose every path that falls through passed a rare
  // test runs only on those paths: `if step % every != 0: return`, or an
  // if/else tree of such tests (`if step == 0: ... else: if step % n != 0: return`)
  for (TSNode block : blocks)
    if (rare_tail(block, at, loop, exempt, 0)) return true;
  return false;
}

bool SemanticModel::runs_every_step_from(int region, std::uint32_t at, GuardMask exempt, int depth,
                                         std::vector<int>& visiting, bool& cycle) const {
  if (depth > 256) return false;  // call chains deeper than this are not followed
  for (int r = region; r >= 0; r = regions_[r].parent) {
    const Region& reg = regions_[r];
    switch (reg.kind) {
      case Region::Kind::Branch:
        if (reg.guard & exempt) return false;
        break;
      case Region::Kind::Loop:
        // a loop of a few iterations (a probe, a smoke test): nothing adds up per step
        if (step_loop_[r]) {
          if (few_iterations_[r] || after_rare_early_exit(r, at, exempt)) return false;
          // the loop's function runs only under such guards (a learning-rate
          // finder behind `if args.find_lr:`): its steps are no steps of the run
          const int fr = reg.scope;
          return !(fr > 0 && regions_[fr].kind == Region::Kind::Function &&
                   called_only_under(regions_[fr].function, exempt));
        }
        if (training_loop_[r]) return false;  // an epoch loop: runs once per epoch
        break;
      case Region::Kind::Function: {
        // after an early exit on a rare condition (`if step % every != 0: return`)
        if (after_rare_early_exit(r, at, exempt)) return false;
        // memoised per (function, exempt): each function's call sites are
        // examined once per query kind, however the call graph branches
        std::uint64_t key = (static_cast<std::uint64_t>(reg.function) << 8) | exempt;
        if (auto m = step_memo_.find(key); m != step_memo_.end()) return m->second;
        if (std::find(visiting.begin(), visiting.end(), reg.function) != visiting.end()) {
          cycle = true;  // answers that met this cycle are provisional
          return false;
        }
        // a Lightning hook that the Trainer's loop runs for every batch
        if (is_lightning_step_hook(reg.function)) return true;
        // called every step by a training loop of another file of the project
        // (a call with no guard of any kind, so it holds whatever `exempt` is)
        if (is_top_level_function(reg.function) &&
            entry_of(project_, true, functions_[reg.function].name) != nullptr)
          return true;
        visiting.push_back(reg.function);
        bool any = false, saw_cycle = false;
        for (int ci : callers_[reg.function]) {
          bool inner_cycle = false;
          if (runs_every_step_from(calls_[ci].region, node_start_byte(calls_[ci].node), exempt, depth + 1, visiting,
                                   inner_cycle)) {
            any = true;
            break;
          }
          saw_cycle |= inner_cycle;
        }
        visiting.pop_back();
        if (any || !saw_cycle) step_memo_[key] = any;
        cycle |= saw_cycle && !any;
        return any;
      }
      case Region::Kind::Class:
      case Region::Kind::Module:
        return false;
      case Region::Kind::With:
        break;
    }
  }
  return false;
}

bool SemanticModel::called_only_under(int f, GuardMask exempt) const {
  // only options that are off unless given (`if args.find_lr:`): a function
  // called on rank 0 and another way on the other ranks (an `if`/`else` on
  // the rank) still runs every step somewhere
  if ((exempt & kGuardOffByDefault) == 0) return false;
  if (f < 0 || static_cast<std::size_t>(f) >= callers_.size() || callers_[f].empty()) return false;
  if (!is_top_level_function(f) || is_lightning_step_hook(f)) return false;
  // a decorator may register it (`@registry.register`), and a file that
  // reaches names dynamically (`globals()["loop"]`) may call it unseen
  TSNode parent = ts_node_parent(functions_[f].node);
  if (!node_is_null(parent) && node_symbol(parent) == kinds().decorated_definition) return false;
  if (dynamic_name_use() & (kNamesByScope | kVarsOfScope | kNamesByAttribute)) return false;
  const std::string_view name = functions_[f].name;
  if (project_ != nullptr) {
    const ProjectFacts& p = *project_;
    if (p.imported_whole || p.imported_names.count(name) != 0 || entry_of(project_, true, name) != nullptr ||
        entry_of(project_, false, name) != nullptr)
      return false;
  }
  // its name: the definition and the calls, nothing else
  if (!name_occurrences_built_) build_name_occurrences();
  NameOccurrence key{name_hash(name), 0, 0};
  std::size_t mentions = 0;
  for (auto it = std::lower_bound(name_occurrences_.begin(), name_occurrences_.end(), key);
       it != name_occurrences_.end() && it->hash == key.hash; ++it)
    if (source_.text().substr(it->start, it->end - it->start) == name &&
        !(it->start > 0 && source_.text()[it->start - 1] == '.'))  // `args.find_lr` is another name
      ++mentions;
  if (mentions != callers_[f].size() + 1) return false;
  for (int ci : callers_[f]) {
    const CallSite& c = calls_[ci];
    if (node_is_null(c.callee) || node_symbol(c.callee) != kinds().identifier) return false;
    bool guarded = false;
    for (int r = c.region; r > 0 && !guarded; r = regions_[r].parent) {
      const Region& reg = regions_[r];
      if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) break;
      // a mode of its own: the branch ends the run's function after the call
      // (`if args.find_lr: record_lr(...); plot(...); return`), not a phase
      // an option turns on (`if args.do_train: train(...)`, then evaluation)
      if (reg.kind == Region::Kind::Branch && !reg.negated && (reg.guard & kGuardOffByDefault) &&
          block_exits(field(reg.node, kinds().f_consequence), false, 0))
        guarded = true;
    }
    if (!guarded) return false;
  }
  return true;
}

bool SemanticModel::in_training_loop(TSNode node) const {
  std::vector<int> visiting;
  std::unordered_map<int, bool> memo;
  std::function<bool(int, int)> rec = [&](int region, int depth) -> bool {
    if (depth > kMaxDepth) return false;
    for (int r = region; r >= 0; r = regions_[r].parent) {
      const Region& reg = regions_[r];
      if (reg.kind == Region::Kind::Loop && training_loop_[r]) return !few_iterations_[r];
      if (reg.kind == Region::Kind::Class || reg.kind == Region::Kind::Module) return false;
      if (reg.kind == Region::Kind::Function) {
        if (auto m = memo.find(reg.function); m != memo.end()) return m->second;
        if (std::find(visiting.begin(), visiting.end(), reg.function) != visiting.end()) return false;
        if (is_lightning_step_hook(reg.function)) return true;
        if (project_ && is_top_level_function(reg.function) &&
            (entry_of(project_, true, functions_[reg.function].name) ||
             entry_of(project_, false, functions_[reg.function].name)))
          return true;
        visiting.push_back(reg.function);
        bool any = false;
        for (int ci : callers_[reg.function]) any = any || rec(calls_[ci].region, depth + 1);
        visiting.pop_back();
        memo[reg.function] = any;  // linear in the call graph (a cycle may answer false early)
        return any;
      }
    }
    return false;
  };
  return rec(region_of(node), 0);
}

}  // namespace ddplint
