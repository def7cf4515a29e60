#include "linter/lint.hpp"

#include <algorithm>

#include "linter/launch_model.hpp"
#include "linter/prefilter.hpp"
#include "linter/semantic_model.hpp"
#include "linter/suppressions.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

namespace {
// What a rule set and selection mean for each file: the prefilter and which
// rules run, worked out once per thread for each distinct set of enabled rules
// (files of one run share one or a few) instead of once per file.
struct RunPlan {
  enum Run : std::uint8_t { kOff, kOn, kIfCatalogMayFire };  // kIfCatalogMayFire: needs = "*" (DDP001)
  Prefilter prefilter;
  std::vector<Run> run;  // per rule, in order
  RuleSelection selection;  // for the least severity reported (RuleSelection::reports)
};

// Drops the findings below the least severity reported: a rule that runs
// (its own severity is high enough) may report some findings lower.
void drop_below_severity(std::vector<Diagnostic>& found, const RuleSelection& selection) {
  std::erase_if(found, [&](const Diagnostic& d) { return !selection.reports(d.severity()); });
}

const RunPlan& plan_for(std::span<const Rule> rules, const RuleSelection& selection) {
  struct Entry {
    std::vector<const char*> needs;  // identity of the rule set: each rule's needs literal
    RuleSelection selection;
    RunPlan plan;
  };
  thread_local std::vector<Entry> cache;
  auto same_rules = [&](const Entry& e) {
    if (e.needs.size() != rules.size()) return false;
    for (std::size_t i = 0; i < rules.size(); ++i)
      if (e.needs[i] != rules[i].info.needs.data()) return false;
    return true;
  };
  // selections compared by value: a few short lists, cheaper than asking every rule's state per file
  for (const Entry& e : cache) {
    if (e.selection == selection && same_rules(e)) return e.plan;
  }
  if (cache.size() >= 16) cache.erase(cache.begin());
  std::vector<const char*> needs;
  std::vector<RunPlan::Run> run;
  for (const Rule& r : rules) {
    needs.push_back(r.info.needs.data());
    if (!selection.enabled(r.info)) run.push_back(RunPlan::kOff);
    else run.push_back(r.info.needs == "*" ? RunPlan::kIfCatalogMayFire : RunPlan::kOn);
  }
  cache.push_back(Entry{std::move(needs), selection, RunPlan{Prefilter(rules, selection), std::move(run), selection}});
  return cache.back().plan;
}

// True when an enabled rule checks the noqa directives (check_noqa).
bool checks_noqa(std::span<const Rule> rules, const std::vector<RunPlan::Run>& run) {
  for (std::size_t i = 0; i < rules.size(); ++i)
    if (run[i] != RunPlan::kOff && rules[i].check_noqa != nullptr) return true;
  return false;
}

// Runs the enabled check_noqa rules on the file's directives, after every
// other rule's findings went through them; their findings go to `out`.
void check_noqa(Suppressions& noqa, std::span<const Rule> rules, const std::vector<RunPlan::Run>& run,
                const std::vector<bool>& ran, const SourceFile& source, const RuleOptions& options,
                std::vector<Diagnostic>& out) {
  if (noqa.uses.empty()) return;
  NoqaReport report{noqa.uses, rules, ran, source.text()};
  std::vector<Diagnostic> found;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (run[i] == RunPlan::kOff || rules[i].check_noqa == nullptr) continue;
    RuleContext ctx(rules[i].info, found, options);
    rules[i].check_noqa(report, ctx);
  }
  // their findings are silenced as others are (`# noqa: DDP401, DDP002` keeps a stale code on purpose)
  for (Diagnostic& d : found)
    if (!noqa.suppresses(d, source.lines().line_of(d.start))) out.push_back(std::move(d));
}

// Findings in the order of the output: by start offset, then code.
void sort_findings(std::vector<Diagnostic>& found) {
  std::stable_sort(found.begin(), found.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.rule->code < b.rule->code;
  });
}

}  // namespace

