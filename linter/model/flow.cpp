// Value flow: what a value goes on to feed (logging only, computation, or
// nothing). Used by rules that must tell a collective for the logs from one the
// step needs (DDP302).
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace ddplint {

using namespace model_detail;

namespace {

constexpr int kMaxFlowDepth = 4;
constexpr int kMaxUses = 64;
// Syntax nodes one answer may visit in all: a bound on the cost of a file of
// thousands of collectives in one scope (past it the answer is Computation).
constexpr int kMaxVisits = 20000;

// Calls that only report a value: print, logging, progress bars, meters,
// summary writers, an append to a list.
bool logging_sink(std::string_view method) {
  static constexpr std::string_view sinks[] = {
      "print", "info", "debug", "warning", "warn", "log", "log_dict", "log_metrics", "add_scalar", "add_scalars",
      "set_postfix", "set_postfix_str", "set_description", "update", "append", "write", "pprint", "report"};
  for (std::string_view s : sinks)
    if (method == s) return true;
  return false;
}

// Transformations that keep a value's meaning (reading it, copying it, doing
// arithmetic on it): the use is the use of the expression around them.
bool value_preserving_method(std::string_view m) {
  static constexpr std::string_view ms[] = {"item", "mean", "sum", "cpu", "tolist", "detach", "clone", "float",
                                            "double", "numpy", "div", "div_", "mul", "mul_", "format", "__format__"};
  for (std::string_view s : ms)
    if (m == s) return true;
  return false;
}

// Builtins that pass a value's entries on unchanged: `zip(names, values)`,
// `list(values)`, `enumerate(values)` (what they build is used as its uses say).
bool container_builtin(std::string_view name) {
  static constexpr std::string_view ms[] = {"zip", "enumerate", "list", "tuple", "sorted", "reversed", "dict"};
  for (std::string_view s : ms)
    if (name == s) return true;
  return false;
}

// `torch.distributed.all_reduce(t)`, `reduce`, `broadcast`: reduce or
// overwrite their first argument in place.
bool in_place_collective(std::string_view canonical) {
  return canonical == "torch.distributed.all_reduce" || canonical == "torch.distributed.reduce" ||
         canonical == "torch.distributed.broadcast";
}

struct FlowState {
  int budget = kMaxUses;
  int visits = kMaxVisits;
  ValueUse result;
  // result_use's per-step question: a computation that does not run on every
  // step (after the step loop, on the steps of a periodic branch) does not
  // need the value read on every step; it waits, as a log does
  const SemanticModel* per_step = nullptr;
  void computation(TSNode at) {
    if (per_step != nullptr && !node_is_null(at) &&
        !per_step->runs_every_step(at, kGuardPeriodic | kGuardFinalStep | kGuardOffByDefault))
      return logging(at);
    result.kind = ValueUse::Kind::Computation;
    result.sink = at;
  }
  void logging(TSNode at, const ProjectCaller* caller = nullptr) {
    if (result.kind == ValueUse::Kind::Nothing) {
      result.kind = ValueUse::Kind::Logging;
      result.sink = at;
      result.caller = caller;
    }
  }
};

}  // namespace

// One read of the value, at `node`: climbs to what consumes it.
static void classify_read(const SemanticModel& m, TSNode node, int region, int depth, FlowState& st,
                          int element = -1);

// Reads SemanticModel's identifier index (a friend: the index is private).
struct FlowAccess {
  static std::span<const SemanticModel::NameOccurrence> occurrences(const SemanticModel& m, std::string_view name) {
    if (!m.name_occurrences_built_) m.build_name_occurrences();
    const auto& all = m.name_occurrences_;
    SemanticModel::NameOccurrence key{name_hash(name), 0, 0};
    auto from = std::lower_bound(all.begin(), all.end(), key);
    auto to = from;
    while (to != all.end() && to->hash == key.hash) ++to;
    return std::span<const SemanticModel::NameOccurrence>(from, to);
  }
};

void SemanticModel::build_name_occurrences() const {
  const Kinds& k = kinds();
  name_occurrences_built_ = true;
  std::vector<TSNode> stack{regions_[0].node};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (node_symbol(n) == k.identifier) {
      name_occurrences_.push_back({name_hash(text(n)), node_start_byte(n), node_end_byte(n)});
      continue;
    }
    if (node_symbol(n) == k.comment || node_symbol(n) == k.string) continue;
    for (TSNode c : children(n)) stack.push_back(c);
  }
  std::sort(name_occurrences_.begin(), name_occurrences_.end());
}

