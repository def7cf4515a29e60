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

bool SemanticModel::rank_rec(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return rank_rec(ts_node_named_child(expr, 0), depth + 1);
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
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return world_rec(ts_node_named_child(expr, 0), depth + 1);
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
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return divides_rec(ts_node_named_child(expr, 0), depth + 1, division);
  if (s == k.binary_operator || s == k.augmented_assignment) {
    std::string_view op = text(field(expr, k.f_operator));
    // the divisor is the world size, or a product with it as a factor: `total // (world_size * accum)`
    auto world_factor = [&](TSNode d) {
      for (int guard = 0; guard < 8 && !node_is_null(d); ++guard) {
        if (world_rec(d, 0)) return true;
        TSSymbol ds = node_symbol(d);
        if (ds == k.parenthesized_expression && ts_node_named_child_count(d) == 1) {
          d = ts_node_named_child(d, 0);
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

bool SemanticModel::indexed_device_rec(TSNode expr, int depth) const {
  if (node_is_null(expr)) return true;
  return memoized(3, expr, [&] { return indexed_device_rec_uncached(expr, depth); });
}

bool SemanticModel::indexed_device_rec_uncached(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return true;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return indexed_device_rec(ts_node_named_child(expr, 0), depth + 1);
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
