// DDP106 sampler-with-shuffle: DataLoader(shuffle=True, sampler=...) raises at start-up.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    // DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
    TSNode shuffle = model.argument(*call, "shuffle", 2);
    if (node_is_null(shuffle)) continue;
    Value sv = model.value_of(shuffle);
    if (!sv.known() || !sv.truthy()) continue;
    for (auto [name, pos] : {std::pair<std::string_view, int>{"sampler", 3}, {"batch_sampler", 4}}) {
      TSNode sampler = model.argument(*call, name, pos);
      if (node_is_null(sampler) || model.value_of(sampler).kind == Value::Kind::None) continue;
      TSNode at = argument_node(model, *call, shuffle);
      // the fix: drop `shuffle=True` (a positional True becomes False: later positions must not move)
      std::optional<Fix> fix;
      if (!same_node(at, shuffle)) {
        if (std::optional<Edit> e = remove_argument(model, *call, at))
          fix = Fix{Fix::Applicability::Safe, "Remove `shuffle=True` (the sampler decides the order)", {std::move(*e)}};
      } else if (model.text(shuffle) == "True") {
        fix = Fix{Fix::Applicability::Safe, "Pass shuffle=False (the sampler decides the order)",
                  {Edit{node_start_byte(shuffle), node_end_byte(shuffle), "False"}}};
      }
      ctx.report(node_start_byte(at), node_end_byte(at),
                 "shuffle=True together with " + std::string(name) +
                     "=: DataLoader raises ValueError at start-up (the sampler decides the order); drop shuffle "
                     "and shuffle in the sampler (DistributedSampler(shuffle=True) is the default)",
                 std::move(fix));
      break;
    }
  }
}
}  // namespace

// needs: reports DataLoader calls (a torch import and the name written out)
extern const Rule kRuleDDP106{
    .info = {.code = "DDP106", .name = "sampler-with-shuffle", .severity = Severity::Error,
             .summary = "DataLoader(shuffle=True, sampler=...): raises ValueError at start-up",
             .url = "https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader", .fixable = true,
             .needs = "torch;DataLoader"},
    .check = &check};

}  // namespace ddplint::rules
