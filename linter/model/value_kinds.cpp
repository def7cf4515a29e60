// Kinds of value an expression may hold: a rank, the world size, a division by
// the world size, an indexed device (memoised per node and query).
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>

namespace ddplint {

using namespace model_detail;

namespace {

bool is_world_size_name(std::string_view raw) {
  std::string name = lower(raw);
  static constexpr std::array<std::string_view, 17> names = {
      "world_size", "ngpus_per_node", "num_gpus", "n_gpu", "n_gpus", "ngpus", "ngpu",
      "ddp_world_size", "nproc_per_node", "gpu_count", "num_replicas", "nprocs",
      "num_processes", "num_devices", "n_devices", "ndevices", "num_gpus_per_node"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_rank_name(std::string_view raw) {
  std::string name = lower(raw);
  if (name == "rank") return true;
  auto ends = [&](std::string_view suf) {
    return name.size() >= suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
  };
  return ends("_rank") || name.rfind("rank_", 0) == 0 || name == "localrank" || name == "gpu_id" ||
         name == "device_id" || name == "local_gpu" || name == "process_index" || name == "local_process_index";
}

}  // namespace

bool SemanticModel::is_rank_value(TSNode expr) const { return rank_rec(expr, 0); }

bool SemanticModel::spawned_process_index(TSNode expr) const {
  const Kinds& k = kinds();
  if (node_is_null(expr) || node_symbol(expr) != k.identifier) return false;
  // (a file that spawns nothing answers at once: most files)
  if (calls_to("torch.multiprocessing.spawn").empty() && calls_to("torch.multiprocessing.start_processes").empty())
    return false;
  BindingList bindings = bindings_of(text(expr), region_of(expr));
  if (bindings.size() != 1 || bindings[0]->kind != Binding::Kind::Parameter || bindings[0]->scope == 0) return false;
  const Region& scope = regions_[bindings[0]->scope];
  if (scope.kind != Region::Kind::Function || scope.function < 0) return false;
  const FunctionInfo& fn = functions_[scope.function];
  TSNode params = field(fn.node, k.f_parameters);
  if (node_is_null(params) || ts_node_named_child_count(params) == 0) return false;
  TSNode first = ts_node_named_child(params, 0);
  std::uint32_t at = node_start_byte(bindings[0]->target);
  if (at < node_start_byte(first) || at >= node_end_byte(first)) return false;
  for (std::string_view spawn : {"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"}) {
    for (const CallSite* c : calls_to(spawn)) {
      TSNode target = argument(*c, "fn", 0);
      if (!node_is_null(target) && node_symbol(target) == k.identifier && text(target) == fn.name) return true;
    }
  }
  return false;
}

bool SemanticModel::rank_rec(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return rank_rec(parenthesized_inner(expr), depth + 1);
  std::string env = env_var_read(expr);
  if (!env.empty()) return env == "RANK" || env == "LOCAL_RANK" || env == "SLURM_PROCID" || env == "SLURM_LOCALID";
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return false;
    if (c->method == "get_rank" || c->method == "get_local_rank" || c->method == "get_node_local_rank") return true;
    if (c->method == "int" && positional_count(*c) == 1) return rank_rec(argument(*c, "", 0), depth + 1);
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    if (is_rank_name(last_name(expr))) return true;
    if (s == k.identifier && spawned_process_index(expr)) return true;
    TSNode v = single_assignment(expr);
    return !node_is_null(v) && rank_rec(v, depth + 1);
  }
  return false;
}

template <typename F>
bool SemanticModel::memoized(std::uint8_t query, TSNode node, F&& compute) const {
  MemoKey key{node_start_byte(node), node_end_byte(node), node_symbol(node), query};
  auto [it, inserted] = memo_.try_emplace(key, 2);
  if (!inserted) return it->second == 1;  // known, or a cycle in progress (false)
  bool result = compute();
  memo_[key] = result ? 1 : 0;
  return result;
}

bool SemanticModel::is_world_size_value(TSNode expr) const { return world_rec(expr, 0); }

bool SemanticModel::world_rec(TSNode expr, int depth) const {
  if (node_is_null(expr)) return false;
  return memoized(1, expr, [&] { return world_rec_uncached(expr, depth); });
}

bool SemanticModel::world_rec_uncached(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return world_rec(parenthesized_inner(expr), depth + 1);
  std::string env = env_var_read(expr);
  if (!env.empty()) return env == "WORLD_SIZE" || env == "SLURM_NTASKS" || env == "LOCAL_WORLD_SIZE";
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return false;
    if (c->method == "get_world_size" || c->canonical == "torch.cuda.device_count" ||
        c->method == "device_count" || c->method == "get_local_world_size")
      return true;
    if ((c->method == "int" || c->method == "len") && positional_count(*c) == 1)
      return world_rec(argument(*c, "", 0), depth + 1);
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    if (is_world_size_name(last_name(expr))) return true;
    std::string path = path_of(expr);
    for (const Binding* b : bindings_of(path, region_of(expr))) {
      if (b->kind == Binding::Kind::Assign && !node_eq(b->target, expr) && world_rec(b->value, depth + 1))
        return true;
    }
  }
  return false;
}

bool SemanticModel::divides_by_world_size(TSNode expr, TSNode* division) const {
  return divides_rec(expr, 0, division);
}

bool SemanticModel::divides_rec(TSNode expr, int depth, TSNode* division) const {
  if (node_is_null(expr)) return false;
  bool result = memoized(2, expr, [&] { return divides_rec_uncached(expr, depth, nullptr); });
  // The division node: one more uncached step at this level; it recurses through
  // the memoized answers, so it stays linear.
  if (result && division) divides_rec_uncached(expr, depth, division);
  return result;
}

bool SemanticModel::divides_rec_uncached(TSNode expr, int depth, TSNode* division) const {
  if (node_is_null(expr) || depth > kMaxDepth) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return divides_rec(parenthesized_inner(expr), depth + 1, division);
  if (s == k.binary_operator || s == k.augmented_assignment) {
    std::string_view op = text(field(expr, k.f_operator));
    // the divisor is the world size, or a product with it as a factor: `total // (world_size * accum)`
    auto world_factor = [&](TSNode d) {
      for (int guard = 0; guard < 8 && !node_is_null(d); ++guard) {
        if (world_rec(d, 0)) return true;
        TSSymbol ds = node_symbol(d);
        if (ds == k.parenthesized_expression && !node_is_null(parenthesized_inner(d))) {
          d = parenthesized_inner(d);
        } else if (ds == k.binary_operator && text(field(d, k.f_operator)) == "*") {
          if (world_rec(field(d, k.f_right), 0)) return true;
          d = field(d, k.f_left);
        } else if (ds == k.identifier || ds == k.attribute) {
          d = single_assignment(d);  // `tokens_per_micro = micro * ctx * world_size`
        } else {
          return false;
        }
      }
      return false;
    };
    if ((op == "/" || op == "//" || op == "/=" || op == "//=") && world_factor(field(expr, k.f_right))) {
      if (division) *division = expr;
      return true;
    }
    if (s == k.augmented_assignment) return false;
    return divides_rec(field(expr, k.f_left), depth + 1, division);
  }
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return false;
    static constexpr std::array<std::string_view, 6> wrappers = {"int", "max", "min", "round", "ceil", "floor"};
    if (std::find(wrappers.begin(), wrappers.end(), c->method) == wrappers.end()) return false;
    for (int i = 0, n = positional_count(*c); i < n; ++i)
      if (divides_rec(argument(*c, "", i), depth + 1, division)) return true;
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    std::string path = path_of(expr);
    for (const Binding* b : bindings_of(path, region_of(expr))) {
      if (node_eq(b->target, expr)) continue;
      if ((b->kind == Binding::Kind::Assign || b->kind == Binding::Kind::Augmented) &&
          divides_rec(b->value, depth + 1, division))
        return true;
    }
  }
  return false;
}

