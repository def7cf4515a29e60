// DDP306 nccl-debug-left-on: NCCL_DEBUG=INFO/TRACE set in code.
#include "linter/launch_model.hpp"
#include "linter/semantic_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  if (!spells_out_nccl(model)) return;  // the rule's `needs` below hold exactly
  for (const EnvWrite& w : model.env_writes()) {
    if (w.name != "NCCL_DEBUG") continue;
    Value v = model.value_of(w.value);
    if (v.kind != Value::Kind::Str) continue;
    std::string level = lowercase(v.s);
    if (level != "info" && level != "trace") continue;
    auto [start, end] = first_line_range(model, w.at);
    ctx.report(start, end,
               level == "trace" ? "NCCL_DEBUG=TRACE logs every collective call: leave it for debugging sessions"
                                : "NCCL_DEBUG=INFO left on in code: every rank logs NCCL's set-up; use WARN outside "
                                  "debugging sessions");
  }
}

// A launch script's `export NCCL_DEBUG=INFO` (or `NCCL_DEBUG=INFO torchrun ...`);
// not a setting guarded by an `if`/`case` (a debug switch of the script).
void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const EnvSetting& s : model.env_settings()) {
    if (s.conditional || s.scope == EnvSetting::Scope::Shell || !s.value.value || s.name != "NCCL_DEBUG") continue;
    std::string level = lowercase(*s.value.value);
    if (level != "info" && level != "trace") continue;
    ctx.report(s.start, s.end,
               level == "trace" ? "NCCL_DEBUG=TRACE logs every collective call: leave it for debugging sessions"
                                : "NCCL_DEBUG=INFO left on in the launch script: every rank logs NCCL's set-up; use "
                                  "WARN outside debugging sessions");
  }
}
}  // namespace

// needs: env writes (os.environ, putenv) without torch; `NCCL` written out (checked in check())
extern const Rule kRuleDDP306{
    .info = {.code = "DDP306", .name = "nccl-debug-left-on", .severity = Severity::Info,
             .summary = "NCCL_DEBUG set to INFO or TRACE in code",
             .url = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-debug",
             .needs = "NCCL;environ|putenv"},
    .check = &check,
    .check_launch = &check_launch};

}  // namespace ddplint::rules
