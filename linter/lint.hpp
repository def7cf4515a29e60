// The one entry point shared by the CLI and the language server.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/project_facts.hpp"
#include "linter/selection.hpp"
#include "linter/source.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

/// Result of linting one source.
struct LintResult {
  /// Findings sorted by start offset, then code; suppressed ones removed.
  std::vector<Diagnostic> diagnostics;
  /// Non-empty when the file could not be linted (binary, not UTF-8, too
  /// large): a one-line reason; `diagnostics` is then empty.
  std::string error;
  /// True when the prefilter found that no enabled rule could fire on the
  /// file's bytes, so it was not parsed (`diagnostics` is then empty).
  bool skipped = false;
};

/// What a Python file is for, as its path tells (the path as given, so a
/// folder run's paths are relative to where it runs):
/// - Template: a path component holds a cookiecutter/Jinja placeholder
///   (`{{cookiecutter.name}}`): text that becomes Python once rendered, never
///   run or imported as it is. No rule runs on it.
/// - Test: pytest collects it (its default `python_files`, `test_*.py` and
///   `*_test.py`, and `conftest.py`; https://docs.pytest.org/en/stable/explanation/goodpractices.html#conventions-for-python-test-discovery)
///   or it sits in a folder named `tests` or `test`: test code runs under a
///   test runner, on small inputs and often one process, not in training, so
///   only rules with RuleInfo::in_tests run on it.
/// - Code: anything else.
enum class FileRole { Code, Test, Template };
FileRole file_role(std::string_view path);

/// Lints one in-memory source. A shell or SLURM script (language_of(path,
/// text) is Shell: `*.sh`, `*.bash`, `*.slurm`, `*.sbatch`, or a sh/bash
/// shebang on a name without an extension) is parsed with tree-sitter-bash
/// into a LaunchModel and checked by the rules' check_launch, with its `#`
/// noqa comments; `prefilter` does not apply to it, and `project` is its
/// Project::launch_facts_for (the Python scripts it starts). Python:
/// checks it can be decoded, skips it when the
/// prefilter (linter/prefilter.hpp) finds that no enabled rule could fire on
/// its bytes, else parses it once, builds the semantic model once, runs each
/// enabled rule, drops findings silenced by `# noqa`, and sorts. Never throws
/// for any input bytes. `prefilter = false` parses every file (the soundness
/// checks compare both). The file is parsed in the thread's parse arena
/// (ParseArenaScope, linter/syntax.hpp); its tree does not outlive the call.
/// `project` (may be null): what the file's project says about it
/// (linter/project.hpp); a file with project facts is always parsed (its
/// findings may come from facts its own bytes do not show). A finding that is
/// per-step only through a call in another file says so: the message ends
/// with "(every step through PATH:LINE)", or with the chain of calls that
/// leads there ("(every step through main.py:57 → engine.py:23)"), and the
/// same calls are the finding's related locations.
LintResult lint(const SourceFile& source, std::span<const Rule> rules, const RuleSelection& selection,
                const RuleOptions& options = RuleOptions{}, bool prefilter = true,
                const ProjectFacts* project = nullptr);

/// The same as lint() above for a source already parsed into `tree` (the
/// language server keeps a tree per buffer and reparses incrementally).
/// `tree` must be parse_source(source, language_of(source.path(), source.text())[, previous]):
/// a parse_shell tree is linted as a launch script.
LintResult lint(const SourceFile& source, const SyntaxTree& tree, std::span<const Rule> rules,
                const RuleSelection& selection, const RuleOptions& options = RuleOptions{},
                const ProjectFacts* project = nullptr);

}  // namespace ddplint
