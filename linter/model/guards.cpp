// Guards: what a branch condition tests (periodic step, final step, main process,
// rank, off by default) as a GuardMask, and the guards that enclose a node.
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <vector>

namespace ddplint {

using namespace model_detail;

namespace {

bool is_main_process_name(std::string_view raw) {
  std::string name = lower(raw);
  static constexpr std::array<std::string_view, 16> names = {
      "master_process", "is_master", "is_main_process", "main_process", "is_main", "is_rank0",
      "rank0", "is_rank_zero", "rank_zero", "is_primary", "is_global_zero", "is_local_main_process",
      "is_main_rank", "master", "is_master_process", "is_leader"};
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  // the main process of a node or of a process subgroup, spelled as a
  // predicate: `is_subgroup_main_process()`, `is_node_main_process()`
  return name.starts_with("is_") && (name.ends_with("_main_process") || name.ends_with("_master_process")) &&
         name.find("not") == std::string::npos;
}

}  // namespace

namespace {
constexpr GuardMask kNeutral = 0x80;  // single-process check inside an `or`
// the largest bound of a branch on the first steps (`if step < 10:`): a guess
// at "a few", far below any run's length; a predicate that returns such a
// test (`return step < warmup or step % n == 0`) is trusted with any bound
constexpr std::int64_t kFirstStepsBound = 100;

// `step < 3`, `global_step <= 10`, `3 > it`, `step == 1`: a bound (a constant
// integer, at most `max_bound`) on a step or iteration counter holds on the first few steps
// of a run only, so a branch on it is as rare as a periodic one (`it < max_iter`
// with a large bound is most of the run: not one). `operands` are the
// comparison's two operands and `op` its operator.
bool first_steps_test(const SemanticModel& model, const NodeList& operands, std::string_view op,
                      std::int64_t max_bound) {
  if (operands.size() != 2) return false;
  int counter_side;
  if (op == "<" || op == "<=") counter_side = 0;
  else if (op == ">" || op == ">=") counter_side = 1;
  else if (op == "==") counter_side = model.value_of(operands[0]).kind == Value::Kind::Int ? 1 : 0;  // one early step
  else return false;
  Value bound = model.value_of(operands[1 - counter_side]);
  if (bound.kind != Value::Kind::Int || bound.i > max_bound) return false;
  std::string counter = lower(model.last_name(operands[counter_side]));
  return contains(counter, "step") || contains(counter, "iter");
}

// A test of whether a value is finite, through the reductions and reads that
// keep its sense: +1 when it holds on a non-finite value (`torch.isnan(x)`,
// `x.isinf().any()`, `math.isnan(v)`), -1 when it holds on a finite one
// (`torch.isfinite(x).all()`, `math.isfinite(v)`), 0 for anything else.
int nonfinite_test(const SemanticModel& model, TSNode c, int depth) {
  const Kinds& k = kinds();
  if (node_is_null(c) || depth > 6) return 0;
  if (node_symbol(c) == k.parenthesized_expression && !node_is_null(parenthesized_inner(c)))
    return nonfinite_test(model, parenthesized_inner(c), depth + 1);
  if (node_symbol(c) != k.call) return 0;
  const CallSite* site = model.call_at(c);
  if (site == nullptr) return 0;
  std::string_view m = site->method;
  const bool method = !node_is_null(site->receiver);
  // the sense passes through `.any()`/`.all()`/`.item()` and `bool()`,
  // `torch.any()`/`torch.all()` (any of isnan, all of isfinite)
  if (method && (m == "any" || m == "all" || m == "item") && model.positional_count(*site) == 0)
    return nonfinite_test(model, site->receiver, depth + 1);
  std::string_view canonical = site->canonical;
  if (canonical == "bool" || canonical == "torch.any" || canonical == "torch.all" ||
      (canonical.empty() && !method && m == "bool"))
    return nonfinite_test(model, model.argument(*site, "input", 0), depth + 1);
  for (std::string_view lib : {"torch.", "math.", "numpy.", "cmath."}) {
    if (!canonical.starts_with(lib)) continue;
    std::string_view f = canonical.substr(lib.size());
    if (f == "isnan" || f == "isinf" || f == "isneginf" || f == "isposinf") return 1;
    if (f == "isfinite") return -1;
  }
  if (method && (m == "isnan" || m == "isinf")) return 1;
  if (method && m == "isfinite") return -1;
  return 0;
}

// +1 when `c` is a range check that holds only on out-of-range values: the
// largest value of a tensor above a number, or its smallest below one
// (`torch.min(y) < -1.0`, `y.max() > 1.0`, `x.abs().max() > 1500`), the
// sanity checks of a waveform bounded by tanh or of a sample's coordinates;
// -1 for the opposite test (`torch.max(y) <= 1.0`, it holds on good values);
// 0 for anything else (`loss > 10`, a comparison with a variable).
int range_check_test(const SemanticModel& model, TSNode c) {
  const Kinds& k = kinds();
  NodeList operands;
  std::string_view op;
  if (!model.binary_comparison(c, operands, op)) return 0;
  if (op != "<" && op != "<=" && op != ">" && op != ">=") return 0;
  // the side that reduces a tensor to its extreme, and the number on the other
  auto extreme = [&](TSNode x) -> int {  // +1 max, -1 min, 0 neither
    if (node_is_null(x) || node_symbol(x) != k.call) return 0;
    const CallSite* site = model.call_at(x);
    if (site == nullptr) return 0;
    std::string_view m = site->method;
    if (!node_is_null(site->receiver) && site->canonical.empty() && model.positional_count(*site) == 0 &&
        model.arguments(*site).empty()) {
      if (m == "max" || m == "amax") return 1;
      if (m == "min" || m == "amin") return -1;
    }
    if ((site->canonical == "torch.max" || site->canonical == "torch.amax") && model.arguments(*site).size() == 1) return 1;
    if ((site->canonical == "torch.min" || site->canonical == "torch.amin") && model.arguments(*site).size() == 1) return -1;
    return 0;
  };
  auto number = [&](TSNode x) {
    if (node_is_null(x)) return false;
    if (node_symbol(x) == k.unary_operator) x = field(x, k.f_argument);
    return !node_is_null(x) && (node_symbol(x) == k.integer || node_symbol(x) == k.float_);
  };
  int e = extreme(operands[0]);
  bool greater = op == ">" || op == ">=";
  if (e != 0 && number(operands[1])) return (e > 0) == greater ? 1 : -1;
  e = extreme(operands[1]);
  if (e != 0 && number(operands[0])) return (e > 0) == !greater ? 1 : -1;
  return 0;
}

}  // namespace

GuardMask SemanticModel::classify_condition(TSNode cond, bool negated) const {
  return static_cast<GuardMask>(classify_rec(cond, negated, 0) & ~kNeutral);
}

// classify_condition's recursion: `c` under `neg` negations, `depth` levels down.
GuardMask SemanticModel::classify_rec(TSNode c, bool neg, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(c) || depth > kMaxDepth) return 0;
  TSSymbol s = node_symbol(c);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(c)))
    return classify_rec(parenthesized_inner(c), neg, depth + 1);
  if (s == k.not_operator) {
    TSNode arg = ts_node_named_child(c, 0);
    std::string name = lower(last_name(arg));
    if (!neg && (contains(name, "distributed") || contains(name, "ddp") || name == "is_dist")) return kNeutral;
    return classify_rec(arg, !neg, depth + 1);
  }
  if (s == k.boolean_operator) {
    std::string_view op = text(field(c, k.f_operator));
    GuardMask a = classify_rec(field(c, k.f_left), neg, depth + 1);
    GuardMask b = classify_rec(field(c, k.f_right), neg, depth + 1);
    bool conj = (op == "and") != neg;  // De Morgan for the negated branch
    if (conj) return static_cast<GuardMask>((a | b) & ~kNeutral);
    if (a & kNeutral) return static_cast<GuardMask>(b & ~kNeutral);
    if (b & kNeutral) return static_cast<GuardMask>(a & ~kNeutral);
    // `step % log_every == 0 or last_batch`: either side rare makes a rare branch
    constexpr GuardMask rare = kGuardPeriodic | kGuardFinalStep | kGuardMainProcess;
    if ((a & rare) && (b & rare)) return static_cast<GuardMask>(((a | b) & rare) | (a & b));
    // `stop_requested or step % save_every == 0` with the flag off by default:
    // as configured, the other side decides
    if (a == kGuardOffByDefault && b != 0) return b;
    if (b == kGuardOffByDefault && a != 0) return a;
    // `torch.isnan(x).any() or x.abs().max() > 1500`: a failure either way
    if ((a & kGuardOnFailure) && (b & kGuardOnFailure)) return kGuardOnFailure;
    return static_cast<GuardMask>(a & b);
  }
  if (s == k.comparison_operator) {
    // a range check of a tensor's values (`if torch.min(y) < -1.0:`): it holds only on bad values
    if (int sense = range_check_test(*this, c); sense != 0 && (sense > 0) != neg) return kGuardOnFailure;
    // operands are the named children; operators are the anonymous ones
    // (two operands have one operator token between them, or two for `not in`
    // and `is not`; a chain such as `a < b < c` has more operands: not classified)
    NodeList operands;
    std::string_view first_op;
    std::string joined;  // the operator tokens joined by spaces, when there are several
    int op_count = 0;
    for (TSNode ch : children(c, false)) {
      if (ts_node_is_named(ch)) {
        operands.push_back(ch);
      } else if (op_count++ == 0) {
        first_op = text(ch);
      } else {
        if (op_count == 2) joined = std::string(first_op);
        joined.append(" ").append(text(ch));
      }
    }
    if (operands.size() != 2 || op_count == 0) return 0;
    const std::string_view op = op_count == 1 ? first_op : std::string_view(joined);
    bool eq = op == "==" || op == "in" || op == "is";
    bool ne = op == "!=" || op == "not in" || op == "is not";
    bool positive = (eq && !neg) || (ne && neg);
    // periodic: a modulo on either side (the `%` operation, or a null node)
    auto modulo = [&](TSNode x) -> TSNode {
      for (int guard = 0; guard < 8 && !node_is_null(x); ++guard) {
        TSSymbol xs = node_symbol(x);
        if (xs == k.parenthesized_expression && !node_is_null(parenthesized_inner(x))) {
          x = parenthesized_inner(x);
          continue;
        }
        if (xs != k.binary_operator) return {};
        if (text(field(x, k.f_operator)) == "%") {
          if (node_symbol(field(x, k.f_left)) == k.string) return {};  // not "%d" % x
          return x;
        }
        x = field(x, k.f_left);
      }
      return {};
    };
    auto has_mod = [&](TSNode x) { return !node_is_null(modulo(x)); };
    if (has_mod(operands[0]) || has_mod(operands[1])) {
      // `(i + 1) % accum_iter == 0` where the project's launches leave
      // accum_iter at 1: true on every step, no interval (an option that
      // only some runs raise is how the project runs it, the launch decides)
      const bool left = has_mod(operands[0]);
      TSNode mod = modulo(left ? operands[0] : operands[1]);
      TSNode m = left ? operands[0] : operands[1];
      while (node_symbol(m) == k.parenthesized_expression && !node_is_null(parenthesized_inner(m)))
        m = parenthesized_inner(m);
      if (positive && op_count == 1 && node_eq(m, mod)) {
        Value zero = value_of(left ? operands[1] : operands[0]);
        Value every = launched_value(field(mod, k.f_right));
        if (zero.kind == Value::Kind::Int && zero.i == 0 && every.kind == Value::Kind::Int && every.i == 1) return 0;
      }
      // `rank % ngpus_per_node == 0`: the first process of each node, not a step interval
      if (node_symbol(m) == k.binary_operator && is_rank_value(field(m, k.f_left)))
        return positive ? (kGuardMainProcess | kGuardRankDependent) : kGuardRankDependent;
      return positive ? kGuardPeriodic : 0;
    }
    // the first few steps: `step < 3` (a bound that does not hold, `step >= 3`,
    // is every later step and stays unclassified)
    if (op_count == 1 && !neg && first_steps_test(*this, operands, op, kFirstStepsBound)) return kGuardPeriodic;
    // the test that breaks the loop: `step >= stop_at` beside `if step >= stop_at: break`
    if (!neg && (op == ">=" || op == ">" || op == "==") && ends_enclosing_loop(c)) return kGuardFinalStep;
    GuardMask g = 0;
    bool r0 = is_rank_value(operands[0]), r1 = is_rank_value(operands[1]);
    if (r0 || r1) {
      // decided by the ranks it holds on, not by its spelling: every rank of a
      // distributed run (`local_rank >= 0`, `rank != -1`) or none (`rank == -1`,
      // `local_rank < 0`) is the script's distributed-mode test, the same on
      // every rank; rank 0 alone (`rank == 0`, `local_rank <= 0`, `rank in
      // (-1, 0)`, `rank < 1`) is the main process
      switch (rank_comparison_mask(c, neg, nullptr)) {
        case 0:
        case 3: return kNeutral;
        case 1: return kGuardMainProcess | kGuardRankDependent;
        case 2:
        case 4: return kGuardRankDependent;
        default: break;
      }
      g |= kGuardRankDependent;
      TSNode other = r0 ? operands[1] : operands[0];
      Value v = value_of(other);
      if (v.kind == Value::Kind::Int && v.i == 0 && positive) g |= kGuardMainProcess;
      // `rank == -1` / `rank != -1`: the script's distributed-mode test (-1 means
      // "not launched distributed"), the same on every rank, not a rank test
      if (v.kind == Value::Kind::Int && v.i == -1 && (eq || ne)) return kNeutral;
      TSSymbol os = node_symbol(other);
      if ((os == k.tuple || os == k.list || os == k.set_comprehension || ts_node_named_child_count(other) > 0) &&
          (op == "in") && !neg) {
        bool all_le_zero = ts_node_named_child_count(other) > 0;
        for (TSNode element : children(other)) {
          Value e = value_of(element);
          if (e.kind != Value::Kind::Int || e.i > 0) all_le_zero = false;
        }
        if (all_le_zero) g |= kGuardMainProcess;
      }
      return g;
    }
    if (is_world_size_value(operands[0]) || is_world_size_value(operands[1])) {
      TSNode other = is_world_size_value(operands[0]) ? operands[1] : operands[0];
      Value v = value_of(other);
      if (v.kind == Value::Kind::Int && v.i == 1 && ((op == "==" && !neg) || (op == "<=" && !neg))) return kNeutral;
    }
    // an option passed down as a parameter and compared with a number
    // (`def train(..., eval_every=0): if eval_every > 0 and ...: evaluate()`)
    // where every call passes a value that fails the test
    if (op_count == 1 && (op == ">" || op == ">=" || op == "<" || op == "<=" || op == "==" || op == "!=")) {
      for (int side = 0; side < 2; ++side) {
        if (node_symbol(operands[side]) != k.identifier) continue;
        Value bound = value_of(operands[1 - side]);
        if (bound.kind != Value::Kind::Int) continue;
        if (GuardMask via = parameter_comparison_guard(operands[side], op, side == 0, bound.i, neg); via != 0) return via;
      }
    }
    // a configuration choice the launched configuration does not make:
    // `if args.precision == "fp16":` where --precision defaults to "bf16" (and
    // no launch script gives another), `if mode in ("debug", "profile"):`
    // with `mode = "train"`. Strings only: a rank or a step is never a constant.
    if (eq || ne) {
      for (int side = 0; side < 2; ++side) {
        TSNode config = operands[side], choice = operands[1 - side];
        Value cv = value_of(config);
        if (cv.kind != Value::Kind::Str || node_symbol(config) == k.string) continue;
        bool member = false, known = true;
        if (op == "in" || op == "not in") {
          if (side != 0) continue;  // `"fp16" in args.precision`: a substring test
          TSSymbol cs = node_symbol(choice);
          if (cs != k.tuple && cs != k.list) continue;
          int n = 0;
          for (TSNode element : children(choice)) {
            Value e = value_of(element);
            if (e.kind != Value::Kind::Str) known = false;
            else if (e.s == cv.s) member = true;
            ++n;
          }
          if (n == 0) known = false;
        } else {
          Value lv = value_of(choice);
          if (lv.kind != Value::Kind::Str) known = false;
          else member = lv.s == cv.s;
        }
        if (!known) break;
        bool holds = member == eq;
        if (neg) holds = !holds;
        return holds ? GuardMask{0} : static_cast<GuardMask>(kGuardOffByDefault);
      }
    }
    // one iteration: `if batch_idx == 0:`, `if i == 3:` on a counter of the loop
    // around it (a loop target) or the batch index a Lightning hook is given
    if (positive && op == "==") {
      for (int side = 0; side < 2; ++side) {
        TSNode counter = operands[side], other = operands[1 - side];
        Value v = value_of(other);
        if (v.kind != Value::Kind::Int || node_symbol(counter) != k.identifier) continue;
        for (const Binding* b : bindings_of(text(counter), region_of(counter))) {
          bool hook_index = b->kind == Binding::Kind::Parameter && text(counter) == "batch_idx";
          if (b->kind == Binding::Kind::LoopTarget || hook_index) return kGuardFinalStep;
        }
      }
      // a counter equal to a value the loop does not change holds on one
      // iteration: `j + 1 == nbatches`, `self.iteration_step ==
      // self.initial_iter_step` (the first step after a resume)
      if (op_count == 1 && !neg && one_iteration_test(operands[0], operands[1])) return kGuardFinalStep;
    }
    // final iteration: `i == len(loader) - 1`, `step == max_steps`, `i + 1 == n`
    if ((op == "==" || op == ">=" || op == ">") && !neg) {
      for (TSNode x : operands) {
        std::string t = lower(text(x));
        if (contains(t, "len(") || contains(t, "- 1") || contains(t, "-1") || contains(t, "last") ||
            contains(t, "final") || contains(t, "max_") || contains(t, "total") || contains(t, "num_steps") ||
            contains(t, "num_iter") || contains(t, "max_iter"))
          return kGuardFinalStep;
      }
    }
    return 0;
  }
  if (s == k.binary_operator && text(field(c, k.f_operator)) == "%") {
    if (!neg) return 0;  // `if step % n:` runs on most steps
    // `if not step % n:` every n steps, and on every step where the launches leave n at 1
    Value every = launched_value(field(c, k.f_right));
    return every.kind == Value::Kind::Int && every.i == 1 ? 0 : kGuardPeriodic;
  }
  if (s == k.call) {
    std::string_view name = last_name(field(c, k.f_function));
    if (is_main_process_name(name)) return neg ? kGuardRankDependent : (kGuardMainProcess | kGuardRankDependent);
    // a branch taken only on a non-finite value: the step failed (NaN loss)
    if (int sense = nonfinite_test(*this, c, 0); sense != 0 && (sense > 0) != neg) return kGuardOnFailure;
    // a periodic predicate of this file: `if every_n_steps(state, freq):`, `if self.should_log(step):`
    if (!neg && depth < 4) {
      if (const CallSite* site = call_at(c)) {
        auto targets = resolve_local_function(*site);
        if (targets.size() == 1 && periodic_predicate(targets[0], depth)) return kGuardPeriodic;
      }
    }
    // `if not dist.get_rank():` is `if dist.get_rank() == 0:`
    if (is_rank_value(c)) return neg ? (kGuardMainProcess | kGuardRankDependent) : kGuardRankDependent;
    return 0;
  }
  if (s == k.identifier || s == k.attribute) {
    std::string_view name = last_name(c);
    if (is_main_process_name(name)) return neg ? kGuardRankDependent : (kGuardMainProcess | kGuardRankDependent);
    // a parameter its callers pass a test to: `launch_evals(launch_evaluate=it % freq == 0)`
    if (s == k.identifier && depth < 6) {
      GuardMask via = parameter_guard(c, neg, depth);
      if (via != 0) return via;
    }
    // a name bound once to a test: `g_regularize = i % g_reg_every == 0`,
    // `args.save_logs = args.logs and is_master(args)`; the test decides
    TSNode bound = single_assignment(c);
    if (!node_is_null(bound)) {
      TSSymbol bs = node_symbol(bound);
      // (or to a call: `log_now = self.should_log()`, a periodic predicate)
      if (bs == k.comparison_operator || bs == k.boolean_operator || bs == k.not_operator ||
          bs == k.parenthesized_expression || bs == k.call) {
        GuardMask via = classify_rec(bound, neg, depth + 1);
        if (via != 0) return via;  // else the name may still say (`last_batch = i == n_batches`)
      }
    }
    // an opt-in flag that is off unless the user turns it on; an instance
    // flag (`self.stop_requested = False` in __init__) by the value it starts
    // with, which value_of leaves unknown across methods
    Value flag = value_of(c);
    if (!flag.known() && !node_is_null(bound) && path_of(c).starts_with("self.")) flag = value_of(bound);
    // a configuration object's field (`if cfg.sync_every_step:`) by its class's default
    if (!flag.known() && s == k.attribute && node_is_null(bound)) flag = config_field_default(c);
    if (flag.known() && flag.truthy() == neg) return kGuardOffByDefault;
    // a local flag that starts false and is set only on rare steps
    // (`cancel_initiated = False`, then `if step % check_every == 0:
    // cancel_initiated = check()`): false on most steps
    if (!flag.known() && !neg && s == k.identifier && rarely_set_flag(c, depth)) return kGuardOffByDefault;
    std::string l = lower(name);
    if (is_rank_value(c)) return neg ? (kGuardMainProcess | kGuardRankDependent) : kGuardRankDependent;
    if (!neg && (contains(l, "last") || contains(l, "final"))) return kGuardFinalStep;
    if (!neg && s == k.identifier && ends_enclosing_loop(c)) return kGuardFinalStep;
    return 0;
  }
  return 0;
}

