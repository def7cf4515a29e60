// DDP702 accumulate-without-accumulation-steps: accelerator.accumulate() over 1 step.
#include "linter/node_access.hpp"
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace ddplint::rules {

namespace {

// The script's own command-line option for the number of accumulation steps
// (`--gradient_accumulation_steps`, `--accum_iter`): an argparse destination
// that names accumulation. Empty when there is none.
std::string_view accumulation_option(const SemanticModel& model) {
  std::vector<std::string_view> dests = model.argparse_destinations();
  std::sort(dests.begin(), dests.end());
  for (std::string_view d : dests)
    if (d.find("accum") != std::string_view::npos) return d;
  return {};
}

// True when the file sets the accelerator's steps after constructing it
// (`accelerator.gradient_accumulation_steps = n`, Accelerate's documented
// alternative, or through its gradient_state).
bool steps_set_later(const SemanticModel& model, std::string_view accelerator) {
  for (const Binding& b : model.bindings()) {
    if (!b.path.ends_with(".gradient_accumulation_steps") && !b.path.ends_with(".num_steps")) continue;
    if (b.path.starts_with(accelerator)) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  std::vector<const FrameworkConfig*> reported;
  for (const CallSite* call : model.calls_named("accumulate")) {
    if (model.framework_object(call->receiver) != FrameworkObject::Accelerator) continue;
    const FrameworkConfig* config = model.framework_config_of(call->receiver);
    if (config == nullptr || std::find(reported.begin(), reported.end(), config) != reported.end()) continue;
    FrameworkSetting steps = model.framework_setting(*config, "gradient_accumulation_steps");
    FrameworkSetting plugin = model.framework_setting(*config, "gradient_accumulation_plugin");
    if (plugin.state != FrameworkSetting::State::Default) continue;
    std::string what;
    if (steps.state == FrameworkSetting::State::Written) {
      Value v = model.value_of(steps.value);
      if (v.kind != Value::Kind::Int || v.i != 1) continue;
    } else if (steps.state != FrameworkSetting::State::Default) {
      continue;
    }
    if (steps_set_later(model, model.path_of(call->receiver))) continue;
    // the variable Accelerator() reads when given no plugin, written by the script
    bool from_environment = false;
    for (const EnvWrite& w : model.env_writes())
      from_environment = from_environment || w.name == "ACCELERATE_GRADIENT_ACCUMULATION_STEPS";
    if (from_environment) continue;
    // Left at its default, only a DeepSpeed launch sets it from outside
    // (`accelerate launch --use_deepspeed --gradient_accumulation_steps N` or a
    // DeepSpeed config file export ACCELERATE_GRADIENT_ACCUMULATION_STEPS:
    // accelerate/utils/launch.py prepare_deepspeed_cmd_env): not for a DeepSpeed Accelerator
    if (steps.state == FrameworkSetting::State::Default &&
        model.framework_setting(*config, "deepspeed_plugin").state != FrameworkSetting::State::Default)
      continue;
    // a DeepSpeed launch configuration can still set the steps of a plain
    // Accelerator() (Accelerate then builds its DeepSpeed plugin from the
    // environment): only a script with an accumulation option of its own,
    // never given to the Accelerator, certainly loses it
    std::string_view option = accumulation_option(model);
    if (option.empty()) continue;
    bool given = false;
    for (const Argument& a : model.arguments(*config->call)) given = given || (!option.empty() && model.last_name(a.value) == option);
    if (given) continue;
    reported.push_back(config);
    auto line_of = [&](TSNode n) { return std::to_string(model.source().lines().position(node_start_byte(n)).row); };
    std::string setting = steps.state == FrameworkSetting::State::Written ? "gradient_accumulation_steps=1"
                                                                          : "no gradient_accumulation_steps";
    const CallSite* defined = model.argparse_definition(option);
    std::string unused = ", and the script's --" + std::string(option) +
                         (defined == nullptr ? std::string() : " (line " + line_of(defined->node) + ")") +
                         " never reaches it";
    auto [start, end] = first_line_range(model, config->call->node);
    ctx.report(start, end,
               "Accelerator with " + setting + " and " + std::string(model.text(call->receiver)).substr(0, 40) +
                   ".accumulate() at line " + line_of(call->node) +
                   ": it accumulates over 1 micro-step, so every micro-step all-reduces and steps the optimizer" +
                   unused + "; pass gradient_accumulation_steps to Accelerator(...)");
  }
}
}  // namespace

// needs: Accelerate's accumulate() on an Accelerator constructed in the file
extern const Rule kRuleDDP702{
    .info = {.code = "DDP702", .name = "accumulate-without-accumulation-steps", .severity = Severity::Warning,
             .summary = "accelerator.accumulate() while the Accelerator accumulates over 1 step: no accumulation",
             .url = "https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation",
             .needs = "Accelerator;accumulate"},
    .check = &check};

}  // namespace ddplint::rules