bool SemanticModel::may_be_indexed_device(TSNode expr) const { return indexed_device_rec(expr, 0); }

bool SemanticModel::selects_process_gpu(const CallSite& c) const {
  std::string_view name = c.canonical;
  if (name.empty()) return false;
  if (name == "torch.cuda.set_device" || name == "torch.cuda.device") {
    TSNode device = argument(c, "device", 0);
    if (node_is_null(device)) return has_unpacked_arguments(c);
    return value_of(device).kind != Value::Kind::Int;  // set_device(0) pins every rank to GPU 0
  }
  if (name == "torch.distributed.init_process_group") return !node_is_null(argument(c, "device_id"));
  if (name == "deepspeed.initialize") return true;
  return project().device_selecting_calls.contains(name);
}

bool SemanticModel::indexed_device_rec(TSNode expr, int depth) const {
  if (node_is_null(expr)) return true;
  return memoized(3, expr, [&] { return indexed_device_rec_uncached(expr, depth); });
}

bool SemanticModel::indexed_device_rec_uncached(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return true;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return indexed_device_rec(parenthesized_inner(expr), depth + 1);
  if (s == k.integer) return true;
  if (s == k.string) {
    for (TSNode c : children(expr)) {
      if (node_symbol(c) != k.string_content) continue;
      std::string_view t = text(c);
      return t.rfind("cuda:", 0) == 0;  // "cuda:1", f"cuda:{rank}"; "cuda"/"cpu" are not indexed
    }
    return false;
  }
  if (is_rank_value(expr)) return true;
  if (s == k.conditional_expression && ts_node_named_child_count(expr) == 3) {
    return indexed_device_rec(ts_node_named_child(expr, 0), depth + 1) ||
           indexed_device_rec(ts_node_named_child(expr, 2), depth + 1);
  }
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return true;
    if (c->canonical == "torch.device") {
      if (positional_count(*c) >= 2 || !node_is_null(argument(*c, "index"))) return true;
      return indexed_device_rec(argument(*c, "type", 0), depth + 1);
    }
    return true;  // some helper returns the device: unknown
  }
  if (s == k.identifier || s == k.attribute) {
    if (!canonical_name(expr).empty()) return false;  // a module constant such as torch.float16
    std::string path = path_of(expr);
    auto bs = bindings_of(path, region_of(expr));
    if (bs.empty()) {
      Value v = value_of(expr);  // argparse default
      if (v.kind == Value::Kind::Str) return v.s.rfind("cuda:", 0) == 0;
      return true;
    }
    for (const Binding* b : bs) {
      if (node_eq(b->target, expr)) continue;
      if (b->kind != Binding::Kind::Assign || node_is_null(b->value)) return true;
      if (indexed_device_rec(b->value, depth + 1)) return true;
    }
    return false;
  }
  return true;
}

}  // namespace ddplint