// The guard a test of parameter `name` carries, from the calls of its function:
// `def launch_evals(launch_evaluate, ...): if launch_evaluate: evaluate(...)`
// called as `launch_evals(launch_evaluate=(it % eval_freq == 0) and it != 0)`
// in a step loop runs the evaluation on the steps that test holds on. The
// answer is what every call's argument tests (the intersection of their
// guards): a call that passes a constant the branch never takes (`False` for
// `if flag:`, or leaves out a parameter that defaults to one) adds nothing,
// and when no call takes it the branch is off by default; a call made once
// per epoch or once at module level adds nothing either (the question is how
// often in steps);
// a call whose argument is unknown, that unpacks `*args`/`**kwargs`, or a
// function that another file of the project calls (its arguments are not
// seen here), or one with no call in this file, makes it unknown (0). The
// parameter must be bound only as the parameter (not reassigned in the body).
std::optional<SemanticModel::LocalParameter> SemanticModel::local_parameter(TSNode name, bool imported_too) const {
  std::string_view id = text(name);
  BindingList bound = bindings_of(id, region_of(name));
  if (bound.size() != 1 || bound[0]->kind != Binding::Kind::Parameter) return std::nullopt;
  const Region& scope = regions_[bound[0]->scope];
  if (scope.kind != Region::Kind::Function) return std::nullopt;
  const int f = scope.function;
  if (f < 0 || static_cast<std::size_t>(f) >= callers_.size() || callers_[f].empty()) return std::nullopt;
  if (project_ != nullptr && is_top_level_function(f)) {
    std::string_view fname = functions_[f].name;
    if (project_->step_entries.count(fname) != 0 || project_->loop_entries.count(fname) != 0) return std::nullopt;
    if (imported_too && (project_->imported_names.count(fname) != 0 || project_->imported_whole)) return std::nullopt;
  }
  LocalParameter out;
  out.function = f;
  auto params = parameters_of(f);
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].first == id) {
      out.position = static_cast<int>(i);
      out.fallback = params[i].second;
    }
  }
  if (out.position < 0) return std::nullopt;
  return out;
}