FileRole file_role(std::string_view path) {
  bool test = false;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    bool last = end == path.size();
    if (part.find("{{") != std::string_view::npos && part.find("}}") != std::string_view::npos)
      return FileRole::Template;
    if (!last && (part == "tests" || part == "test")) test = true;
    if (last && part.ends_with(".py")) {
      std::string_view stem = part.substr(0, part.size() - 3);
      if (stem.starts_with("test_") || stem.ends_with("_test") || stem == "conftest") test = true;
    }
    start = end + 1;
  }
  return test ? FileRole::Test : FileRole::Code;
}

namespace {

// `plan` is plan_for(rules, selection), which stays valid meanwhile: nothing
// here adds to the cache. `scan` asks plan.prefilter about the source's bytes:
// DDP001 (`*`) runs only where the catalog could fire. Every other enabled
// rule runs: skipping those whose own `needs` are absent cost more in searches
// than it saved (bench/README.md, "Seventh round").
LintResult lint_decoded(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                        const RunPlan& plan, Prefilter::Scan& scan, const RuleOptions& options,
                        const ProjectFacts* project) {
  LintResult result;
  if (!tree) {
    result.error = too_deeply_indented(source.text())
                       ? "too many levels of indentation (CPython refuses more than 99, tree-sitter-python fails past "
                         "about 500), so the file was not linted"
                       : "tree-sitter could not parse the file";
    return result;
  }
  const FileRole role = file_role(source.path());
  if (role == FileRole::Template) return result;
  SemanticModel model(source, tree, project);
  std::vector<Diagnostic> found;
  const std::vector<RunPlan::Run>& run = plan.run;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (run[i] == RunPlan::kOff) continue;
    if (role == FileRole::Test && !rules[i].info.in_tests) continue;
    if (run[i] == RunPlan::kIfCatalogMayFire && !scan.rule_may_fire(i)) continue;
    if (rules[i].check == nullptr) continue;  // a launch-script rule
    RuleContext ctx(rules[i].info, found, options);
    rules[i].check(model, ctx);
  }
  drop_below_severity(found, plan.selection);
  // code no run of the project reaches makes no cost: no claim there (the
  // file's own checks, DDP0xx, stand)
  std::erase_if(found, [&](const Diagnostic& d) {
    return !std::string_view(d.rule->code).starts_with("DDP0") && model.unreached(d.start);
  });
  const bool noqa_rules = checks_noqa(rules, run);
  if (found.empty() && !noqa_rules) return result;  // no `# noqa` to read, no line index to build
  Suppressions noqa = Suppressions::collect(model);
  const LineIndex& lines = source.lines();
  for (Diagnostic& d : found) {
    std::uint32_t line = lines.line_of(d.start);
    if (noqa.suppresses(d, line)) continue;
    // a finding on a line that ends inside a multi-line string or with `\`: its noqa goes where that ends
    if (!noqa.uses.empty()) {
      std::uint32_t at = comment_line(source, tree, line);
      if (at != line && noqa.suppresses(d, at)) continue;
    }
    if (project != nullptr && !project->step_entries.empty()) {
      // per step only because another file calls this function every step: say where
      TSNode at = ts_node_descendant_for_byte_range(ts_tree_root_node(tree.get()), d.start, d.end);
      if (const ProjectCaller* caller = model.step_caller_elsewhere(at)) {
        std::string chain;
        for (const CallLink& link : caller->before) {
          chain += link.path + ":" + std::to_string(link.line) + " \u2192 ";
          d.related.push_back({link.path, link.line, "calls the training loop that leads to the next call"});
        }
        chain += caller->path + ":" + std::to_string(caller->line);
        d.related.push_back({caller->path, caller->line, "calls this every training step"});
        d.message += " (every step through " + chain + ")";
      }
    }
    result.diagnostics.push_back(std::move(d));
  }
  if (noqa_rules) {
    std::vector<bool> ran(rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i)
      ran[i] = run[i] != RunPlan::kOff && rules[i].check != nullptr &&
               !(run[i] == RunPlan::kIfCatalogMayFire && !scan.rule_may_fire(i));
    check_noqa(noqa, rules, run, ran, source, options, result.diagnostics);
  }
  // a file that does not parse gets no fixes (an edit placed by a recovered tree
  // may land anywhere), whether or not DDP001 is selected: none is offered, so
  // none is marked [*], counted, diffed or applied (found by hostile testing)
  if (model.first_syntax_error())
    for (Diagnostic& d : result.diagnostics) d.fix.reset();
  sort_findings(result.diagnostics);
  return result;
}