namespace ddplint {

using namespace model_detail;

// Both walks follow every binding of a name, so a budget of visits (not only
// the depth) bounds them: `x = x + 1` would otherwise branch at every level.
constexpr int kHostBudget = 256;

bool SemanticModel::certainly_host_value(TSNode expr) const {
  int budget = kHostBudget;
  return host_value_rec(expr, 0, budget);
}

bool SemanticModel::host_value_rec(TSNode expr, int depth, int& budget) const {
  const Kinds& k = kinds();
  if (node_is_null(expr) || depth > kMaxDepth || --budget < 0) return false;
  TSSymbol s = node_symbol(expr);
  if (s == k.integer || s == k.float_ || s == k.string || s == k.concatenated_string || s == k.true_ ||
      s == k.false_ || s == k.none)
    return true;
  if (s == k.parenthesized_expression || s == k.unary_operator)
    return ts_node_named_child_count(expr) == 1 && host_value_rec(ts_node_named_child(expr, 0), depth + 1, budget);
  if (s == k.binary_operator)
    return host_value_rec(field(expr, k.f_left), depth + 1, budget) && host_value_rec(field(expr, k.f_right), depth + 1, budget);
  if (s == k.list || s == k.tuple || s == k.dictionary || ts_node_type(expr) == std::string_view("set")) {
    for (TSNode child : children(expr)) {
      TSNode v = node_symbol(child) == k.pair ? field(child, k.f_value) : child;
      if (!host_value_rec(v, depth + 1, budget)) return false;  // a splat or a tensor entry
    }
    return true;
  }
  if (s == k.subscript || s == k.attribute) {
    // `x.shape[0]`, `x.shape`, `opt.param_groups[0]["lr"]`, `sched.get_last_lr()[0]`
    TSNode base = expr;
    while (!node_is_null(base) && node_symbol(base) == k.subscript) base = field(base, k.f_value);
    if (node_is_null(base)) return false;
    if (node_symbol(base) == k.attribute) {
      std::string_view attr = text(field(base, k.f_attribute));
      if (attr == "shape" || attr == "param_groups" || attr == "ndim") return true;
      return false;
    }
    if (node_symbol(base) == k.call && !node_eq(base, expr)) return host_value_rec(base, depth + 1, budget);
    return false;
  }
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (c == nullptr) return false;
    if (!node_is_null(c->receiver) &&
        (c->method == "item" || c->method == "tolist" || c->method == "size" || c->method == "numel" ||
         c->method == "dim" || c->method == "get_last_lr"))
      return true;
    TSNode fn = field(expr, k.f_function);
    if (node_symbol(fn) == k.identifier && aliases_.find(text(fn)) == nullptr) {
      std::string_view name = text(fn);
      if (name == "float" || name == "int" || name == "len" || name == "round" || name == "str" || name == "bool")
        return bindings_of(name, region_of(expr)).empty();  // the builtin, not a name of the file
    }
    return false;
  }
  if (s == k.identifier) {
    // every binding of the name holds a host value (`last = 0.0` ... `last = loss.item()`)
    BindingList bs = bindings_of(text(expr), region_of(expr));
    if (bs.empty()) return false;
    for (const Binding* b : bs) {
      if (b->kind == Binding::Kind::Assign || b->kind == Binding::Kind::Augmented) {
        if (!host_value_rec(b->value, depth + 1, budget)) return false;
        // a container bound empty (`logs = {}`) and filled later (`logs["loss"] = loss`,
        // `logs.append(loss)`): its entries count too
        TSSymbol vs = node_is_null(b->value) ? TSSymbol{0} : node_symbol(b->value);
        if ((vs == k.dictionary || vs == k.list || vs == k.dictionary_comprehension ||
             vs == k.list_comprehension || vs == k.set_comprehension) &&
            container_mutated_by_non_host(text(expr), b->scope, depth, budget))
          return false;
        continue;
      }
      if (b->kind != Binding::Kind::LoopTarget || node_is_null(b->target)) return false;
      // `for i in range(n)`: integers
      TSNode f = ts_node_parent(b->target);
      if (node_is_null(f) || node_symbol(f) != k.for_statement || !node_eq(field(f, k.f_left), b->target)) return false;
      TSNode it = field(f, k.f_right);
      if (node_symbol(it) != k.call) return false;
      TSNode fn = field(it, k.f_function);
      if (node_symbol(fn) != k.identifier || text(fn) != "range" || !bindings_of("range", region_of(expr)).empty())
        return false;
    }
    return true;
  }
  return false;
}

