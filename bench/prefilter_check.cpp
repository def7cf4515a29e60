// prefilter_check: lints every *.py under the given folders twice, with and
// without the prefilter, and fails (exit 1) on any difference in findings, and
// on any finding (without the prefilter) of a rule whose declared `needs` do
// not occur in the file: that rule's needs are wrong even where another rule
// kept the file from being skipped. Prints how many files and bytes the
// prefilter skipped. One thread.
//
// Usage: ddplint_prefilter_check FOLDER...
#include <cstdio>
#include <string>
#include <vector>

#include "bench/corpus.hpp"
#include "linter/lint.hpp"
#include "linter/syntax.hpp"
#include "linter/prefilter.hpp"
#include "rules/registry.hpp"

using namespace ddplint;

int main(int argc, char** argv) {
  std::vector<std::string> roots(argv + 1, argv + argc);
  if (roots.empty()) {
    std::fprintf(stderr, "usage: ddplint_prefilter_check FOLDER...\n");
    return 2;
  }
  RuleSelection all;
  std::size_t files = 0, skipped = 0, bytes = 0, skipped_bytes = 0, findings = 0, differences = 0, unmet = 0;
  // each rule's own needs, alone
  std::vector<Prefilter> own;
  for (const Rule& r : rules::all()) own.emplace_back(std::span<const Rule>(&r, 1), all);
  bench::for_each_source(roots, [&](SourceFile&& f) {
    LintResult with = lint(f, rules::all(), all, RuleOptions{}, true);
    LintResult without = lint(f, rules::all(), all, RuleOptions{}, false);
    ++files;
    bytes += f.text().size();
    if (with.skipped) ++skipped, skipped_bytes += f.text().size();
    findings += without.diagnostics.size();
    // a launch script is never prefiltered: the rules' needs describe Python text
    bool python = language_of(f.path(), f.text()) == Language::Python;
    for (const Diagnostic& d : without.diagnostics) {
      if (!python) break;
      std::size_t r = 0;
      while (&rules::all()[r].info != d.rule) ++r;
      if (d.rule->needs != "*" && !own[r].may_fire(f.text())) {
        ++unmet;
        std::printf("NEEDS WRONG: %s: %.*s fired at byte %u without its needs \"%.*s\"\n", f.path().c_str(),
                    static_cast<int>(d.rule->code.size()), d.rule->code.data(), d.start,
                    static_cast<int>(d.rule->needs.size()), d.rule->needs.data());
      }
    }
    bool same = with.diagnostics.size() == without.diagnostics.size() && with.error == without.error;
    for (std::size_t i = 0; same && i < with.diagnostics.size(); ++i) {
      const Diagnostic &a = with.diagnostics[i], &b = without.diagnostics[i];
      same = a.rule == b.rule && a.start == b.start && a.end == b.end && a.message == b.message;
    }
    if (!same) {
      ++differences;
      std::printf("DIFFERENT: %s: %zu findings with the prefilter, %zu without\n", f.path().c_str(),
                  with.diagnostics.size(), without.diagnostics.size());
      for (const Diagnostic& d : without.diagnostics) {
        bool kept = false;
        for (const Diagnostic& e : with.diagnostics) kept = kept || (e.rule == d.rule && e.start == d.start);
        if (!kept) std::printf("  lost %.*s at byte %u: %s\n", static_cast<int>(d.rule->code.size()), d.rule->code.data(), d.start, d.message.c_str());
      }
    }
  });
  std::printf("%zu files (%.1f MB), %zu findings without the prefilter; prefilter skipped %zu files (%.1f MB, %.0f%% of bytes); %zu files differ; %zu findings without their rule's needs\n",
              files, bytes / 1048576.0, findings, skipped, skipped_bytes / 1048576.0,
              bytes ? 100.0 * skipped_bytes / bytes : 0.0, differences, unmet);
  return differences == 0 && unmet == 0 ? 0 : 1;
}
