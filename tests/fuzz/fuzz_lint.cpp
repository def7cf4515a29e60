// libFuzzer harness 1: source bytes -> decode check -> parse -> semantic model
// -> every rule -> every output format (text, full, grouped, GitHub, JSON,
// SARIF) and the fix edits. Properties checked besides "no crash, no
// sanitizer report":
//   - the prefilter is sound: a file it skips has no findings when parsed;
//   - every finding's range lies inside the text, start <= end;
//   - the JSON and SARIF documents serialise (invalid UTF-8 replaced).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "linter/fixes.hpp"
#include "linter/lint.hpp"
#include "linter/output.hpp"
#include "rules/registry.hpp"
#include "tests/fuzz/fuzz_limits.hpp"

using namespace ddplint;

namespace {
[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_lint: property violated: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  RuleSelection all;
  // the same bytes as a launch script (the launch model and the check_launch
  // rules), and as Markdown (its shell blocks, at their offsets)
  for (const char* name : {"fuzz/input.sh", "fuzz/README.md"}) {
    SourceFile shell(name, std::string(reinterpret_cast<const char*>(data), size));
    LintResult r = lint(shell, rules::all(), all);
    for (const Diagnostic& d : r.diagnostics) {
      if (d.start > d.end || d.end > shell.text().size()) fail("a launch script finding's range is outside the text");
      if (d.fix)
        for (const Edit& e : d.fix->edits)
          if (e.start > e.end || e.end > shell.text().size()) fail("a launch script fix's edit is outside the text");
    }
    (void)format_text(shell, r.diagnostics, /*color=*/false);
  }
  SourceFile source("fuzz/input.py", std::string(reinterpret_cast<const char*>(data), size));
  LintResult full = lint(source, rules::all(), all, RuleOptions{}, /*prefilter=*/false);
  LintResult quick = lint(source, rules::all(), all, RuleOptions{}, /*prefilter=*/true);
  if (quick.skipped && !full.diagnostics.empty()) fail("the prefilter skipped a file with findings");
  if (!quick.skipped && quick.diagnostics.size() != full.diagnostics.size()) fail("prefilter changed the findings");
  if (!full.error.empty()) return 0;  // not decodable: reported, nothing else to do

  const std::size_t n = source.text().size();
  for (const Diagnostic& d : full.diagnostics) {
    if (d.start > d.end || d.end > n) fail("a finding's range is outside the text");
  }
  (void)format_text(source, full.diagnostics, /*color=*/true);
  (void)format_full(source, full.diagnostics, /*color=*/false);
  (void)format_grouped(source, full.diagnostics, /*color=*/false);
  (void)format_github(source, full.diagnostics);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const Diagnostic& d : full.diagnostics) {
    list.push_back(to_json(source, d));
    std::size_t rule_index = 0;
    for (std::size_t i = 0; i < rules::all().size(); ++i)
      if (&rules::all()[i].info == d.rule) rule_index = i;
    results.push_back(sarif_result(source, d, rule_index, uri_path_encode(source.path()), 0));
  }
  (void)list.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  (void)sarif_log(rules::all(), std::move(results), "file:///fuzz/")
      .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  for (bool unsafe : {false, true}) {
    std::vector<Edit> edits = applicable_edits(full.diagnostics, unsafe);
    std::string fixed = apply_edits(source.text(), edits);
    (void)unified_diff(source.text(), fixed, "fuzz/input.py");
  }
  return 0;
}