GuardMask SemanticModel::parameter_guard(TSNode name, bool neg, int depth) const {
  std::string_view id = text(name);
  std::optional<LocalParameter> param = local_parameter(name, false);
  if (!param) return 0;
  const int f = param->function, position = param->position;
  const TSNode fallback = param->fallback;
  std::uint64_t key = (static_cast<std::uint64_t>(f) << 32) | (static_cast<std::uint64_t>(position) << 1) | (neg ? 1u : 0u);
  if (auto m = parameter_guard_memo_.find(key); m != parameter_guard_memo_.end()) return m->second;
  parameter_guard_memo_[key] = 0;  // a recursive question meets "unknown"
  constexpr GuardMask kAll = 0x7F;
  GuardMask acc = kAll;
  bool any = false, rare_elsewhere = false;
  for (int ci : callers_[f]) {
    const CallSite& call = calls_[ci];
    if (has_unpacked_arguments(call)) return 0;
    TSNode arg = argument(call, id, position);
    if (node_is_null(arg)) arg = fallback;
    if (node_is_null(arg)) return 0;
    Value v = value_of(arg);
    if (v.known() && v.truthy() == neg) continue;  // this call never takes the branch
    // a call in an epoch loop (a training loop around the step loop), or at
    // module level outside any loop, runs once per epoch or once: it cannot
    // make the branch run every step
    int loop = innermost_loop(call.region);
    if (loop >= 0 ? (training_loop_[loop] && !step_loop_[loop]) : regions_[call.region].scope == 0) {
      rare_elsewhere = true;
      continue;
    }
    acc = static_cast<GuardMask>(acc & classify_rec(arg, neg, depth + 1) & ~kNeutral);
    any = true;
    if (acc == 0) return 0;
  }
  // no call takes the branch (each passes, or defaults to, a constant that
  // fails the test): off unless code this file does not show passes one
  GuardMask out = any ? acc : rare_elsewhere ? 0 : kGuardOffByDefault;
  parameter_guard_memo_[key] = out;
  return out;
}

