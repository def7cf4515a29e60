// DDP209 find-unused-parameters: an extra autograd-graph traversal every iteration.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
constexpr std::string_view kCost =
    " makes DDP traverse the autograd graph after every forward, to find the parameters that get no gradient; "
    "leave it off unless some parameters really are unused";

// `flag` (the keyword's value in `call`) when it is known to be true: the
// finding, with the unsafe fix that removes the keyword.
void report_flag(const SemanticModel& model, RuleContext& ctx, const CallSite& call, TSNode flag,
                 std::string_view written) {
  if (node_is_null(flag)) return;
  Value v = model.value_of(flag);
  if (!v.known() || !v.truthy()) return;
  TSNode at = argument_node(model, call, flag);
  // unsafe: with parameters that really get no gradient, DDP then fails in backward
  std::optional<Fix> fix;
  if (std::optional<Edit> e = remove_argument(model, call, at))
    fix = Fix{Fix::Applicability::Unsafe, "Remove `" + std::string(written) + "=True`", {std::move(*e)}};
  ctx.report(node_start_byte(at), node_end_byte(at), std::string(written) + "=True" + std::string(kCost),
             std::move(fix));
}

void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite* call : model.calls_to(kDDP))
    report_flag(model, ctx, *call, model.argument(*call, "find_unused_parameters"), "find_unused_parameters");
  // Not Accelerate's DistributedDataParallelKwargs(find_unused_parameters=True):
  // a handler object written for this one flag is a deliberate choice, and in
  // the evaluation both were needed (StyleTTS2's staged training, DreamBooth
  // SDXL's text encoder): no true finding among them
  // the Hugging Face Trainer passes it to DDP (TrainingArguments.ddp_find_unused_parameters)
  for (const FrameworkConfig& config : model.framework_configs()) {
    if (config.framework != Framework::HfTrainer) continue;
    FrameworkSetting s = model.framework_setting(config, "ddp_find_unused_parameters");
    if (s.state == FrameworkSetting::State::Written)
      report_flag(model, ctx, *config.call, s.value, "ddp_find_unused_parameters");
  }
  // Lightning and Fabric: `strategy="ddp_find_unused_parameters_true"` (the
  // registered name of DDPStrategy(find_unused_parameters=True)), or the object
  for (const FrameworkStrategy& st : framework_strategies(model)) {
    if (st.object != nullptr) {
      report_flag(model, ctx, *st.object, model.argument(*st.object, "find_unused_parameters"), "find_unused_parameters");
      continue;
    }
    constexpr std::string_view kSuffix = "_find_unused_parameters_true";
    if (!st.name.ends_with(kSuffix)) continue;
    std::string plain = st.name.substr(0, st.name.size() - kSuffix.size());
    // unsafe: with parameters that really get no gradient, DDP then fails in backward
    std::optional<Fix> fix = strategy_rename_fix(model, st, plain);
    TSNode at = argument_node(model, *st.config->call, st.value);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "strategy=\"" + st.name + "\" is DDP with find_unused_parameters=True, which" + std::string(kCost),
               std::move(fix));
  }
}
}  // namespace

// needs: the find_unused_parameters keyword of DDP or Lightning's DDPStrategy,
// or TrainingArguments(ddp_find_unused_parameters=), or a strategy name that ends in it
extern const Rule kRuleDDP209{
    .info = {.code = "DDP209", .name = "find-unused-parameters", .severity = Severity::Info,
             .summary = "find_unused_parameters=True: an extra autograd-graph traversal every iteration",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html",
             .fixable = true, .opt_in = true, .needs = "find_unused_parameters"},
    .check = &check};

}  // namespace ddplint::rules