std::vector<TSNode> SemanticModel::occurrences_of(std::string_view name) const {
  std::vector<TSNode> out;
  TSNode root = regions_[0].node;
  for (const NameOccurrence& o : FlowAccess::occurrences(*this, name)) {
    if (source_.text().substr(o.start, o.end - o.start) != name) continue;  // another name of the same hash
    TSNode n = ts_node_descendant_for_byte_range(root, o.start, o.end);
    if (!node_is_null(n) && node_symbol(n) == kinds().identifier) out.push_back(n);
  }
  return out;
}

static void follow_name(const SemanticModel& m, std::string_view name, int region, std::uint32_t after, int depth,
                        FlowState& st) {
  const Kinds& k = kinds();
  if (depth > kMaxFlowDepth) return st.computation({});
  int scope = m.regions()[region].scope;
  TSNode scope_node = m.regions()[scope].node;
  // the reads of `name` in the scope after `after`, until it is certainly
  // bound again: by a binding that runs whenever `after` did (in no branch,
  // loop or handler that does not also hold `after`: the `else` that rebinds
  // it on the other path kills nothing), after its right-hand side, which
  // may read the old value (`x = x.flatten(0, 1)`)
  auto certain = [&](const Binding* b) {
    for (int r = m.region_of(b->target); r != scope && r > 0; r = m.regions()[r].parent) {
      if (m.regions()[r].kind == Region::Kind::With) continue;
      bool holds_after = false;
      for (int a = region; a >= 0; a = m.regions()[a].parent)
        if (a == r) holds_after = true;
      if (!holds_after) return false;
    }
    return true;
  };
  std::uint32_t until = node_end_byte(scope_node);
  for (const Binding* b : m.bindings_of(name, region)) {
    if (b->scope != scope || node_is_null(b->target)) continue;
    std::uint32_t at = node_start_byte(b->target);
    if (!node_is_null(b->value) && node_end_byte(b->value) > at) at = node_end_byte(b->value);
    if (node_start_byte(b->target) > after && at < until && b->kind != Binding::Kind::Augmented && certain(b))
      until = at;
  }
  TSNode root = m.regions()[0].node;
  for (const auto& o : FlowAccess::occurrences(m, name)) {
    if (st.result.kind == ValueUse::Kind::Computation) return;
    if (o.start <= after || o.start >= until) continue;
    if (--st.visits <= 0) return st.computation({});
    TSNode n = ts_node_descendant_for_byte_range(root, o.start, o.end);
    if (node_symbol(n) != k.identifier || m.text(n) != name) continue;
    if (m.regions()[m.region_of(n)].scope != scope) continue;  // another function's name
    // not a read: an attribute name (`x.name`) or a keyword (`f(name=...)`)
    TSNode p = ts_node_parent(n);
    if (!node_is_null(p) && node_symbol(p) == k.attribute && !node_eq(field(p, k.f_object), n)) continue;
    if (!node_is_null(p) && node_symbol(p) == k.keyword_argument && node_eq(field(p, k.f_name), n)) continue;
    if (--st.budget <= 0) return st.computation(n);
    classify_read(m, n, region, depth, st);
  }
}