// `eval_every > 0` on a parameter, as the calls of its function pass it:
// `train(loader, model)` with `eval_every=0` by default, and `train(...,
// eval_every=args.eval_every)` where the option defaults to -1. When every
// call of the function in this file passes (or leaves out for its default) an
// integer the test fails on, the branch is off unless the user turns the
// option on (kGuardOffByDefault). A call whose value is not a known integer,
// that unpacks arguments, a function other files call, or one this file never
// calls: unknown (0). The parameter must be bound only as the parameter.
GuardMask SemanticModel::parameter_comparison_guard(TSNode name, std::string_view op, bool name_left,
                                                    std::int64_t bound, bool neg) const {
  std::string_view id = text(name);
  std::optional<LocalParameter> param = local_parameter(name, true);
  if (!param) return 0;
  const int position = param->position;
  const TSNode fallback = param->fallback;
  for (int ci : callers_[param->function]) {
    const CallSite& call = calls_[ci];
    if (has_unpacked_arguments(call)) return 0;
    TSNode arg = argument(call, id, position);
    if (node_is_null(arg)) arg = fallback;
    if (node_is_null(arg)) return 0;
    Value v = value_of(arg);
    if (v.kind != Value::Kind::Int) return 0;
    std::int64_t a = name_left ? v.i : bound, b = name_left ? bound : v.i;
    bool holds = op == ">"    ? a > b
                 : op == ">=" ? a >= b
                 : op == "<"  ? a < b
                 : op == "<=" ? a <= b
                 : op == "==" ? a == b
                              : a != b;
    if (holds != neg) return 0;  // this call takes the branch
  }
  return kGuardOffByDefault;
}

