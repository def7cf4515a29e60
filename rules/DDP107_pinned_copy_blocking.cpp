// DDP107 pinned-copy-blocking: pinned batches copied without non_blocking=True.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// Some DataLoader of the file pins memory (pin_memory resolves to true).
bool pins_memory(const SemanticModel& model) {
  for (const CallSite* c : model.calls_to(kDataLoader)) {
    Value v = model.value_of(model.argument(*c, "pin_memory", 7));
    if (v.known() && v.truthy()) return true;
  }
  return false;
}

// `.to(x)` whose argument is a device, not a dtype (`torch.float16`) or a tensor.
bool device_move(const SemanticModel& model, const CallSite& c) {
  if (c.method == "cuda") return true;
  if (c.method != "to") return false;
  TSNode a = model.argument(c, "device", 0);
  if (node_is_null(a)) return false;
  std::string canonical = model.canonical_name(a);
  if (!canonical.empty() && canonical.rfind("torch.device", 0) != 0) return false;  // torch.float16 etc.
  Value v = model.value_of(a);
  if (v.kind == Value::Kind::Str) return v.s.rfind("cuda", 0) == 0;
  return true;  // a device variable, local_rank, torch.device(...)
}

// True when the loop that binds `base` certainly iterates a DataLoader that
// does not pin memory: `for x, y in loader` (or `enumerate(loader)`) where
// `loader` is bound once to a DataLoader call whose pin_memory is absent or
// false. The file's other, pinned, loader does not make these batches pinned.
bool from_unpinned_loader(const SemanticModel& model, TSNode base) {
  const Kinds& k = kinds();
  for (const Region& r : model.regions()) {
    if (r.kind != Region::Kind::Loop || node_symbol(r.node) != k.for_statement) continue;
    TSNode left = field(r.node, k.f_left);
    if (node_is_null(left) || node_start_byte(base) < node_start_byte(left) || node_end_byte(base) > node_end_byte(left))
      continue;
    TSNode loader = model.iterated_container(field(r.node, k.f_right));
    TSNode made = node_is_null(loader) ? TSNode{} : model.single_assignment(loader);
    if (!node_is_null(loader) && node_symbol(loader) == k.call) made = loader;
    const CallSite* call = node_is_null(made) ? nullptr : model.call_at(made);
    if (call == nullptr || call->canonical != kDataLoader || model.has_unpacked_arguments(*call)) return false;
    TSNode pin = model.argument(*call, "pin_memory", 7);
    if (node_is_null(pin)) return true;
    Value v = model.value_of(pin);
    return v.known() && !v.truthy();
  }
  return false;
}

// Batch data: the receiver's base name is bound by a `for` target (`for x, y in
// loader`, `batch["ids"]`, `images.float()`), not the model or a constant, and
// not the batch of a loader that does not pin memory.
bool batch_value(const SemanticModel& model, TSNode receiver) {
  const Kinds& k = kinds();
  TSNode base = receiver;
  for (int guard = 0; guard < 16 && !node_is_null(base); ++guard) {
    TSSymbol s = node_symbol(base);
    if (s == k.identifier) break;
    if (s == k.attribute) base = field(base, k.f_object);
    else if (s == k.subscript) base = field(base, k.f_value);
    else if (s == k.call) base = field(field(base, k.f_function), k.f_object);
    else return false;
  }
  if (node_is_null(base) || node_symbol(base) != k.identifier) return false;
  for (const Binding* b : model.bindings_of(model.text(base), model.region_of(base)))
    if (b->kind == Binding::Kind::LoopTarget) return !from_unpinned_loader(model, b->target);
  return false;
}

// Positional arguments of a call (`.to("cuda", None, False)`: 3).
unsigned positional_arguments(TSNode call) {
  const Kinds& k = kinds();
  TSNode args = field(call, k.f_arguments);
  unsigned n = 0;
  for (uint32_t i = 0; !node_is_null(args) && i < ts_node_named_child_count(args); ++i) {
    TSSymbol s = node_symbol(ts_node_named_child(args, i));
    if (s != k.keyword_argument && s != k.comment) ++n;
  }
  return n;
}

// The copied batch is written in place elsewhere in the file (`x.mul_(2)`,
// `x.copy_(...)`): a non_blocking copy would race with that write on the host,
// so no fix is offered (the tutorial's caveat).
bool written_in_place(const SemanticModel& model, TSNode receiver) {
  std::string_view name = model.text(receiver);
  for (const CallSite& c : model.calls())
    if (!node_is_null(c.receiver) && !c.method.empty() && c.method.back() == '_' && model.text(c.receiver) == name)
      return true;
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  // a loader with pinned memory first: without one, no copy is reported (and most scripts have none)
  if (!model.uses_cuda() || !pins_memory(model)) return;
  // a loop over a loader Accelerate prepared gets its batches on the device
  // already (DataLoaderShard sends each to it): a `.to(device)` there copies nothing
  BlockingLoaderSteps accelerate_moves(model);
  for (const CallSite& c : model.calls()) {
    if (node_is_null(c.receiver) || !device_move(model, c) || !batch_value(model, c.receiver)) continue;
    if (accelerate_moves.holds(c)) continue;
    TSNode nb = model.argument(c, "non_blocking", c.method == "cuda" ? 1 : -1);
    if (!node_is_null(nb)) {
      Value v = model.value_of(nb);
      if (!v.known() || v.truthy()) continue;
    }
    if (model.has_unpacked_arguments(c)) continue;
    // `.to(device, dtype, non_blocking)`: a positional non_blocking is not read here, so unknown
    if (c.method == "to" && positional_arguments(c.node) > 1) continue;
    if (!model.runs_every_step(c.node, kRareGuards)) continue;
    // the fix, safe: a host-to-device copy from pinned memory with non_blocking=True is
    // ordered on the current CUDA stream before the kernels that read its result
    // (the pinmem_nonblock tutorial); so DDP102's pin_memory=True fix and this one converge
    std::optional<Fix> fix;
    if (written_in_place(model, c.receiver)) {
      // no fix: see written_in_place
    } else if (node_is_null(nb)) {
      if (std::optional<Edit> e = append_argument(model, c, "non_blocking=True", ctx.options().line_length))
        fix = Fix{Fix::Applicability::Safe, "Add `non_blocking=True`", {std::move(*e)}};
    } else if (model.text(nb) == "False") {
      fix = Fix{Fix::Applicability::Safe, "Set `non_blocking=True`", {Edit{node_start_byte(nb), node_end_byte(nb), "True"}}};
    }
    auto [start, end] = first_line_range(model, c.node);
    ctx.report(start, end,
               "a batch from a pinned-memory loader copied without non_blocking=True: the copy blocks the CPU "
               "until it is done instead of overlapping with GPU work",
               std::move(fix));
  }
}
}  // namespace

// needs: reports only where a DataLoader call pins memory
extern const Rule kRuleDDP107{
    .info = {.code = "DDP107", .name = "pinned-copy-blocking", .severity = Severity::Info,
             .summary = "Per-step .to(device)/.cuda() without non_blocking=True in a script whose loader pins memory",
             .url = "https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html", .fixable = true, .opt_in = true,
             .needs = "torch;DataLoader"},
    .check = &check};

}  // namespace ddplint::rules
