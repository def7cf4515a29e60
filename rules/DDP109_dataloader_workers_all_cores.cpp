// DDP109 dataloader-workers-all-cores: every rank of a node starts as many workers as the node has cores.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// The machine's core count: os.cpu_count(), multiprocessing.cpu_count(),
// len(os.sched_getaffinity(0)).
bool core_count(const SemanticModel& model, TSNode expr) {
  const Kinds& k = kinds();
  if (node_is_null(expr) || node_symbol(expr) != k.call) return false;
  const CallSite* c = model.call_at(expr);
  if (c == nullptr) return false;
  if (c->canonical == "os.cpu_count" || c->canonical == "multiprocessing.cpu_count" ||
      c->canonical == "torch.multiprocessing.cpu_count")
    return true;
  if (c->method == "len" && model.positional_count(*c) == 1) {
    const CallSite* inner = model.call_at(model.argument(*c, "", 0));
    return inner != nullptr && inner->canonical == "os.sched_getaffinity";
  }
  return false;
}

// All of the node's cores, or all but a constant few (`os.cpu_count() - 1`),
// through parentheses and one name bound once. A division, a min() with a
// bound, or anything else is not.
bool all_cores(const SemanticModel& model, TSNode expr, int depth = 0) {
  const Kinds& k = kinds();
  if (node_is_null(expr) || depth > 4) return false;
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return all_cores(model, parenthesized_inner(expr), depth + 1);
  if (s == k.identifier) return all_cores(model, model.single_assignment(expr), depth + 1);
  if (s == k.binary_operator) {
    std::string_view op = model.text(field(expr, k.f_operator));
    Value right = model.value_of(field(expr, k.f_right));
    return op == "-" && right.kind == Value::Kind::Int && right.i <= 2 && all_cores(model, field(expr, k.f_left), depth + 1);
  }
  return core_count(model, expr);
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.is_distributed()) return;
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    TSNode workers = model.argument(*call, "num_workers", 5);
    if (!all_cores(model, workers)) continue;
    TSNode at = argument_node(model, *call, workers);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "num_workers set to the machine's core count in a distributed script: every rank on a node starts "
               "that many worker processes, so 8 ranks start 8 times as many workers as there are cores and "
               "they compete for CPU with the training processes; divide by the ranks per node "
               "(os.cpu_count() // int(os.environ[\"LOCAL_WORLD_SIZE\"]))");
  }
}
}  // namespace

// needs: reports DataLoader calls whose num_workers is os/multiprocessing.cpu_count or sched_getaffinity
extern const Rule kRuleDDP109{
    .info = {.code = "DDP109", .name = "dataloader-workers-all-cores", .severity = Severity::Warning,
             .summary = "DataLoader num_workers set to the machine's core count on every rank of a distributed job",
             .url = "https://pytorch.org/docs/stable/data.html#multi-process-data-loading",
             .needs = "torch;DataLoader;cpu_count|sched_getaffinity"},
    .check = &check};

}  // namespace ddplint::rules