Value SemanticModel::config_field_default(TSNode attr) const {
  const Kinds& k = kinds();
  if (node_is_null(attr) || node_symbol(attr) != k.attribute) return {};
  TSNode object = field(attr, k.f_object), name_node = field(attr, k.f_attribute);
  if (node_is_null(object) || node_symbol(object) != k.identifier || node_is_null(name_node)) return {};
  std::string_view name = text(name_node);
  BindingList bound = bindings_of(text(object), region_of(attr));
  if (bound.size() != 1) return {};
  std::string_view class_name;
  if (bound[0]->kind == Binding::Kind::Parameter) {
    TSNode p = ts_node_parent(bound[0]->target);
    if (node_is_null(p) || (node_symbol(p) != k.typed_parameter && node_symbol(p) != k.typed_default_parameter)) return {};
    TSNode type = ts_node_child_by_field_name(p, "type", 4);
    if (node_is_null(type)) return {};
    if (ts_node_named_child_count(type) == 1) type = ts_node_named_child(type, 0);
    if (node_symbol(type) != k.identifier) return {};
    class_name = text(type);
  } else if (bound[0]->kind == Binding::Kind::Assign && !node_is_null(bound[0]->value)) {
    const CallSite* call = call_at(bound[0]->value);
    if (call == nullptr || node_is_null(call->callee) || node_symbol(call->callee) != k.identifier) return {};
    if (positional_count(*call) != 0 || has_unpacked_arguments(*call) || !node_is_null(argument(*call, name))) return {};
    class_name = text(call->callee);
  } else {
    return {};
  }
  // the top-level classes of the file, by name (once)
  if (!config_classes_) {
    config_classes_.emplace();
    for (TSNode c : children(regions_[0].node)) {
      TSNode def = node_symbol(c) == k.decorated_definition ? field(c, k.f_definition) : c;
      if (node_is_null(def) || node_symbol(def) != k.class_definition) continue;
      ConfigClass entry;
      entry.body = field(def, k.f_body);
      (*config_classes_)[text(field(def, k.f_name))] = entry;
    }
  }
  auto it = config_classes_->find(class_name);
  if (it == config_classes_->end() || node_is_null(it->second.body)) return {};
  ConfigClass& cls = it->second;
  if (!cls.read) {  // its fields' literal defaults (once per class)
    cls.read = true;
    for (TSNode st : children(cls.body)) {
      TSNode def = node_symbol(st) == k.decorated_definition ? field(st, k.f_definition) : st;
      if (!node_is_null(def) && node_symbol(def) == k.function_definition) {
        std::string_view fn = text(field(def, k.f_name));
        if (fn == "__init__" || fn == "__post_init__") cls.has_init = true;
        continue;
      }
      if (node_symbol(st) != k.expression_statement || ts_node_named_child_count(st) != 1) continue;
      TSNode a = ts_node_named_child(st, 0);
      if (node_symbol(a) != k.assignment) continue;
      TSNode left = field(a, k.f_left);
      if (node_symbol(left) != k.identifier) continue;
      TSNode right = field(a, k.f_right);
      if (const CallSite* f = node_is_null(right) ? nullptr : call_at(right);
          f != nullptr && (f->canonical == "dataclasses.field" || f->canonical == "field"))
        right = argument(*f, "default");
      Value v;
      if (!node_is_null(right)) {
        TSSymbol rs = node_symbol(right);
        if (rs == k.true_ || rs == k.false_ || rs == k.integer || rs == k.string || rs == k.none) v = value_of(right);
      }
      cls.fields[text(left)] = v;  // a later declaration of the name wins; unknown when not a literal
    }
  }
  if (cls.has_init) return {};
  auto field_it = cls.fields.find(name);
  if (field_it == cls.fields.end() || !field_it->second.known()) return {};
  // the field is written nowhere in the file (`cfg.flag = True`; `setattr`
  // aside): every read sees the instance's value
  if (!written_attributes_) {
    written_attributes_.emplace();
    for (const Binding& b : bindings_)
      if (b.kind != Binding::Kind::Definition && !node_is_null(b.target) && node_symbol(b.target) == k.attribute)
        (*written_attributes_)[text(field(b.target, k.f_attribute))] = true;
  }
  if (written_attributes_->contains(name)) return {};
  return field_it->second;
}

