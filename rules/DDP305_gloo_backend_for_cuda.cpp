// DDP305 gloo-backend-for-cuda: the gloo process group in a script that trains on CUDA.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// True when `expr` tests which operating system runs the script:
// `sys.platform`, `os.name` or `platform.system()` (Windows has no NCCL, so
// a gloo group there is the only choice).
bool tests_platform(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.attribute || s == k.identifier) {
    std::string name = model.canonical_name(expr);
    if (name == "sys.platform" || name == "os.name" || name == "platform.system") return true;
  }
  for (TSNode c : children(expr))
    if (ts_node_is_named(c) && tests_platform(model, c, depth + 1)) return true;
  return false;
}

// Whether `expr` is true on Windows: +1 for a test that Windows passes
// (`sys.platform == "win32"`, `os.name == "nt"`, `platform.system() ==
// "Windows"`, `sys.platform.startswith("win")`, a name bound to one), -1 for
// its negation (`!=`, `not`), 0 for anything else.
int windows_test(const SemanticModel& model, TSNode expr, int depth = 0) {
  if (node_is_null(expr) || depth > 6) return 0;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return windows_test(model, parenthesized_inner(expr), depth + 1);
  if (s == k.identifier) {
    TSNode bound = model.single_assignment(expr);
    return node_is_null(bound) ? 0 : windows_test(model, bound, depth + 1);
  }
  if (s == k.not_operator) return -windows_test(model, field(expr, k.f_argument), depth + 1);
  auto windows_string = [&](TSNode n) {
    Value v = model.value_of(n);
    return v.kind == Value::Kind::Str && (v.s == "win32" || v.s == "win" || v.s == "nt" || v.s == "Windows" ||
                                          v.s == "cygwin" || v.s == "msys");
  };
  if (s == k.comparison_operator && ts_node_named_child_count(expr) == 2 &&
      tests_platform(model, ts_node_named_child(expr, 0)) && windows_string(ts_node_named_child(expr, 1))) {
    std::string_view op = model.text(expr);
    op = op.substr(node_end_byte(ts_node_named_child(expr, 0)) - node_start_byte(expr));
    op = op.substr(0, node_start_byte(ts_node_named_child(expr, 1)) - node_end_byte(ts_node_named_child(expr, 0)));
    if (op.find("!=") != std::string_view::npos || op.find("not") != std::string_view::npos) return -1;
    if (op.find("==") != std::string_view::npos || op.find("in") != std::string_view::npos) return 1;
    return 0;
  }
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    if (c != nullptr && c->method == "startswith" && tests_platform(model, c->receiver) &&
        windows_string(model.argument(*c, "", 0)))
      return 1;
  }
  return 0;
}

// True when `node` runs only on Windows (in the branch of an `if` that a
// Windows platform test takes: PyTorch ships no NCCL there) or only where
// CUDA is unavailable (SemanticModel::on_path_without_cuda).
bool platform_branch(const SemanticModel& model, TSNode node) {
  if (model.on_path_without_cuda(node)) return true;  // a CPU or MPS fallback
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind != Region::Kind::Branch || node_is_null(region.condition)) continue;
    int windows = windows_test(model, region.condition);
    if ((region.negated ? -windows : windows) > 0) return true;
  }
  return false;
}

bool gloo_value(const SemanticModel& model, TSNode v) {
  Value value = model.value_of(v);
  return value.kind == Value::Kind::Str && value.s == "gloo";
}

constexpr std::string_view kSlower =
    ": gradient all-reduces of CUDA tensors run far slower than with NCCL; ";

// The backend chosen through a framework: TrainingArguments(ddp_backend="gloo")
// (the Hugging Face Trainer's process group: transformers/training_args.py),
// and Lightning's or Fabric's DDPStrategy(process_group_backend="gloo").
void framework_backends(const SemanticModel& model, RuleContext& ctx) {
  for (const FrameworkConfig& config : model.framework_configs()) {
    if (config.framework != Framework::HfTrainer) continue;
    FrameworkSetting backend = model.framework_setting(config, "ddp_backend");
    if (backend.state != FrameworkSetting::State::Written || !gloo_value(model, backend.value)) continue;
    bool cpu = false;
    for (std::string_view key : {"use_cpu", "no_cuda"}) {
      FrameworkSetting s = model.framework_setting(config, key);
      Value v = model.value_of(s.value);
      cpu = cpu || (s.state == FrameworkSetting::State::Written && (!v.known() || v.truthy()));
    }
    if (cpu || platform_branch(model, config.call->node)) continue;
    TSNode at = argument_node(model, *config.call, backend.value);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "ddp_backend=\"gloo\" for the Trainer" + std::string(kSlower) + "leave ddp_backend unset (NCCL on CUDA)");
  }
  if (!model.uses_cuda()) return;
  for (const FrameworkStrategy& st : framework_strategies(model)) {
    if (st.object == nullptr) continue;
    TSNode backend = model.argument(*st.object, "process_group_backend");
    if (node_is_null(backend) || !gloo_value(model, backend) || platform_branch(model, st.object->node)) continue;
    TSNode at = argument_node(model, *st.object, backend);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "process_group_backend=\"gloo\" in a script that trains on CUDA" + std::string(kSlower) +
                   "leave it unset (NCCL on CUDA)");
  }
}

void check(const SemanticModel& model, RuleContext& ctx) {
  framework_backends(model, ctx);
  if (!model.uses_cuda() || !model.gloo_backend()) return;
  // only collectives move CUDA tensors through the process group: an RPC-only
  // script with a gloo group for bookkeeping is not slowed down by it
  bool collectives = model.wraps_ddp();
  for (const CallSite& c : model.calls()) collectives = collectives || is_collective(c.canonical);
  if (!collectives) return;
  for (const CallSite* call : model.calls_to("torch.distributed.init_process_group")) {
    TSNode backend = model.argument(*call, "backend", 0);
    if (node_is_null(backend)) continue;
    Value v = model.value_of(backend);
    bool gloo = (v.kind == Value::Kind::Str && v.s == "gloo") ||
                model.canonical_name(backend) == "torch.distributed.Backend.GLOO";
    if (!gloo || platform_branch(model, call->node)) continue;
    TSNode at = argument_node(model, *call, backend);
    ctx.report(node_start_byte(at), node_end_byte(at),
               "the gloo backend in a script that trains on CUDA: gradient all-reduces of CUDA tensors run "
               "far slower than with NCCL; use backend=\"nccl\" (or \"cpu:gloo,cuda:nccl\" for both)");
  }
}
}  // namespace

// needs: the gloo backend (or Backend.GLOO), named in init_process_group, TrainingArguments(ddp_backend=) or DDPStrategy(process_group_backend=)
extern const Rule kRuleDDP305{
    .info = {.code = "DDP305", .name = "gloo-backend-for-cuda", .severity = Severity::Warning,
             .summary = "init_process_group(backend=\"gloo\") in a script that trains on CUDA",
             .url = "https://pytorch.org/docs/stable/distributed.html#which-backend-to-use",
             .needs = "gloo|GLOO"},
    .check = &check};

}  // namespace ddplint::rules
