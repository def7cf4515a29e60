// DDP103 dataloader-workers-not-persistent: worker processes re-forked every epoch.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

#include <optional>
#include <unordered_set>

namespace ddplint::rules {

namespace {

// Adds the paths of the names and attributes in `expr` (the first 256 nodes) to `out`.
void collect_mentions(const SemanticModel& model, TSNode expr, std::unordered_set<std::string>& out) {
  std::vector<TSNode> stack{expr};
  for (int budget = 256; !stack.empty() && budget > 0; --budget) {
    TSNode n = stack.back();
    stack.pop_back();
    if (node_is_null(n)) continue;
    TSSymbol s = node_symbol(n);
    if (s == kinds().identifier || s == kinds().attribute) {
      std::string path = model.path_of(n);
      if (!path.empty()) out.insert(std::move(path));
    }
    for (TSNode c : children(n)) stack.push_back(c);
  }
}

// A loop at or above `region` within its function.
bool in_loop(const SemanticModel& model, int region) { return model.innermost_loop(region) >= 0; }

// The loader (by the name it is assigned to) is iterated once per pass of an
// outer loop: a `for ... in <loader>` nested in another loop, or the loader
// passed to a same-file function called inside a loop (`train_one_epoch(loader)`).
// Computed once per file (linear): every path so iterated.
std::unordered_set<std::string> iterated_per_epoch(const SemanticModel& model) {
  const Kinds& k = kinds();
  std::unordered_set<std::string> out;
  for (std::size_t r = 1; r < model.regions().size(); ++r) {
    const Region& reg = model.regions()[r];
    if (reg.kind != Region::Kind::Loop || node_symbol(reg.node) != k.for_statement) continue;
    if (in_loop(model, reg.parent)) collect_mentions(model, field(reg.node, k.f_right), out);
  }
  std::unordered_set<std::string_view> local_functions;
  for (const FunctionInfo& f : model.functions()) local_functions.insert(f.name);
  for (const CallSite& c : model.calls()) {
    if (c.method.empty() || !local_functions.contains(c.method) || !in_loop(model, c.region)) continue;
    collect_mentions(model, field(c.node, k.f_arguments), out);
  }
  return out;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  std::optional<std::unordered_set<std::string>> iterated;  // computed on the first loader that needs it
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    Value workers = model.value_of(model.argument(*call, "num_workers", 5));
    if (workers.kind != Value::Kind::Int || workers.i <= 0) continue;
    TSNode persistent = model.argument(*call, "persistent_workers");
    if (!node_is_null(persistent)) {
      Value v = model.value_of(persistent);
      if (!v.known() || v.truthy()) continue;
    } else if (model.has_unpacked_arguments(*call)) {
      continue;
    }
    // a loader built anew inside the loop is used once: persistent workers would not help
    if (in_loop(model, call->region)) continue;
    std::string path = model.path_of(model.assigned_to(call->node));
    if (path.empty()) continue;
    if (!iterated) iterated = iterated_per_epoch(model);
    if (!iterated->contains(path)) continue;
    // the fix, unsafe as DDP101's that adds the workers: persistent workers keep the
    // dataset object they were started with, so changes the main process makes to it
    // between epochs no longer reach them. With --unsafe-fixes, DDP101's fix and this one converge.
    std::optional<Fix> fix;
    if (node_is_null(persistent)) {
      if (std::optional<Edit> e = append_argument(model, *call, "persistent_workers=True", ctx.options().line_length))
        fix = Fix{Fix::Applicability::Unsafe, "Keep the workers across epochs (`persistent_workers=True`)", {std::move(*e)}};
    } else if (model.text(persistent) == "False") {
      fix = Fix{Fix::Applicability::Unsafe, "Keep the workers across epochs (`persistent_workers=True`)",
                {Edit{node_start_byte(persistent), node_end_byte(persistent), "True"}}};
    }
    ctx.report(node_start_byte(call->callee), node_end_byte(call->callee),
               "DataLoader with " + std::to_string(workers.i) +
                   " workers iterated once per epoch without persistent_workers=True: the worker processes are "
                   "started again (and the dataset re-initialised in each) at the start of every epoch",
               std::move(fix));
  }
}
}  // namespace

// needs: reports DataLoader calls (a torch import and the name written out)
extern const Rule kRuleDDP103{
    .info = {.code = "DDP103", .name = "dataloader-workers-not-persistent", .severity = Severity::Info,
             .summary = "num_workers > 0 without persistent_workers=True for a loader iterated once per epoch",
             .url = "https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader",
             .fixable = true, .opt_in = true,
             .needs = "torch;DataLoader"},
    .check = &check};

}  // namespace ddplint::rules
