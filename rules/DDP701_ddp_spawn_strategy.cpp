// DDP701 ddp-spawn-strategy: Lightning/Fabric starts its DDP processes with spawn.
#include "linter/node_access.hpp"
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

#include <optional>
#include <string>

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  for (const FrameworkStrategy& st : framework_strategies(model)) {
    if (st.object != nullptr) {
      // DDPStrategy(start_method="spawn")
      TSNode method = model.argument(*st.object, "start_method");
      Value v = model.value_of(method);
      if (v.kind != Value::Kind::Str || v.s != "spawn") continue;
      TSNode at = argument_node(model, *st.object, method);
      ctx.report(node_start_byte(at), node_end_byte(at),
                 "DDPStrategy(start_method=\"spawn\") is the ddp_spawn strategy: Lightning's docs call it generally "
                 "slower than DDP, for debugging, and without multi-node support; leave start_method at \"popen\"");
      continue;
    }
    if (st.name.rfind("ddp_spawn", 0) != 0) continue;
    std::string plain = "ddp" + st.name.substr(std::string_view("ddp_spawn").size());
    // unsafe: with "ddp" the whole script runs once per GPU, so code before
    // fit() runs in every process
    std::optional<Fix> fix = strategy_rename_fix(model, st, plain);
    TSNode at = argument_node(model, *st.config->call, st.value);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "strategy=\"" + st.name + "\" starts its processes by spawn: Lightning's docs call it generally "
               "slower than DDP, for debugging, and without multi-node support; use strategy=\"" + plain + "\"",
               std::move(fix));
  }
}
}  // namespace

// needs: a strategy name or start_method with "spawn" in a Lightning Trainer or Fabric configuration
extern const Rule kRuleDDP701{
    .info = {.code = "DDP701", .name = "ddp-spawn-strategy", .severity = Severity::Warning,
             .summary = "Lightning/Fabric strategy \"ddp_spawn\": processes started by spawn, slower and limited",
             .url = "https://lightning.ai/docs/pytorch/stable/accelerators/gpu_intermediate.html",
             .fixable = true, .needs = "spawn;Trainer|Fabric|DDPStrategy"},
    .check = &check};

}  // namespace ddplint::rules
