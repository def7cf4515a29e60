// DDP304 nccl-transport-disabled: NCCL forced onto slower transports.
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!spells_out_nccl(model)) return;  // the rule's `needs` below hold exactly
  for (const EnvWrite& w : model.env_writes()) {
    Value v = model.value_of(w.value);
    std::string what;
    if (w.name == "NCCL_IB_DISABLE" || w.name == "NCCL_P2P_DISABLE" || w.name == "NCCL_SHM_DISABLE") {
      bool disables = (v.kind == Value::Kind::Str && !v.s.empty() && v.s != "0") ||
                      ((v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) && v.i != 0);
      if (!disables) continue;  // "0", 0, or unknown
      what = w.name == "NCCL_IB_DISABLE"    ? "InfiniBand/RoCE, so inter-node traffic goes over TCP sockets"
             : w.name == "NCCL_P2P_DISABLE" ? "direct GPU-to-GPU (NVLink/PCIe peer) copies, so traffic is staged through host memory"
                                            : "shared-memory transport between processes, so intra-node traffic goes over the network";
      what = w.name + " disables " + what;
    } else if (w.name == "NCCL_NET" && v.kind == Value::Kind::Str && lowercase(v.s) == "socket") {
      what = "NCCL_NET=Socket forces TCP sockets even where InfiniBand or RoCE is available";
    } else {
      continue;
    }
    auto [start, end] = first_line_range(model, w.at);
    ctx.report(start, end, what + ": collectives get slower; set it only to work around a broken fabric");
  }
}
}  // namespace

// needs: env writes (os.environ, putenv) without torch; `NCCL` written out (checked in check())
extern const Rule kRuleDDP304{
    .info = {.code = "DDP304", .name = "nccl-transport-disabled", .severity = Severity::Warning,
             .summary = "NCCL_IB_DISABLE / NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_NET=Socket set in code",
             .url = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
             .needs = "NCCL;environ|putenv"},
    .check = &check};

}  // namespace ddplint::rules