// `element`: the position of the value in a returned tuple (`return loss.item(),
// n_correct`), which a caller's `a, b = f(...)` lands in one name; -1 for the
// whole result.
static void follow_returns(const SemanticModel& m, int region, int depth, FlowState& st, int element = -1) {
  if (depth > kMaxFlowDepth) return st.computation({});  // (a recursive helper returns into itself)
  int scope = m.regions()[region].scope;
  const Region& fn_region = m.regions()[scope];
  if (scope == 0 || fn_region.function < 0) return st.computation({});
  std::span<const int> callers = m.callers_of(fn_region.function);
  // the calls of other files of the project (their results' uses, summarised)
  const auto& elsewhere = m.project().result_uses;
  const bool top = m.is_top_level_function(fn_region.function);
  auto it = top ? elsewhere.find(m.functions()[fn_region.function].name) : elsewhere.end();
  // a caller elsewhere that calls it every step only for its logs: its
  // per-step cost serves those logs, whatever other callers do with it
  auto logged = top ? m.project().logged_calls.find(m.functions()[fn_region.function].name) : m.project().logged_calls.end();
  if (logged != m.project().logged_calls.end()) {
    st.logging({}, &logged->second);
  } else if (it != elsewhere.end()) {
    if (!it->second.logging_only) return st.computation({});
    st.logging({}, &it->second.caller);
  } else if (callers.empty()) {
    return st.computation({});  // called from elsewhere: unknown
  }
  for (int c : callers) {
    if (st.result.kind == ValueUse::Kind::Computation) return;
    const CallSite& call = m.calls()[static_cast<std::size_t>(c)];
    classify_read(m, call.node, call.region, depth + 1, st, element);
  }
}

