// DDP502 deprecated-cuda-amp: torch.cuda.amp.autocast / GradScaler.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
std::string_view deprecated_name(std::string_view canonical) {
  if (canonical == "torch.cuda.amp.autocast") return "autocast";
  if (canonical == "torch.cuda.amp.GradScaler") return "GradScaler";
  if (canonical == "torch.cuda.amp.custom_fwd") return "custom_fwd";
  if (canonical == "torch.cuda.amp.custom_bwd") return "custom_bwd";
  return {};
}

// The mechanical rewrite, when the code spells the full `torch.cuda.amp.NAME`
// (an imported `autocast` needs its import changed too: no fix then):
// - autocast(...) -> torch.amp.autocast("cuda", ...), keyword arguments only
//   (its positional order differs: cuda's (enabled, dtype, cache_enabled)
//   against (device_type, dtype, enabled, cache_enabled));
// - GradScaler(...) -> torch.amp.GradScaler("cuda", ...): same order after `device`;
// - custom_fwd/custom_bwd -> torch.amp.custom_fwd(device_type="cuda", ...),
//   bare decorator or keyword arguments.
// Defaults are the same (autocast on CUDA is float16 in both spellings).
// `generic`: autocast becomes torch.autocast (PyTorch 1.10+), the same class
// under the name older releases have.
std::optional<Fix> rewrite(const SemanticModel& model, TSNode callee, const CallSite* call, std::string_view name,
                           bool generic = false) {
  std::string full = "torch.cuda.amp." + std::string(name);
  if (model.text(callee) != full) return std::nullopt;
  std::string target = generic && name == "autocast" ? "torch.autocast" : "torch.amp." + std::string(name);
  Fix fix{Fix::Applicability::Safe, "Use `" + target + "` with \"cuda\"", {}};
  fix.edits.push_back(Edit{node_start_byte(callee), node_end_byte(callee), target});
  bool custom = name == "custom_fwd" || name == "custom_bwd";
  std::string device = custom ? "device_type=\"cuda\"" : "\"cuda\"";
  if (call == nullptr) {  // bare decorator
    if (!custom) return std::nullopt;
    std::uint32_t end = node_end_byte(callee);
    fix.edits.back().replacement += "(" + device + ")";
    fix.edits.back().end = end;
    return fix;
  }
  TSNode args = field(call->node, kinds().f_arguments);
  if (node_is_null(args) || node_symbol(args) != kinds().argument_list) return std::nullopt;
  if (name != "GradScaler" && (model.positional_count(*call) > 0 || model.has_unpacked_arguments(*call)))
    return std::nullopt;
  bool empty = model.arguments(*call).empty();
  std::uint32_t at = node_start_byte(args) + 1;
  fix.edits.push_back(Edit{at, at, empty ? device : device + ", "});
  return fix;
}

// The releases that matter for NAME: the first that warns on the old
// spelling, and the first that has the replacement (linter/torch_version.hpp).
struct Releases {
  TorchVersion warns;
  TorchVersion replacement;
};
Releases releases_of(std::string_view name) {
  if (name == "GradScaler") return {torch_release::kAmpGradScaler, torch_release::kAmpGradScaler};
  if (name == "autocast") return {torch_release::kCudaAmpDeprecated, torch_release::kAmpAutocast};
  return {torch_release::kCudaAmpDeprecated, torch_release::kAmpCustomFwd};
}

// Reports NAME at `at` as the project's PyTorch makes it: nothing where no
// supported release warns; info, with the fix unsafe, where some supported
// release lacks the replacement; else the rule's severity.
// An autocast in a project whose every release has torch.autocast (1.10) but
// not all have torch.amp.autocast (1.13) is told to use torch.autocast, which
// works on all of them (`generic_fix`: the same rewrite to that name).
void report(RuleContext& ctx, TSNode at, std::string_view name, std::optional<Fix> fix,
            std::optional<Fix> generic_fix = std::nullopt) {
  const TorchSupport& torch = ctx.options().torch;
  Releases r = releases_of(name);
  if (!torch.reaches(r.warns)) return;  // every supported release takes the old spelling silently
  if (name == "autocast" && !torch.all_at_least(r.replacement) && torch.all_at_least(torch_release::kAutocast)) {
    ctx.report(node_start_byte(at), node_end_byte(at),
               "torch.cuda.amp.autocast is deprecated (a FutureWarning since PyTorch 2.4), and every release the "
               "project supports (" + torch.describe() + ") has torch.autocast (PyTorch 1.10): use "
               "torch.autocast(\"cuda\", ...)",
               std::move(generic_fix));
    return;
  }
  std::string instead = name == "autocast"     ? "torch.amp.autocast(\"cuda\", ...)"
                        : name == "GradScaler" ? "torch.amp.GradScaler(\"cuda\", ...)"
                                               : "torch.amp." + std::string(name) + "(device_type=\"cuda\", ...)";
  std::string old = "torch.cuda.amp." + std::string(name);
  std::string since = name == "GradScaler" ? "PyTorch 2.3 warns, a FutureWarning from 2.4" : "a FutureWarning since PyTorch 2.4";
  if (!torch.all_at_least(r.replacement)) {
    if (fix) fix->applicability = Fix::Applicability::Unsafe;
    ctx.report_at(Severity::Info, node_start_byte(at), node_end_byte(at),
                  old + " is deprecated (" + since + "), but the project supports " + torch.describe() +
                      " and torch.amp." + std::string(name) + " needs " + r.replacement.to_string() +
                      ": switch to " + instead + " when the project requires it",
                  std::move(fix));
    return;
  }
  std::string assumed = torch.bounded()    ? ""
                        : torch.declared() ? " (torch is declared with no version: the current release is assumed)"
                                           : " (no PyTorch release declared: the current one is assumed)";
  ctx.report(node_start_byte(at), node_end_byte(at), old + " is deprecated (" + since + "): use " + instead + assumed,
             std::move(fix));
}

