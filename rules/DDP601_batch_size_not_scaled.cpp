// DDP601 batch-size-not-scaled: per-GPU batch shrinks as GPUs are added.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace ddplint::rules {

namespace {

// True if the expression (through names bound once) multiplies by a GPU count.
bool multiplies_by_gpu_count(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return multiplies_by_gpu_count(model, parenthesized_inner(expr), depth + 1);
  if (s == k.binary_operator) {
    TSNode l = field(expr, k.f_left), r = field(expr, k.f_right);
    if (model.text(field(expr, k.f_operator)) == "*" &&
        (model.is_world_size_value(l) || model.is_world_size_value(r)))
      return true;
    return multiplies_by_gpu_count(model, l, depth + 1) || multiplies_by_gpu_count(model, r, depth + 1);
  }
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    if (!c) return false;
    for (int i = 0, n = model.positional_count(*c); i < n; ++i)
      if (multiplies_by_gpu_count(model, model.argument(*c, "", i), depth + 1)) return true;
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    for (const Binding* b : model.bindings_of(model.path_of(expr), model.region_of(expr))) {
      if (node_eq(b->target, expr)) continue;
      if (b->kind == Binding::Kind::Augmented && model.text(field(b->value, k.f_operator)) == "*=" &&
          model.is_world_size_value(field(b->value, k.f_right)))
        return true;
      if (b->kind == Binding::Kind::Assign && multiplies_by_gpu_count(model, b->value, depth + 1)) return true;
    }
  }
  return false;
}

// True when the total that `division` divides by the world size (`args.batch_size`
// in `args.batch_size // world_size`) also sets the learning rate: a binding
// whose target names a learning rate reads it (`base_lr = args.batch_size / 256`,
// `lr = args.lr * args.batch_size / 256`). The global batch is then a
// hyperparameter of the method, tuned with its learning rate, and a per-GPU
// share of it is deliberate (Barlow Twins, LARS at a fixed global batch).
bool total_sets_learning_rate(const SemanticModel& model, TSNode division) {
  const Kinds& k = kinds();
  if (node_is_null(division) || node_symbol(division) != k.binary_operator) return false;
  TSNode total = field(division, k.f_left);
  if (node_is_null(total) || (node_symbol(total) != k.identifier && node_symbol(total) != k.attribute)) return false;
  std::string storage;
  std::string total_path(model.path_view(total, storage));
  if (total_path.empty()) return false;
  for (const Binding& b : model.bindings()) {
    if (node_is_null(b.value)) continue;
    std::string target = lowercase(model.last_name(b.target));
    bool lr = target == "lr" || target.starts_with("lr_") || target.ends_with("_lr") || target.find("learning_rate") != std::string::npos;
    if (!lr) continue;
    std::vector<TSNode> stack{b.value};
    for (int budget = 256; !stack.empty() && budget > 0; --budget) {
      TSNode n = stack.back();
      stack.pop_back();
      TSSymbol s = node_symbol(n);
      if (s == k.identifier || s == k.attribute) {
        std::string inner;
        if (model.path_view(n, inner) == total_path) return true;
        if (s == k.identifier) continue;
      }
      for (TSNode c : children(n)) stack.push_back(c);
    }
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  bool data_parallel = !model.calls_to(kDataParallel).empty();
  if (!model.is_distributed() && !data_parallel) return;
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    // DataLoader(dataset, batch_size=1, ...)
    TSNode bs = model.argument(*call, "batch_size", 1);
    if (node_is_null(bs) || evaluation_loader(model, *call)) continue;
    TSNode at = argument_node(model, *call, bs);
    TSNode division{};
    if (model.is_distributed() && model.divides_by_world_size(bs, &division)) {
      if (total_sets_learning_rate(model, division)) continue;  // a global batch the method is tuned at
      std::string where = node_eq(division, bs) || node_is_null(division)
                              ? std::string()
                              : " (divided at line " + std::to_string(line_of(model, division)) + ")";
      ctx.report(node_start_byte(at), node_end_byte(at),
                 "per-rank batch size is a fixed total divided by the world size" + where +
                     ": each GPU gets less work as GPUs are added while the gradient all-reduce stays the "
                     "same size; keep the per-GPU batch fixed and let the global batch grow");
      continue;
    }
    if (data_parallel && !model.is_distributed()) {
      Value v = model.value_of(bs);
      if (v.kind != Value::Kind::Int || multiplies_by_gpu_count(model, bs)) continue;
      ctx.report(node_start_byte(at), node_end_byte(at),
                 "DataParallel splits each batch across the visible GPUs: batch_size=" + std::to_string(v.i) +
                     " gives each GPU batch_size / N samples; multiply the per-GPU batch by "
                     "torch.cuda.device_count()");
    }
  }
}
}  // namespace

// needs: reports the batch_size of DataLoader calls
extern const Rule kRuleDDP601{
    .info = {.code = "DDP601", .name = "batch-size-not-scaled", .severity = Severity::Warning,
             .summary = "Per-rank batch size derived by dividing a total by world_size (or DataParallel batch not scaled)",
             .url = "https://pytorch.org/docs/stable/notes/ddp.html", .opt_in = true,
             .needs = "torch;DataLoader"},
    .check = &check};

}  // namespace ddplint::rules