static void classify_read(const SemanticModel& m, TSNode node, int region, int depth, FlowState& st, int element) {
  const Kinds& k = kinds();
  TSNode child = node;
  for (TSNode p = ts_node_parent(node); !node_is_null(p); child = p, p = ts_node_parent(p)) {
    TSSymbol s = node_symbol(p);
    if (s == k.attribute) {
      // a method of the value (`value.item()`, `value.mean()`, `outs.index(x)`)
      // is a read of it whose result climbs on; backward/step/an attribute read
      // such as `value.shape` are computations
      TSNode call = ts_node_parent(p);
      std::string_view attr = m.text(field(p, k.f_attribute));
      // where the value lives and of what type, not what it holds
      // (`labels.to(gathered.device)`): no use of its content
      if (attr == "device" || attr == "dtype" || attr == "is_cuda") return;
      if (!node_is_null(call) && node_symbol(call) == k.call && node_eq(field(call, k.f_function), p) &&
          attr != "backward" && attr != "step" && attr != "zero_grad") {
        p = call;  // continue from the call
        child = p;
        continue;
      }
      return st.computation(p);
    }
    // one element of a returned tuple: the callers' unpacking decides
    if ((s == k.expression_list || s == k.tuple) && element < 0 && !node_is_null(ts_node_parent(p)) &&
        node_symbol(ts_node_parent(p)) == k.return_statement) {
      int index = 0, at = -1;
      for (TSNode e : children(p)) {
        if (node_eq(e, child)) at = index;
        ++index;
      }
      if (at >= 0) return follow_returns(m, region, depth, st, at);
    }
    if (s == k.parenthesized_expression || s == k.binary_operator || s == k.unary_operator || s == k.subscript ||
        s == k.interpolation || s == k.string || s == k.concatenated_string || s == k.tuple || s == k.list ||
        s == k.pair || s == k.dictionary || s == k.expression_list || s == k.conditional_expression ||
        s == k.list_comprehension || s == k.generator_expression || s == k.dictionary_comprehension ||
        s == k.set_comprehension || s == k.comparison_operator || s == k.boolean_operator || s == k.not_operator)
      continue;  // (a comparison's use decides too: an `if` on it is a computation)
    if (s == k.for_in_clause) {
      // the iterable of a comprehension (`{k: v for k, v in zip(names, values)}`):
      // its entries go into what the comprehension builds, unless an `if`
      // clause tests them (a computation on the value)
      TSNode comprehension = ts_node_parent(p);
      if (!node_eq(field(p, k.f_right), child) || node_is_null(comprehension)) return st.computation(p);
      for (TSNode c : children(comprehension))
        if (node_symbol(c) == k.if_clause) return st.computation(c);
      continue;
    }
    if (s == k.keyword_argument || s == k.argument_list) continue;  // the call decides
    if (s == k.call) {
      const CallSite* c = m.call_at(p);
      std::string_view method = c ? c->method : std::string_view{};
      if (c && logging_sink(method)) return st.logging(p);
      // an in-place collective on the value (`dist.all_reduce(avg_loss)`): it
      // changes the value on every rank, and the reads after it decide
      if (c && node_symbol(ts_node_parent(p)) == k.expression_statement && in_place_collective(c->canonical)) {
        std::span<const Argument> args = m.arguments(*c);
        if (!args.empty() && node_eq(args[0].value, node)) return;
      }
      const bool torch_function = c && c->canonical.rfind("torch.", 0) == 0 &&
                                  c->canonical.rfind("torch.distributed.", 0) != 0 &&
                                  c->canonical.rfind("torch.nn.", 0) != 0;
      // a torch function called for its effect, its result dropped
      // (`torch._assert_async(ok)`, `torch.save(v, path)`): a use of the content
      if (torch_function && node_symbol(ts_node_parent(p)) == k.expression_statement) return st.computation(p);
      if (c && (method == "float" || method == "int" || method == "round" || method == "str" ||
                method == "format" || value_preserving_method(method) ||
                (node_is_null(c->receiver) && c->canonical.empty() && container_builtin(method)) || torch_function))
        continue;  // a converted copy or a tensor function of the value (torch.cat): its use decides
      return st.computation(p);
    }
    if (s == k.assignment || s == k.augmented_assignment) {
      TSNode left = field(p, k.f_left);
      if (node_eq(left, child)) return;  // the name written, not read
      TSNode base = left;
      while (!node_is_null(base) && node_symbol(base) == k.subscript) base = field(base, k.f_value);
      if (!node_is_null(base) && (node_symbol(base) == k.pattern_list || node_symbol(base) == k.tuple_pattern) &&
          node_symbol(p) == k.assignment) {
        // `a, b = f()` where `f` returns the value at position `element`: that name
        if (element >= 0 && node_eq(child, field(p, k.f_right))) {
          int index = 0;
          TSNode only{};
          for (TSNode t : children(base)) {
            if (index++ == element) only = t;
          }
          if (!node_is_null(only) && node_symbol(only) == k.identifier) {
            follow_name(m, m.text(only), region, node_end_byte(p), depth + 1, st);
            return;
          }
        }
        // `a, b = v`: the value's parts land in each name
        for (TSNode t : children(base)) {
          if (node_symbol(t) != k.identifier) return st.computation(t);
          follow_name(m, m.text(t), region, node_end_byte(p), depth + 1, st);
          if (st.result.kind == ValueUse::Kind::Computation) return;
        }
        return;
      }
      if (node_is_null(base) || node_symbol(base) != k.identifier) return st.computation(p);
      // `logs["loss"] = v`, `total += v`, `v2 = v.item()`: follow the name it lands in
      follow_name(m, m.text(base), region, node_end_byte(p), depth + 1, st);
      return;
    }
    if (s == k.for_statement && node_eq(field(p, k.f_right), child)) {
      // a loop over the value (`for t in tensors:`, `for k, v in d.items():`):
      // its entries are used as the loop's targets are
      std::vector<TSNode> targets{field(p, k.f_left)};
      while (!targets.empty()) {
        TSNode t = targets.back();
        targets.pop_back();
        if (node_is_null(t)) continue;
        if (node_symbol(t) == k.identifier) {
          follow_name(m, m.text(t), m.region_of(field(p, k.f_body)), node_end_byte(t), depth + 1, st);
          if (st.result.kind == ValueUse::Kind::Computation) return;
        } else if (node_symbol(t) == k.pattern_list || node_symbol(t) == k.tuple_pattern ||
                   node_symbol(t) == k.tuple || node_symbol(t) == k.list) {
          for (TSNode e : children(t)) targets.push_back(e);
        } else {
          return st.computation(t);  // `for x.attr in ...`, a starred target: not followed
        }
      }
      return;
    }
    if (s == k.return_statement) return follow_returns(m, region, depth, st);
    if (s == k.expression_statement) return;  // a bare expression: read for nothing
    // a condition, an assert, a loop's iterable, a with item, anything else
    return st.computation(p);
  }
}

ValueUse SemanticModel::result_use(TSNode node, bool per_step) const {
  FlowState st;
  if (per_step) st.per_step = this;
  classify_read(*this, node, region_of(node), 0, st);
  return st.result;
}