// The call is the `except` fallback of a `try` that first calls the current
// API (`try: torch.amp.GradScaler(device=...) except (AttributeError,
// TypeError): torch.cuda.amp.GradScaler()`): it runs only on an old PyTorch,
// where the old spelling is the one that exists.
bool fallback_for_old_torch(const SemanticModel& model, const CallSite& call) {
  const Kinds& k = kinds();
  for (TSNode n = ts_node_parent(call.node); !node_is_null(n); n = ts_node_parent(n)) {
    TSSymbol s = node_symbol(n);
    if (s == k.function_definition || s == k.class_definition) return false;
    if (s != k.except_clause) continue;
    TSNode body = field(ts_node_parent(n), k.f_body);
    if (node_is_null(body)) return false;
    for (const CallSite& c : model.calls()) {
      if (node_start_byte(c.node) < node_start_byte(body) || node_end_byte(c.node) > node_end_byte(body)) continue;
      if (c.canonical.rfind("torch.amp.", 0) == 0 || c.canonical == "torch.autocast") return true;
    }
    return false;
  }
  return false;
}

// True when `cond` tests the installed PyTorch: it reads `torch.__version__`
// (or `torch.version.*`), directly or through a name bound once to an
// expression that does (`TORCH_VERSION = version.parse(torch.__version__)`),
// calls a helper named for it (`is_torch_version(">=", "2.3")`), or asks
// whether torch has an API (`hasattr(torch.amp, "GradScaler")`).
bool tests_torch_version(const SemanticModel& model, TSNode cond) {
  const Kinds& k = kinds();
  std::vector<std::pair<TSNode, int>> stack{{cond, 0}};
  for (int budget = 256; !stack.empty() && budget > 0; --budget) {
    auto [n, depth] = stack.back();
    stack.pop_back();
    if (node_is_null(n)) continue;
    TSSymbol s = node_symbol(n);
    if (s == k.attribute || s == k.identifier) {
      std::string canonical = model.canonical_name(n);
      if (canonical == "torch.__version__" || canonical.starts_with("torch.version.")) return true;
      if (s == k.identifier && depth < 2) {
        TSNode bound = model.single_assignment(n);
        if (!node_is_null(bound)) stack.push_back({bound, depth + 1});
      }
    }
    if (s == k.call) {
      if (const CallSite* c = model.call_at(n)) {
        std::string callee = lowercase(c->method);
        if (callee.find("torch_version") != std::string::npos || callee.find("torch_ver") != std::string::npos)
          return true;
        if (callee == "hasattr" && c->argument_count >= 1) {
          TSNode object = model.argument(*c, "", 0);
          if (!node_is_null(object) && model.canonical_name(object).starts_with("torch")) return true;
        }
      }
    }
    for (TSNode child : children(n)) stack.push_back({child, depth});
  }
  return false;
}

// The call sits in a branch of an `if` (or a conditional expression) that
// tests the installed PyTorch: the project already picks the spelling per
// release (a compatibility shim's `else` runs only where the old one is current).
bool version_gated(const SemanticModel& model, const CallSite& call) {
  const Kinds& k = kinds();
  for (TSNode n = ts_node_parent(call.node); !node_is_null(n); n = ts_node_parent(n)) {
    TSSymbol s = node_symbol(n);
    if (s == k.function_definition || s == k.class_definition) return false;
    if (s == k.conditional_expression && ts_node_named_child_count(n) == 3 &&
        tests_torch_version(model, ts_node_named_child(n, 1)))
      return true;
    if (s != k.if_statement) continue;
    if (tests_torch_version(model, field(n, k.f_condition))) return true;
    for (TSNode clause : children(n))
      if (node_symbol(clause) == k.elif_clause && tests_torch_version(model, field(clause, k.f_condition))) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite& call : model.calls()) {
    std::string_view name = deprecated_name(call.canonical);
    if (!name.empty() && (fallback_for_old_torch(model, call) || version_gated(model, call))) continue;
    if (!name.empty())
      report(ctx, call.callee, name, rewrite(model, call.callee, &call, name),
             rewrite(model, call.callee, &call, name, true));
  }
  // bare decorators: `@custom_bwd` (the called form is a call, handled above)
  for (TSNode d : model.decorators()) {
    if (node_symbol(d) == kinds().call) continue;
    std::string_view name = deprecated_name(model.canonical_name(d));
    if (!name.empty()) report(ctx, d, name, rewrite(model, d, nullptr, name), rewrite(model, d, nullptr, name, true));
  }
}
}  // namespace

// needs: reports torch.cuda.amp.{autocast,GradScaler,custom_fwd,custom_bwd}
extern const Rule kRuleDDP502{
    .info = {.code = "DDP502", .name = "deprecated-cuda-amp", .severity = Severity::Warning,
             .summary = "torch.cuda.amp.autocast / GradScaler: deprecated, use torch.amp with \"cuda\"",
             .url = "https://pytorch.org/docs/stable/amp.html", .fixable = true, .deprecated_api = true,
             .needs = "torch;autocast|GradScaler|custom_fwd|custom_bwd"},
    .check = &check};

}  // namespace ddplint::rules
