// DDP209 find-unused-parameters: an extra autograd-graph traversal every iteration.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite* call : model.calls_to(kDDP)) {
    TSNode flag = model.argument(*call, "find_unused_parameters");
    if (node_is_null(flag)) continue;
    Value v = model.value_of(flag);
    if (!v.known() || !v.truthy()) continue;
    TSNode at = argument_node(model, *call, flag);
    // unsafe: with parameters that really get no gradient, DDP then fails in backward
    std::optional<Fix> fix;
    if (std::optional<Edit> e = remove_argument(model, *call, at))
      fix = Fix{Fix::Applicability::Unsafe, "Remove `find_unused_parameters=True`", {std::move(*e)}};
    ctx.report(node_start_byte(at), node_end_byte(at),
               "find_unused_parameters=True makes DDP traverse the autograd graph after every forward to find "
               "parameters that get no gradient; leave it off unless some parameters really are unused",
               std::move(fix));
  }
}
}  // namespace

// needs: reports the find_unused_parameters keyword of DistributedDataParallel calls
extern const Rule kRuleDDP209{
    .info = {.code = "DDP209", .name = "find-unused-parameters", .severity = Severity::Info,
             .summary = "find_unused_parameters=True: an extra autograd-graph traversal every iteration",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html",
             .fixable = true, .needs = "torch;DistributedDataParallel;find_unused_parameters"},
    .check = &check};

}  // namespace ddplint::rules
