// DDP201 ddp-without-device-ids: DDP wrap in a CUDA script where nothing pins this rank's GPU.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// A pin counts if it is in another function (order unknown) or before the wrap
// in the wrap's own function.
bool counts_before(const SemanticModel& model, TSNode pin, TSNode wrap) {
  int pin_scope = model.regions()[model.region_of(pin)].scope;
  int wrap_scope = model.regions()[model.region_of(wrap)].scope;
  return pin_scope != wrap_scope || ts_node_start_byte(pin) < ts_node_start_byte(wrap);
}

// Something selects this process's GPU: torch.cuda.set_device(...),
// init_process_group(device_id=...), torch.cuda.device(...), a move to an
// indexed device (.to(local_rank), .cuda(args.gpu), f"cuda:{rank}"), or
// CUDA_VISIBLE_DEVICES set in code.
bool device_pinned(const SemanticModel& model, TSNode wrap) {
  if (model.source().text().find("CUDA_VISIBLE_DEVICES") != std::string_view::npos) return true;
  for (const CallSite* c : model.calls_to("torch.cuda.set_device"))
    if (counts_before(model, c->node, wrap)) return true;
  for (const CallSite* c : model.calls_to("torch.cuda.device"))
    if (counts_before(model, c->node, wrap)) return true;
  for (const CallSite* c : model.calls_to("torch.distributed.init_process_group"))
    if (!ts_node_is_null(model.argument(*c, "device_id")) && counts_before(model, c->node, wrap)) return true;
  for (std::string_view method : {"to", "cuda"}) {
    for (const CallSite* c : model.calls_named(method)) {
      if (ts_node_is_null(c->receiver) || !counts_before(model, c->node, wrap)) continue;
      TSNode device = model.argument(*c, "device", 0);
      if (ts_node_is_null(device)) continue;  // .cuda(): the current device, GPU 0 unless set
      if (model.may_be_indexed_device(device)) return true;
    }
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda() || model.gloo_backend()) return;
  for (const CallSite* call : model.calls_to(kDDP)) {
    // DistributedDataParallel(module, device_ids=None, output_device=None, ...)
    if (!ts_node_is_null(model.argument(*call, "device_ids", 1))) continue;  // any value, None included
    if (model.has_unpacked_arguments(*call)) continue;
    if (device_pinned(model, call->node)) continue;
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