ValueUse SemanticModel::value_use(std::string_view name, int region, std::uint32_t after) const {
  FlowState st;
  follow_name(*this, name, region, after, 0, st);
  return st.result;
}

namespace {
// `ckpt`, `ckpt["model"]`, `ckpt.get("model")`, `(ckpt)`: the expression whose
// value `e` reads a part of.
TSNode state_base(const SemanticModel& m, TSNode e) {
  const Kinds& k = kinds();
  for (int i = 0; i < 8 && !node_is_null(e); ++i) {
    TSSymbol s = node_symbol(e);
    if (s == k.subscript) {
      e = field(e, k.f_value);
    } else if (s == k.parenthesized_expression) {
      TSNode inner = parenthesized_inner(e);
      if (node_is_null(inner)) return e;
      e = inner;
    } else if (s == k.call) {
      const CallSite* c = m.call_at(e);
      if (c == nullptr || node_is_null(c->receiver) || (c->method != "get" && c->method != "pop")) return e;
      e = c->receiver;
    } else {
      return e;
    }
  }
  return e;
}

// A holder whose state_dict() is Python numbers, not tensors: an LR scheduler
// (torch.optim.lr_scheduler, transformers' get_*_schedule*), a GradScaler
// (its state_dict() holds the scale as a float), a sampler.
bool host_state_holder(const SemanticModel& m, TSNode receiver) {
  TSNode bound = m.single_assignment(receiver);
  if (!node_is_null(bound) && node_symbol(bound) == kinds().call) {
    if (const CallSite* made = m.call_at(bound)) {
      std::string_view c = made->canonical;
      if (contains(c, "lr_scheduler") || contains(c, "GradScaler") || contains(c, "Sampler")) return true;
      std::string method = lower(made->method);
      if (contains(method, "schedule") || contains(method, "scaler") || contains(method, "sampler")) return true;
    }
  }
  std::string name = lower(m.last_name(receiver));
  return contains(name, "sched") || contains(name, "scaler") || contains(name, "sampler");
}
}  // namespace

LoadedState SemanticModel::loaded_state(const CallSite& load) const {
  const Kinds& k = kinds();
  const int scope = regions_[static_cast<std::size_t>(load.region)].scope;
  // the names that hold the loaded value or a part of it, in the load's function
  std::vector<std::string_view> holders;
  TSNode target = assigned_to(load.node);
  if (!node_is_null(target) && node_symbol(target) == k.identifier) holders.push_back(text(target));
  for (int hop = 0; hop < 2 && !holders.empty(); ++hop) {
    for (const Binding& b : bindings_) {
      if (b.kind != Binding::Kind::Assign || b.scope != scope || node_is_null(b.value) ||
          node_symbol(b.target) != k.identifier || node_start_byte(b.value) < node_end_byte(load.node))
        continue;
      TSNode base = state_base(*this, b.value);
      if (node_is_null(base) || node_symbol(base) != k.identifier) continue;
      std::string_view from = text(base), to = text(b.target);
      if (std::find(holders.begin(), holders.end(), from) != holders.end() &&
          std::find(holders.begin(), holders.end(), to) == holders.end())
        holders.push_back(to);
    }
  }
  bool device = false, host = false;
  for (const CallSite* c : calls_named("load_state_dict")) {
    if (node_is_null(c->receiver)) continue;
    TSNode arg = argument(*c, "state_dict", 0);
    if (node_is_null(arg)) continue;
    TSNode base = state_base(*this, arg);
    if (node_is_null(base)) continue;
    bool restores = node_eq(base, load.node);
    if (!restores && node_symbol(base) == k.identifier && node_start_byte(c->node) > node_end_byte(load.node) &&
        regions_[static_cast<std::size_t>(c->region)].scope == scope) {
      std::string_view name = text(base);
      restores = std::find(holders.begin(), holders.end(), name) != holders.end();
    }
    if (!restores) continue;
    (host_state_holder(*this, c->receiver) ? host : device) = true;
  }
  if (device) return LoadedState::DeviceState;
  return host ? LoadedState::HostState : LoadedState::Unknown;
}

}  // namespace ddplint