// True when container `name` of function scope `scope` gets an entry that is
// not certainly a host value: `name[k] = v`, `name.append(v)`, `.extend`,
// `.insert`, `.update`, `.add`, `.setdefault`.
bool SemanticModel::container_mutated_by_non_host(std::string_view name, int scope, int depth, int& budget) const {
  const Kinds& k = kinds();
  for (auto [sub, value] : name_subscript_writes_) {
    if (text(field(sub, k.f_value)) != name || regions_[region_of(sub)].scope != scope) continue;
    if (!host_value_rec(value, depth + 1, budget)) return true;
  }
  for (std::string_view m : {"append", "extend", "insert", "update", "add", "setdefault"}) {
    for (const CallSite* c : calls_named(m)) {
      if (node_is_null(c->receiver) || node_symbol(c->receiver) != k.identifier || text(c->receiver) != name ||
          regions_[c->region].scope != scope)
        continue;
      for (const Argument& a : arguments(*c))
        if (!host_value_rec(a.value, depth + 1, budget)) return true;
    }
  }
  return false;
}

bool SemanticModel::from_host_parameter(TSNode expr) const {
  if (project_ == nullptr || project_->host_parameters.empty()) return false;
  int budget = kHostBudget;
  return host_parameter_rec(expr, 0, budget);
}

