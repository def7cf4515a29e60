// DDP201 ddp-without-device-ids: DDP wrap in a CUDA script where nothing pins this rank's GPU.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

#include <algorithm>
#include <unordered_map>

namespace ddplint::rules {

namespace {

// Where something selects this process's GPU: torch.cuda.set_device(...),
// torch.cuda.device(...), init_process_group(device_id=...), a move to an
// indexed device (.to(local_rank), .cuda(args.gpu), f"cuda:{rank}"), or
// CUDA_VISIBLE_DEVICES set in code. Collected once per file.
struct Pins {
  bool anywhere = false;                              // CUDA_VISIBLE_DEVICES: pinned for every wrap
  std::unordered_map<int, std::uint32_t> first_in_scope;  // scope -> earliest pin byte
  std::size_t count = 0;

  void add(const SemanticModel& model, TSNode pin) {
    int scope = model.regions()[model.region_of(pin)].scope;
    auto [it, inserted] = first_in_scope.try_emplace(scope, ts_node_start_byte(pin));
    if (!inserted) it->second = std::min(it->second, ts_node_start_byte(pin));
    ++count;
  }

  // A pin counts if it is in another function (order unknown) or before the
  // wrap in the wrap's own function.
  bool before(const SemanticModel& model, TSNode wrap) const {
    if (anywhere) return true;
    int scope = model.regions()[model.region_of(wrap)].scope;
    auto it = first_in_scope.find(scope);
    std::size_t here = 0;
    if (it != first_in_scope.end()) {
      if (it->second < ts_node_start_byte(wrap)) return true;
      here = 1;
    }
    // pins in other scopes (first_in_scope has one entry per scope with pins)
    return first_in_scope.size() > here;
  }
};

Pins collect_pins(const SemanticModel& model) {
  Pins pins;
  pins.anywhere = model.source().text().find("CUDA_VISIBLE_DEVICES") != std::string_view::npos;
  if (pins.anywhere) return pins;
  for (const CallSite* c : model.calls_to("torch.cuda.set_device")) pins.add(model, c->node);
  for (const CallSite* c : model.calls_to("torch.cuda.device")) pins.add(model, c->node);
  for (const CallSite* c : model.calls_to("torch.distributed.init_process_group"))
    if (!ts_node_is_null(model.argument(*c, "device_id"))) pins.add(model, c->node);
  for (std::string_view method : {"to", "cuda"}) {
    for (const CallSite* c : model.calls_named(method)) {
      if (ts_node_is_null(c->receiver)) continue;
      TSNode device = model.argument(*c, "device", 0);
      if (ts_node_is_null(device)) continue;  // .cuda(): the current device, GPU 0 unless set
      if (model.may_be_indexed_device(device)) pins.add(model, c->node);
    }
  }
  return pins;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda() || model.gloo_backend()) return;
  auto wraps = model.calls_to(kDDP);
  if (wraps.empty()) return;
  Pins pins = collect_pins(model);
  for (const CallSite* call : wraps) {
    // DistributedDataParallel(module, device_ids=None, output_device=None, ...)
    if (!ts_node_is_null(model.argument(*call, "device_ids", 1))) continue;  // any value, None included
    if (model.has_unpacked_arguments(*call)) continue;
    if (pins.before(model, call->node)) continue;
    auto [start, end] = first_line_range(model, call->node);
    ctx.report(start, end,
               "DistributedDataParallel without device_ids, and nothing before it pins this rank's GPU: "
               "pass device_ids=[local_rank] (or call torch.cuda.set_device(local_rank) first)");
  }
}
}  // namespace

extern const Rule kDdpWithoutDeviceIds{
    {"DDP201", "ddp-without-device-ids", Severity::Warning,
     "DistributedDataParallel without device_ids where nothing pins the rank's GPU",
     "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html", {}, false},
    &check};

}  // namespace ddplint::rules
