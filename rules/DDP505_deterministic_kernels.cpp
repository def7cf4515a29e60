// DDP505 deterministic-kernels: deterministic cuDNN / algorithms in a training script.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// Settings under an `if` (typically `if args.seed is not None:` or
// `if args.deterministic:`) are opted into per run: the recommended form.
bool conditional(const SemanticModel& model, TSNode node) {
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    const Region& reg = model.regions()[r];
    if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) return false;
    // `if __name__ == "__main__":` runs every time: not an opt-in
    if (reg.kind == Region::Kind::Branch && model.text(reg.condition).find("__name__") == std::string_view::npos)
      return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.trains()) return;
  for (const Binding& b : model.bindings()) {
    if (b.kind != Binding::Kind::Assign || node_is_null(b.value)) continue;
    std::string target = model.canonical_name(b.target);
    if (target != "torch.backends.cudnn.deterministic" && target != "torch.backends.cudnn.benchmark") continue;
    Value v = model.value_of(b.value);
    if (!v.known()) continue;
    bool deterministic = target.ends_with("deterministic");
    if (deterministic != v.truthy()) continue;  // deterministic = True, or benchmark = False
    if (conditional(model, b.target)) continue;
    auto [start, end] = first_line_range(model, b.target);
    ctx.report(start, end,
               deterministic ? "cudnn.deterministic = True limits cuDNN to deterministic algorithms, which are "
                               "often slower; keep it for runs that must be bit-reproducible"
                             : "cudnn.benchmark = False skips cuDNN's search for the fastest convolution algorithm "
                               "for each input shape; enable it when input shapes are fixed");
  }
  for (const CallSite* call : model.calls_to("torch.use_deterministic_algorithms")) {
    Value v = model.value_of(model.argument(*call, "mode", 0));
    if (!v.known() || !v.truthy() || conditional(model, call->node)) continue;
    auto [start, end] = first_line_range(model, call->node);
    ctx.report(start, end,
               "torch.use_deterministic_algorithms(True) forces deterministic kernels (or errors where none "
               "exist), which are often slower; keep it for runs that must be bit-reproducible");
  }
}
}  // namespace

// needs: reports cudnn.deterministic/benchmark or use_deterministic_algorithms in a file that trains
extern const Rule kRuleDDP505{
    .info = {.code = "DDP505", .name = "deterministic-kernels", .severity = Severity::Info,
             .summary = "cudnn.deterministic=True, use_deterministic_algorithms(True) or cudnn.benchmark=False in a training script",
             .url = "https://pytorch.org/docs/stable/notes/randomness.html",
             .needs = "torch;deterministic|benchmark;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