// True when every value function `f` returns is a periodic test (or False/None):
// `return step % n == 0`, `test = state.step % freq == 0; test = test and ...;
// return test`, `return step < 3 or step % 10 == 0`. Such a predicate holds on
// few steps, so a branch on its call is a periodic guard.
bool SemanticModel::periodic_predicate(int f, int depth) const {
  const Kinds& k = kinds();
  if (f < 0 || static_cast<std::size_t>(f) >= functions_.size()) return false;
  int region = functions_[f].region;
  std::vector<std::string_view> assuming;  // names whose periodicity is being shown (induction)
  // a periodic test: a modulo, a final-step test, a bound on a step counter, or
  // combinations that keep it rare
  std::function<bool(TSNode, int)> rare = [&](TSNode e, int d) -> bool {
    if (node_is_null(e) || d > 12) return false;
    TSSymbol es = node_symbol(e);
    if (es == k.parenthesized_expression && !node_is_null(parenthesized_inner(e))) return rare(parenthesized_inner(e), d + 1);
    if (es == k.false_ || es == k.none) return true;  // never
    if (es == k.boolean_operator) {
      bool conj = text(field(e, k.f_operator)) == "and";
      bool a = rare(field(e, k.f_left), d + 1), b = rare(field(e, k.f_right), d + 1);
      return conj ? (a || b) : (a && b);
    }
    if (es == k.comparison_operator) {
      if (classify_rec(e, false, depth + 1) & (kGuardPeriodic | kGuardFinalStep)) return true;
      // `step < 3`: the first few steps of a counter
      NodeList operands;
      std::string_view op;
      return binary_comparison(e, operands, op) &&
             first_steps_test(*this, operands, op, std::numeric_limits<std::int64_t>::max());
    }
    if (es == k.identifier) {
      std::string_view name = text(e);
      if (std::find(assuming.begin(), assuming.end(), name) != assuming.end()) return true;
      bool any = false;
      assuming.push_back(name);
      for (const Binding* b : bindings_of(name, region)) {
        if (b->scope != region) continue;
        if (b->kind != Binding::Kind::Assign || !rare(b->value, d + 1)) {
          assuming.pop_back();
          return false;
        }
        any = true;
      }
      assuming.pop_back();
      return any;
    }
    return (classify_rec(e, false, depth + 1) & (kGuardPeriodic | kGuardFinalStep)) != 0;
  };
  // the function's own return statements (not those of functions nested in it)
  bool any = false;
  std::vector<TSNode> stack{field(functions_[f].node, k.f_body)};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (node_is_null(n)) continue;
    TSSymbol ns = node_symbol(n);
    if (ns == k.function_definition || ns == k.class_definition || ns == k.lambda) continue;
    if (ns == k.return_statement) {
      // a bare `return` gives None; a return inside the function's own periodic
      // branch (`if step % n == 0: return True`) gives its value on few steps,
      // whatever that value is
      bool few = ts_node_named_child_count(n) == 0 || rare(ts_node_named_child(n, 0), 0) ||
                 (enclosing_guards(n) & (kGuardPeriodic | kGuardFinalStep)) != 0;
      if (!few) return false;
      any = true;
      continue;
    }
    for (TSNode ch : children(n)) stack.push_back(ch);
  }
  return any;
}

// True when the test `name` (a flag, or a comparison such as `step >= stop_at`)
// ends the loop that holds it: that loop's body has a statement `if name: break`
// with the same test at its top level, so the test is true on the loop's last
// iteration only (`done = cur >= total ... if done: break`).
bool SemanticModel::ends_enclosing_loop(TSNode name) const {
  const Kinds& k = kinds();
  int r = region_of(name);
  while (r > 0 && regions_[r].kind != Region::Kind::Loop) {
    if (regions_[r].kind == Region::Kind::Function || regions_[r].kind == Region::Kind::Class) return false;
    r = regions_[r].parent;
  }
  if (r <= 0) return false;
  TSNode body = field(regions_[r].node, k.f_body);
  if (node_is_null(body)) return false;
  std::string_view flag = text(name);
  for (TSNode stmt : children(body)) {
    if (node_symbol(stmt) != k.if_statement) continue;
    TSNode cond = field(stmt, k.f_condition);
    TSNode then = field(stmt, k.f_consequence);
    if (node_is_null(cond) || node_is_null(then) || node_symbol(cond) != node_symbol(name) || text(cond) != flag)
      continue;
    if (ts_node_named_child_count(then) >= 1 && node_symbol(ts_node_named_child(then, 0)) == k.break_statement)
      return true;
  }
  return false;
}

GuardMask SemanticModel::enclosing_guards(TSNode node) const {
  GuardMask g = 0;
  for (int r = region_of(node); r > 0; r = regions_[r].parent) {
    const Region& reg = regions_[r];
    if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) break;
    if (reg.kind == Region::Kind::Branch) g |= reg.guard;
  }
  return g;
}

bool SemanticModel::unselected_option(TSNode node) const {
  const Kinds& k = kinds();
  TSNode child = node;
  for (TSNode p = ts_node_parent(node); !node_is_null(p); child = p, p = ts_node_parent(p)) {
    TSSymbol s = node_symbol(p);
    if (s == k.block || s == k.module || s == k.expression_statement || s == k.lambda) return false;
    if (s == k.pair && node_eq(field(p, k.f_value), child)) {
      // `{"bf16": autocast(torch.bfloat16), "fp16": autocast(torch.float16)}[args.precision]`
      TSNode dict = ts_node_parent(p);
      TSNode sub = node_is_null(dict) ? TSNode{} : ts_node_parent(dict);
      if (node_symbol(dict) != k.dictionary || node_is_null(sub) || node_symbol(sub) != k.subscript ||
          !node_eq(field(sub, k.f_value), dict))
        continue;
      Value key = value_of(ts_node_named_child(p, 0));
      Value chosen = value_of(field(sub, k.f_subscript));
      if (key.kind == Value::Kind::Str && chosen.kind == Value::Kind::Str && key.s != chosen.s) return true;
      if (key.kind == Value::Kind::Int && chosen.kind == Value::Kind::Int && key.i != chosen.i) return true;
    } else if (s == k.conditional_expression && ts_node_named_child_count(p) == 3) {
      // `autocast(torch.float16) if args.precision == "fp16" else nullcontext()`
      TSNode condition = ts_node_named_child(p, 1);
      if (node_eq(condition, child)) continue;
      bool taken_when_true = node_eq(ts_node_named_child(p, 0), child);
      if (classify_condition(condition, !taken_when_true) & kGuardOffByDefault) return true;
    }
  }
  return false;
}