bool SemanticModel::host_parameter_rec(TSNode expr, int depth, int& budget) const {
  const Kinds& k = kinds();
  if (node_is_null(expr) || depth > kMaxDepth || --budget < 0) return false;
  // `v.detach().float()`, `p.grad`: the name the chain starts from
  for (int guard = 0; guard < 16; ++guard) {
    TSSymbol s = node_symbol(expr);
    if (s == k.call) {
      TSNode fn = field(expr, k.f_function);
      if (node_symbol(fn) != k.attribute) break;
      expr = field(fn, k.f_object);
    } else if (s == k.attribute) {
      expr = field(expr, k.f_object);
    } else if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr))) {
      expr = parenthesized_inner(expr);
    } else {
      break;
    }
  }
  if (node_is_null(expr) || node_symbol(expr) != k.identifier) return false;
  std::string_view name = text(expr);
  int region = region_of(expr);
  BindingList bs = bindings_of(name, region);
  if (bs.empty()) return false;
  for (const Binding* b : bs) {
    switch (b->kind) {
      case Binding::Kind::Parameter: {
        int scope = regions_[region].scope;
        int f = regions_[scope].kind == Region::Kind::Function ? regions_[scope].function : -1;
        if (!is_top_level_function(f)) return false;
        if (!callers_of(f).empty()) return false;  // this file's own calls pass what they pass
        auto it = project_->host_parameters.find(functions_[f].name);
        if (it == project_->host_parameters.end() || !it->second.contains(name)) return false;
        break;
      }
      case Binding::Kind::Assign:
      case Binding::Kind::Augmented:
        if (!host_value_rec(b->value, depth + 1, budget) && !host_parameter_rec(b->value, depth + 1, budget)) return false;
        break;
      case Binding::Kind::LoopTarget: {
        TSNode f = b->target;
        while (!node_is_null(f) && node_symbol(f) != k.for_statement) f = ts_node_parent(f);
        if (node_is_null(f)) return false;
        // `values.items()`, `enumerate(values)`, `sorted(values)`: the entries of `values`
        if (!host_parameter_rec(iterated_container(field(f, k.f_right)), depth + 1, budget)) return false;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

TSNode SemanticModel::iterated_container(TSNode it) const {
  const Kinds& k = kinds();
  for (int guard = 0; guard < 4 && !node_is_null(it) && node_symbol(it) == k.call; ++guard) {
    TSNode fn = field(it, k.f_function);
    if (node_symbol(fn) == k.attribute) it = field(fn, k.f_object);
    else if (ts_node_named_child_count(field(it, k.f_arguments)) == 1)
      it = ts_node_named_child(field(it, k.f_arguments), 0);
    else break;
  }
  return it;
}

std::vector<std::pair<std::string_view, TSNode>> SemanticModel::parameters_of(int f) const {
  const Kinds& k = kinds();
  std::vector<std::pair<std::string_view, TSNode>> out;
  if (f < 0 || static_cast<std::size_t>(f) >= functions_.size()) return out;
  TSNode params = field(functions_[f].node, k.f_parameters);
  if (node_is_null(params)) return out;
  bool method = !is_top_level_function(f) && regions_[functions_[f].region].parent >= 0 &&
                regions_[regions_[functions_[f].region].parent].kind == Region::Kind::Class;
  bool first = true;
  for (TSNode p : children(params)) {
    TSSymbol s = node_symbol(p);
    TSNode name{}, default_value{};
    if (s == k.identifier) name = p;
    else if (s == k.default_parameter || s == k.typed_default_parameter) {
      name = field(p, k.f_name);
      default_value = field(p, k.f_value);
    }
    else if (s == k.typed_parameter && ts_node_named_child_count(p) > 0 &&
             node_symbol(ts_node_named_child(p, 0)) == k.identifier)
      name = ts_node_named_child(p, 0);
    if (node_is_null(name) || node_symbol(name) != k.identifier) {
      if (ts_node_type(p) == std::string_view("keyword_separator") || ts_node_type(p) == std::string_view("positional_separator")) continue;
      first = false;
      continue;  // `*args`, `**kwargs`
    }
    if (first && method) {
      first = false;
      continue;  // self / cls
    }
    first = false;
    out.emplace_back(text(name), default_value);
  }
  return out;
}

}  // namespace ddplint
