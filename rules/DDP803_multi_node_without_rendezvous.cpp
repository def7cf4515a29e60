// DDP803 multi-node-without-rendezvous: torchrun on several nodes with no address to meet at.
#include <string>

#include "linter/launch_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// torchrun (or its modules) with --nnodes above 1 and neither --rdzv-endpoint
// nor --master-addr, and no PET_RDZV_ENDPOINT/PET_MASTER_ADDR (torchrun reads
// each option from its PET_ variable) set by the script. Not with
// --standalone (DDP802's cause). Nor a launch under a guard (`if [ $NODE_RANK
// -eq 0 ]`: the first node hosts the rendezvous and needs no address), nor one
// whose options include a word the file does not fix (`$RDZV_ARGS`).
// An endpoint or address that names the local host (`localhost`, `127.0.0.1`)
// is the same as none.
bool local_host(const LaunchOption* o) {
  if (o == nullptr || !o->value || !o->value->value) return false;
  std::string_view v = *o->value->value;
  return v == "localhost" || v.starts_with("localhost:") || v == "127.0.0.1" || v.starts_with("127.0.0.1:");
}

void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const Launch& l : model.launches()) {
    if (!l.is_torch_launcher() || l.option("standalone") != nullptr || l.opaque_options || l.conditional) continue;
    const LaunchOption* nnodes = l.option("nnodes");
    if (nnodes == nullptr || !nnodes->value || !nnodes->value->value) continue;
    std::optional<std::int64_t> n = parse_node_count(*nnodes->value->value);
    if (!n || *n <= 1) continue;
    const LaunchOption* endpoint = l.option("rdzv-endpoint");
    const LaunchOption* address = l.option("master-addr");
    if ((endpoint != nullptr && !local_host(endpoint)) || (address != nullptr && !local_host(address))) continue;
    bool from_env = false;
    for (std::string_view var : {"PET_RDZV_ENDPOINT", "PET_MASTER_ADDR"})
      for (const EnvSetting& s : model.env_settings())
        if (s.name == var && s.start < l.start) from_env = true;
    for (const EnvSetting& s : l.env)
      if (s.name == "PET_RDZV_ENDPOINT" || s.name == "PET_MASTER_ADDR") from_env = true;
    if (from_env) continue;
    const LaunchOption* local = endpoint != nullptr ? endpoint : address;
    std::string what =
        local != nullptr
            ? " with a rendezvous on the local host (" + local->written + " " + *local->value->value + ")"
            : std::string(" without --rdzv-endpoint or --master-addr (--master-addr defaults to 127.0.0.1)");
    ctx.report(nnodes->start, nnodes->end,
               nnodes->written + " " + *nnodes->value->value + what +
                   ": each node looks for the rendezvous on its own localhost, so the nodes never join one job; "
                   "pass the first node's address to all of them");
  }
}
}  // namespace

// needs: none (launch scripts are not prefiltered)
extern const Rule kRuleDDP803{
    .info = {.code = "DDP803", .name = "multi-node-without-rendezvous", .severity = Severity::Warning,
             .summary = "torchrun on several nodes without a rendezvous endpoint or master address",
             .url = "https://pytorch.org/docs/stable/elastic/run.html"},
    .check_launch = &check_launch};

}  // namespace ddplint::rules