namespace {
// +1: `expr` is true exactly when CUDA is available (`torch.cuda.is_available()`,
// parenthesized, or a name bound once to it); -1: its negation; 0: anything else.
int cuda_available_test(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 6) return 0;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression) return cuda_available_test(model, parenthesized_inner(expr), depth + 1);
  if (s == k.not_operator) return -cuda_available_test(model, field(expr, k.f_argument), depth + 1);
  if (s == k.identifier) {
    TSNode bound = model.single_assignment(expr);
    return node_is_null(bound) ? 0 : cuda_available_test(model, bound, depth + 1);
  }
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    if (c != nullptr && c->canonical == "torch.cuda.is_available") return 1;
  }
  return 0;
}

// +1: `expr` is true exactly on Linux (`"linux" in sys.platform`,
// `sys.platform.startswith("linux")`, `platform.system() == "Linux"`); -1:
// exactly on another system (`os.name == "nt"`, `sys.platform == "win32"`,
// `platform.system() != "Linux"`); 0: anything else.
int linux_test(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 6) return 0;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression) return linux_test(model, parenthesized_inner(expr), depth + 1);
  if (s == k.not_operator) return -linux_test(model, field(expr, k.f_argument), depth + 1);
  if (s == k.boolean_operator) {
    // `a or b` holds only on one kind of system when both sides do; `a and b`
    // when either side does
    int a = linux_test(model, field(expr, k.f_left), depth + 1);
    int b = linux_test(model, field(expr, k.f_right), depth + 1);
    if (model.text(field(expr, k.f_operator)) == "or") return a == b ? a : 0;
    return a == 0 ? b : b == 0 || a == b ? a : 0;
  }
  // the system a name or call says: "sys.platform", "os.name", "platform.system"
  auto system_of = [&](TSNode x) -> std::string {
    std::string name;
    if (node_symbol(x) == k.call) {
      const CallSite* c = model.call_at(x);
      return c != nullptr && c->canonical == "platform.system" && model.positional_count(*c) == 0 ? std::string(c->canonical) : std::string();
    }
    if (node_symbol(x) == k.attribute && model.canonical_name_into(x, name) && (name == "sys.platform" || name == "os.name"))
      return name;
    return {};
  };
  // +1 for a Linux value, -1 for another system's, 0 for one not known
  auto sense_of = [&](std::string_view value) {
    std::string v = lower(value);
    if (v.starts_with("linux")) return 1;
    if (v == "win32" || v == "cygwin" || v == "windows" || v == "darwin" || v == "nt" || v == "win") return -1;
    return 0;
  };
  if (s == k.call) {  // `sys.platform.startswith("linux")`
    const CallSite* c = model.call_at(expr);
    if (c == nullptr || c->method != "startswith" || node_is_null(c->receiver) || system_of(c->receiver) != "sys.platform")
      return 0;
    if (model.positional_count(*c) != 1) return 0;
    Value v = model.value_of(model.argument(*c, "prefix", 0));
    return v.kind == Value::Kind::Str ? sense_of(v.s) : 0;
  }
  if (s != k.comparison_operator) return 0;
  NodeList operands;
  std::string_view op;
  if (!model.binary_comparison(expr, operands, op) || operands.size() != 2) return 0;
  if (op == "in" || op == "not in") {  // `"linux" in sys.platform`
    if (system_of(operands[1]) != "sys.platform") return 0;
    Value v = model.value_of(operands[0]);
    int sense = v.kind == Value::Kind::Str ? sense_of(v.s) : 0;
    return op == "in" ? sense : -sense;
  }
  if (op != "==" && op != "!=") return 0;
  for (int side = 0; side < 2; ++side) {
    if (system_of(operands[side]).empty()) continue;
    Value v = model.value_of(operands[1 - side]);
    int sense = v.kind == Value::Kind::Str ? sense_of(v.s) : 0;
    return op == "==" ? sense : -sense;
  }
  return 0;
}

// The sense of a branch test for on_path_without_cuda: +1 when it holds only
// where a multi-GPU CUDA run can happen (CUDA available, Linux), -1 when it
// holds only where none can.
int multi_gpu_test(const SemanticModel& model, TSNode expr) {
  int cuda = cuda_available_test(model, expr);
  return cuda != 0 ? cuda : linux_test(model, expr);
}
}  // namespace

bool SemanticModel::on_path_without_cuda(TSNode node) const {
  const Kinds& k = kinds();
  for (int r = region_of(node); r > 0; r = regions_[r].parent) {
    const Region& region = regions_[r];
    if (region.kind == Region::Kind::Function) return false;
    if (region.kind != Region::Kind::Branch) continue;
    TSSymbol s = node_symbol(region.node);
    if (s == k.if_statement) {
      if (multi_gpu_test(*this, region.condition) < 0) return true;
      continue;
    }
    // an elif or else: every test before it in its `if` statement was false
    // (answered for the statement's clauses in one pass: a long elif chain is linear)
    TSNode statement = ts_node_parent(region.node);
    if (node_is_null(statement) || node_symbol(statement) != k.if_statement) continue;
    auto known = clause_after_cuda_test_.find(node_start_byte(region.node));
    if (known == clause_after_cuda_test_.end()) {
      bool earlier = multi_gpu_test(*this, field(statement, k.f_condition)) > 0;
      for (TSNode clause : children(statement)) {
        TSSymbol cs = node_symbol(clause);
        if (cs != k.elif_clause && cs != k.else_clause) continue;
        clause_after_cuda_test_[node_start_byte(clause)] = earlier;
        if (cs == k.elif_clause && !earlier) earlier = multi_gpu_test(*this, field(clause, k.f_condition)) > 0;
      }
      known = clause_after_cuda_test_.find(node_start_byte(region.node));
      if (known == clause_after_cuda_test_.end()) continue;
    }
    if (known->second) return true;
    if (s == k.elif_clause && multi_gpu_test(*this, region.condition) < 0) return true;
  }
  return false;
}

}  // namespace ddplint

