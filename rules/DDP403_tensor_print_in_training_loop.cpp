// DDP403 tensor-print-in-training-loop: printing or logging a CUDA tensor every step.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

bool logging_call(const SemanticModel& model, const CallSite& c) {
  if (node_is_null(c.receiver)) return c.method == "print";
  std::string_view m = c.method;
  if (m != "info" && m != "debug" && m != "warning" && m != "error" && m != "log") return false;
  std::string canonical = model.canonical_name(c.receiver);
  if (canonical.rfind("logging", 0) == 0) return true;
  std::string_view name = model.last_name(c.receiver);
  return name.find("log") != std::string_view::npos;  // logger, log, LOGGER, self.logger
}

// An argument that formats a tensor: the tensor itself, or an f-string
// interpolating one.
TSNode formatted_tensor(const SemanticModel& model, TSNode arg) {
  if (tensor_valued(model, arg)) return arg;
  if (node_symbol(arg) != kinds().string) return {};
  for (TSNode part : children(arg)) {
    if (node_symbol(part) != kinds().interpolation || ts_node_named_child_count(part) == 0) continue;
    TSNode e = ts_node_named_child(part, 0);
    if (tensor_valued(model, e)) return e;
  }
  return {};
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  for (const CallSite& c : model.calls()) {
    if (!logging_call(model, c)) continue;
    TSNode found{};
    for (const Argument& a : model.arguments(c)) {
      found = formatted_tensor(model, a.value);
      if (!node_is_null(found)) break;
    }
    if (node_is_null(found) || !model.runs_every_step(c.node, kRareGuards)) continue;
    auto [start, end] = first_line_range(model, c.node);
    ctx.report(start, end,
               "`" + std::string(model.text(found).substr(0, 40)) +
                   "` is a tensor printed or logged every training step: formatting a CUDA tensor copies it to the "
                   "host and waits for the GPU (a host-device sync); log every N steps");
  }
}
}  // namespace

// needs: reports calls run every step (runs_every_step: a training loop, backward()/.step()), or a Lightning per-step hook
extern const Rule kRuleDDP403{
    .info = {.code = "DDP403", .name = "tensor-print-in-training-loop", .severity = Severity::Warning,
             .summary = "print/logging/f-string of a tensor every training step: an implicit copy to the host",
             .url = "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
             .needs = "torch;backward|step|on_train_batch|zero_grad"},
    .check = &check};

}  // namespace ddplint::rules
