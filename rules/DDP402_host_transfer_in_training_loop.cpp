// DDP402 host-transfer-in-training-loop: .cpu()/.numpy()/.tolist()/.to("cpu") every step.
#include <optional>
#include <unordered_set>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

bool is_host_read(std::string_view method) {
  return method == "cpu" || method == "numpy" || method == "tolist" || method == "item";
}

// `.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`
bool to_cpu(const SemanticModel& model, const CallSite& call) {
  if (call.method != "to") return false;
  TSNode device = model.argument(call, "device", 0);
  if (node_is_null(device)) return false;
  Value v = model.value_of(device);
  if (v.kind == Value::Kind::Str) return v.s == "cpu";
  if (node_symbol(device) == kinds().call) {
    const CallSite* ctor = model.call_at(device);
    if (ctor && ctor->canonical == "torch.device") {
      Value t = model.value_of(model.argument(*ctor, "type", 0));
      return t.kind == Value::Kind::Str && t.s == "cpu";
    }
  }
  return false;
}

// The receiver is already a host value: a NumPy array (also sliced, or after
// a NumPy method such as `.round(4)`), a Python number, or the result of a
// host read. Follows names bound once; bounded depth.
// A direct chain (`x.cpu().numpy()`) is not exempt: its outermost read is the
// one reported; only a read stored earlier (`arr = x.cpu().numpy()`) is.
bool host_receiver(const SemanticModel& model, TSNode expr, int depth = 0, bool stored = false) {
  if (node_is_null(expr) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return host_receiver(model, parenthesized_inner(expr), depth + 1, stored);
  if (s == k.subscript) return host_receiver(model, field(expr, k.f_value), depth + 1, stored);
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    if (!c) return false;
    if (c->canonical.rfind("numpy.", 0) == 0) return true;
    bool read = c->method == "numpy" || c->method == "tolist" || c->method == "item" || c->method == "cpu" ||
                to_cpu(model, *c);
    if (read) return stored;
    // a method of a host value returns a host value (`arr.round(4)`)
    return !node_is_null(c->receiver) && host_receiver(model, c->receiver, depth + 1, stored);
  }
  if (s == k.identifier || s == k.attribute) {
    if (model.canonical_name(expr).rfind("numpy", 0) == 0) return true;
    TSNode v = model.single_assignment(expr);
    if (!node_is_null(v)) return host_receiver(model, v, depth + 1, true);
    return model.value_of(expr).is_number();
  }
  return model.value_of(expr).is_number();
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  std::optional<BlockingLoaderSteps> blocking;
  // In a chain (`loss.detach().cpu().numpy()`, `x.cpu().item()`,
  // `t.cpu().detach().numpy()`) only the outermost read is reported: one copy,
  // one sync, one finding. Every call below a read in its chain of receivers
  // is inner (the walk is bounded by the chain's length).
  std::unordered_set<std::uint32_t> inner;
  for (const CallSite& c : model.calls()) {
    if (!(is_host_read(c.method) || to_cpu(model, c))) continue;
    TSNode r = c.receiver;
    for (int depth = 0; depth < 16 && !node_is_null(r) && node_symbol(r) == kinds().call; ++depth) {
      if (!inner.insert(node_start_byte(r) ^ (node_end_byte(r) << 1)).second) break;  // walked from an outer read already
      const CallSite* below = model.call_at(r);
      r = below == nullptr ? TSNode{} : below->receiver;
    }
  }
  for (const CallSite& c : model.calls()) {
    bool transfer = (c.method == "cpu" || c.method == "numpy" || c.method == "tolist") ? model.positional_count(c) == 0
                                                                                      : to_cpu(model, c);
    if (!transfer || node_is_null(c.receiver)) continue;
    if (inner.contains(node_start_byte(c.node) ^ (node_end_byte(c.node) << 1))) continue;
    if (host_receiver(model, c.receiver)) continue;
    if (model.from_host_parameter(c.receiver)) continue;  // every per-step caller passes a host value
    if (!model.runs_every_step(c.node, kRareGuards)) continue;
    // a copy the step itself needs on the host (the action a CPU environment
    // takes, a value that decides control flow, or a use ddplint cannot
    // follow) cannot be kept on the GPU: only a copy for the logs, or for
    // nothing, can move to every N steps
    ValueUse use = model.result_use(c.node);
    if (use.kind == ValueUse::Kind::Computation) continue;
    if (!blocking) blocking.emplace(model);
    if (blocking->holds(c)) continue;  // the loop waits for the GPU at each batch anyway
    auto [start, end] = first_line_range(model, c.node);
    std::string what = c.method == "to" ? ".to(\"cpu\")" : "." + std::string(c.method) + "()";
    std::string feeds = " (its result is never read)";
    if (use.kind == ValueUse::Kind::Logging) {
      // the log line when it is another line than the copy's
      const auto& lines = model.source().lines();
      std::uint32_t sink_row = node_is_null(use.sink) ? 0 : lines.position(node_start_byte(use.sink)).row;
      feeds = sink_row == 0 || sink_row == lines.position(node_start_byte(c.node)).row
                  ? std::string(" for the logs")
                  : " for the logs (line " + std::to_string(sink_row) + ")";
    }
    ctx.report(start, end,
               "`" + what + "` on every training step" + feeds + ": copying a CUDA tensor to the host waits for all "
               "queued GPU work (a host-device sync); keep values on the GPU and copy every N steps");
  }
}
}  // namespace

// needs: fires without torch: uses_cuda() ("cuda"/"nccl", or a framework that picks the GPU: accelerate,
// lightning) and a training loop (backward()/.step()) or a Lightning per-step hook (on_train_batch_*, ...)
extern const Rule kRuleDDP402{
    .info = {.code = "DDP402", .name = "host-transfer-in-training-loop", .severity = Severity::Warning,
             .summary = "`.cpu()`, `.numpy()`, `.tolist()` or `.to(\"cpu\")` on every step of a CUDA training loop, for the logs or for nothing",
             .url = "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
             .needs = "torch|cuda|nccl|accelerate|lightning;backward|step|on_train_batch|zero_grad"},
    .check = &check};

}  // namespace ddplint::rules