namespace ddplint {

namespace {
// `for i in range(...)`, `for i, batch in enumerate(...)`: `target` is the
// loop's integer index, which takes each value once.
bool range_or_enumerate_index(const SemanticModel& model, TSNode target) {
  const Kinds& k = kinds();
  TSNode loop = target;
  for (int up = 0; up < 4 && !node_is_null(loop) && node_symbol(loop) != k.for_statement; ++up) loop = ts_node_parent(loop);
  if (node_is_null(loop) || node_symbol(loop) != k.for_statement) return false;
  const CallSite* it = model.call_at(field(loop, k.f_right));
  if (it == nullptr || node_symbol(it->callee) != k.identifier) return false;
  std::string_view fn = model.text(it->callee);
  TSNode left = field(loop, k.f_left);
  if (fn == "range") return node_eq(left, target);
  if (fn != "enumerate" || node_eq(left, target) || ts_node_named_child_count(left) == 0) return false;
  return node_eq(ts_node_named_child(left, 0), target);
}
}  // namespace

bool SemanticModel::iteration_counter(TSNode e) const {
  const Kinds& k = kinds();
  for (int guard = 0; guard < 8 && !node_is_null(e); ++guard) {
    TSSymbol s = node_symbol(e);
    if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(e))) {
      e = parenthesized_inner(e);
      continue;
    }
    if (s == k.binary_operator) {  // `j + 1`, `step - 1`
      std::string_view op = text(field(e, k.f_operator));
      if (op != "+" && op != "-") return false;
      TSNode l = field(e, k.f_left), r = field(e, k.f_right);
      if (value_of(r).kind == Value::Kind::Int) e = l;
      else if (op == "+" && value_of(l).kind == Value::Kind::Int) e = r;
      else return false;
      continue;
    }
    if (s == k.identifier) {
      for (const Binding* b : bindings_of(text(e), region_of(e)))
        if (b->kind == Binding::Kind::LoopTarget && range_or_enumerate_index(*this, b->target)) return true;
    }
    if (s != k.identifier && s != k.attribute) return false;
    std::string name = lower(last_name(e));
    return contains(name, "step") || contains(name, "iter");
  }
  return false;
}

bool SemanticModel::loop_invariant_int(TSNode e, int loop, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(e) || depth > 6) return false;
  TSSymbol s = node_symbol(e);
  Value v = value_of(e);
  if (v.kind == Value::Kind::Int) return true;
  if (v.kind != Value::Kind::Unknown) return false;  // a string, float, bool or None
  if (s == k.parenthesized_expression) return loop_invariant_int(parenthesized_inner(e), loop, depth + 1);
  if (s == k.binary_operator)
    return loop_invariant_int(field(e, k.f_left), loop, depth + 1) && loop_invariant_int(field(e, k.f_right), loop, depth + 1);
  if (s == k.call) {  // `len(loader)`
    const CallSite* c = call_at(e);
    if (c == nullptr || node_symbol(c->callee) != k.identifier || text(c->callee) != "len" || arguments(*c).size() != 1)
      return false;
    return loop_invariant_int(arguments(*c)[0].value, loop, depth + 1) || node_symbol(arguments(*c)[0].value) == k.identifier;
  }
  if (s != k.identifier && s != k.attribute) return false;
  if (iteration_counter(e)) {
    // another counter (`step == max_steps` reads as the final step elsewhere):
    // only a name the loop does not bind
    std::string name = lower(last_name(e));
    if (!contains(name, "max") && !contains(name, "init") && !contains(name, "start") && !contains(name, "total") &&
        !contains(name, "num") && !contains(name, "last"))
      return false;
  }
  if (loop < 0) return true;
  const Region& lr = regions_[static_cast<std::size_t>(loop)];
  std::string storage;
  std::string_view path = path_view(e, storage);
  for (const Binding* b : bindings_of(path, region_of(e)))
    if (node_start_byte(lr.node) <= node_start_byte(b->target) && node_end_byte(b->target) <= node_end_byte(lr.node))
      return false;  // the loop changes it
  return true;
}

bool SemanticModel::binary_comparison(TSNode expr, NodeList& operands, std::string_view& op) const {
  const Kinds& k = kinds();
  while (!node_is_null(expr) && node_symbol(expr) == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    expr = parenthesized_inner(expr);
  if (node_is_null(expr) || node_symbol(expr) != k.comparison_operator) return false;
  int ops = 0;
  for (TSNode ch : children(expr, false)) {
    if (ts_node_is_named(ch)) operands.push_back(ch);
    else if (ops++ == 0) op = text(ch);
  }
  return operands.size() == 2 && ops == 1;
}

bool SemanticModel::one_iteration_test(TSNode a, TSNode b) const {
  const Kinds& k = kinds();
  int loop = innermost_loop(region_of(a));
  // the bound of the `while` loop around it: `while step < n_steps:` runs
  // until the counter reaches n_steps, so `step == n_steps` holds at most once
  NodeList bound_sides;
  std::string_view bound_op;
  bool bounded = loop >= 0 && node_symbol(regions_[static_cast<std::size_t>(loop)].node) == k.while_statement &&
                 binary_comparison(field(regions_[static_cast<std::size_t>(loop)].node, k.f_condition), bound_sides, bound_op);
  for (int side = 0; side < 2; ++side) {
    TSNode counter = side == 0 ? a : b, other = side == 0 ? b : a;
    if (!iteration_counter(counter) || text(counter) == text(other)) continue;
    if (loop_invariant_int(other, loop, 0)) return true;
    if (bounded && (bound_op == "<" || bound_op == "<=" || bound_op == "!=") &&
        text(bound_sides[0]) == text(counter) && text(bound_sides[1]) == text(other))
      return true;
  }
  return false;
}

}  // namespace ddplint

namespace ddplint {

bool SemanticModel::rarely_set_flag(TSNode name, int depth) const {
  const Kinds& k = kinds();
  if (depth > 4) return false;
  const int region = region_of(name);
  const int scope = regions_[region].scope;
  BindingList bound = bindings_of(text(name), region);
  if (bound.size() < 2) return false;
  bool starts_false = false;
  for (const Binding* b : bound) {
    if (b->scope != scope) return false;
    if (b->kind == Binding::Kind::Assign && !node_is_null(b->value)) {
      Value v = value_of(b->value);
      if (v.known() && !v.truthy()) {
        starts_false = true;
        continue;
      }
    }
    if (b->kind != Binding::Kind::Assign) return false;
    // every other binding sits under a rare guard of its function
    GuardMask g = 0;
    for (int r = region_of(b->target); r > 0; r = regions_[r].parent) {
      const Region& reg = regions_[r];
      if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) break;
      if (reg.kind == Region::Kind::Branch && !node_is_null(reg.condition))
        g |= static_cast<GuardMask>(classify_rec(reg.condition, reg.negated, depth + 1) & ~kNeutral);
    }
    if (!(g & (kGuardPeriodic | kGuardFinalStep | kGuardOffByDefault))) return false;
  }
  (void)k;
  return starts_false;
}

}  // namespace ddplint
