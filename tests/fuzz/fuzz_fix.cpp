// libFuzzer harness 4: the --fix property. For source bytes that lint without
// a syntax error, fix_source (safe fixes, then safe and unsafe) must give a
// text that
//   - still parses without a syntax error (DDP001 absent, no ERROR node), and
//   - re-lints without any finding of a rule all of whose findings were fixed
//     (a code whose every finding had an applied fix does not come back),
//   - and re-fixing the result changes nothing (fixes converge).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "linter/fixes.hpp"
#include "linter/lint.hpp"
#include "rules/registry.hpp"
#include "tests/fuzz/fuzz_limits.hpp"

using namespace ddplint;

namespace {
[[noreturn]] void fail(const char* what, const std::string& before, const std::string& after) {
  std::fprintf(stderr, "fuzz_fix: property violated: %s\n--- before\n%s\n--- after\n%s\n", what, before.c_str(),
               after.c_str());
  std::abort();
}

bool has_syntax_error(const LintResult& r) {
  for (const Diagnostic& d : r.diagnostics)
    if (d.rule->code == "DDP001") return true;
  return false;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  std::string text(reinterpret_cast<const char*>(data), size);
  RuleSelection all;
  SourceFile original("fuzz/input.py", text);
  LintResult before = lint(original, rules::all(), all, RuleOptions{}, /*prefilter=*/false);
  if (!before.error.empty() || before.diagnostics.empty() || has_syntax_error(before)) return 0;
  {
    SyntaxTree tree = parse_python(original);
    if (!tree || ts_node_has_error(tree.root())) return 0;  // only error-free sources have the property
  }
  for (bool unsafe : {false, true}) {
    FixOutcome out = fix_source(SourceFile("fuzz/input.py", text), rules::all(), all, unsafe);
    if (!out.changed) continue;
    const std::string after(out.source.text());
    if (has_syntax_error(out.remaining)) fail("the fixed text has a syntax error", text, after);
    SyntaxTree tree = parse_python(out.source);
    if (!tree || ts_node_has_error(tree.root())) fail("the fixed text does not parse cleanly", text, after);
    // codes whose every finding got a fix in the first pass must be gone
    std::map<std::string_view, std::size_t> findings_of;
    for (const Diagnostic& d : before.diagnostics) findings_of[d.rule->code]++;
    for (const auto& [code, fixed] : out.fixed) {
      if (fixed < findings_of[code]) continue;
      for (const Diagnostic& d : out.remaining.diagnostics)
        if (d.rule->code == code) fail("a fully fixed code fires again", text, after);
    }
    FixOutcome again = fix_source(SourceFile("fuzz/input.py", after), rules::all(), all, unsafe);
    if (again.changed) fail("fixing the fixed text changes it again", text, after);
  }
  return 0;
}