// A shell or SLURM script: the launch model and the rules' check_launch. No
// prefilter (the rules' `needs` describe Python text; launch scripts are few
// and small), and no syntax-error finding: tree-sitter-bash does not know
// every shell's syntax, and a false "syntax error" would be worse than none.
LintResult lint_launch(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                       const RunPlan& plan, const RuleOptions& options, const ProjectFacts* project) {
  LintResult result;
  if (!tree) {
    result.error = "tree-sitter could not parse the file";
    return result;
  }
  LaunchModel model(source, tree, project);
  std::vector<Diagnostic> found;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (plan.run[i] == RunPlan::kOff || rules[i].check_launch == nullptr) continue;
    RuleContext ctx(rules[i].info, found, options);
    rules[i].check_launch(model, ctx);
  }
  drop_below_severity(found, plan.selection);
  const bool noqa_rules = checks_noqa(rules, plan.run);
  if (found.empty() && !noqa_rules) return result;
  Suppressions noqa = Suppressions::collect(model);
  const LineIndex& lines = source.lines();
  for (Diagnostic& d : found) {
    // a command continued over several lines (`\`) takes its comment on its
    // last line: a `# noqa` there covers the findings on the lines before
    std::uint32_t last_line = lines.line_of(d.start);
    for (TSNode n = ts_node_descendant_for_byte_range(tree.root(), d.start, d.end); !ts_node_is_null(n);
         n = ts_node_parent(n)) {
      std::string_view type = ts_node_type(n);
      if (type == "command" || type == "declaration_command") {
        last_line = lines.line_of(ts_node_end_byte(n) > 0 ? ts_node_end_byte(n) - 1 : 0);
        break;
      }
    }
    if (noqa.suppresses(d, lines.line_of(d.start)) || noqa.suppresses(d, last_line)) continue;
    result.diagnostics.push_back(std::move(d));
  }
  if (noqa_rules) {
    std::vector<bool> ran(rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i) ran[i] = plan.run[i] != RunPlan::kOff && rules[i].check_launch != nullptr;
    check_noqa(noqa, rules, plan.run, ran, source, options, result.diagnostics);
  }
  sort_findings(result.diagnostics);
  return result;
}

}  // namespace

LintResult lint(const SourceFile& source, std::span<const Rule> rules, const RuleSelection& selection,
                const RuleOptions& options, bool prefilter, const ProjectFacts* project) {
  std::string detail;
  if (source.check_decodable(&detail) != DecodeError::None) return LintResult{{}, detail};
  const RunPlan& plan = plan_for(rules, selection);
  if (language_of(source.path(), source.text()) == Language::Shell)
    return lint_launch(source, parse_shell(source), rules, plan, options, project);
  Prefilter::Scan scan(plan.prefilter, source.text());
  // facts that say nothing but who imports the file (ProjectFacts::indexed)
  // let the prefilter skip it as well: they only withdraw findings
  const bool no_facts = project == nullptr || project->only_withdraws();
  if (prefilter && no_facts && !scan.may_fire()) {
    LintResult skipped;
    skipped.skipped = true;
    return skipped;
  }
  ParseArenaScope arena;  // (outlives the tree: declared before it)
  SyntaxTree tree = parse_python(source);
  return lint_decoded(source, tree, rules, plan, scan, options, project);
}

LintResult lint(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                const RuleSelection& selection, const RuleOptions& options, const ProjectFacts* project) {
  std::string detail;
  if (source.check_decodable(&detail) != DecodeError::None) return LintResult{{}, detail};
  const RunPlan& plan = plan_for(rules, selection);
  if (language_of(tree) == Language::Shell) return lint_launch(source, tree, rules, plan, options, project);
  Prefilter::Scan scan(plan.prefilter, source.text());
  return lint_decoded(source, tree, rules, plan, scan, options, project);
}

}  // namespace ddplint
