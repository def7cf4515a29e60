// Stage 5 of a run: each file's findings in the chosen format, the report
// file, the summary, and the exit code.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/options.hpp"
#include "linter/lint.hpp"
#include "linter/output.hpp"

namespace ddplint::cli {

/// One file's output, computed on any thread and emitted in input order.
struct FileOutcome {
  std::string out, err;  ///< the report's text for the file; what goes to stderr
  nlohmann::ordered_json json = nlohmann::ordered_json::array();  ///< json and sarif: the file's records
  std::size_t findings = 0;
  std::size_t noqa_added = 0;  ///< --add-noqa: lines given a noqa comment
  std::size_t fixable = 0, hidden_fixable = 0;  ///< findings --fix fixes; findings only --unsafe-fixes would fix
  bool linted = false, error = false;
  std::string path;
  std::map<std::string_view, std::size_t> fixed;  ///< rule code -> findings fixed (or fixable, with --diff)
  std::size_t fixed_total = 0;
  std::string diff;         ///< --diff: this file's diff
  std::string stdin_fixed;  ///< --fix on standard input: the fixed source
  bool stdin_source = false;
  std::map<std::string_view, std::pair<std::size_t, std::size_t>> stats;  ///< code -> (findings, with a safe fix)
};

/// Where and how a run reports: standard output or the -o file, in the
/// --format chosen, with --statistics or the summary line at the end.
class Report {
 public:
  Report(const CheckOptions& options, std::span<const Rule> rules);

  /// Opens the -o file, refusing one that is among `paths` (the files to
  /// lint), and starts the JSON or SARIF document. False when the file cannot
  /// be written (reported): the run stops.
  bool open(const std::vector<std::string>& paths);

  /// Puts the findings of `shown` (the file as linted, fixed or not) into
  /// `o` in the report's format. Thread-safe.
  void format(const SourceFile& shown, const LintResult& result, FileOutcome& o) const;

  /// Writes one file's outcome. One caller at a time, in input order.
  void emit(FileOutcome& o);

  /// Marks the run as failed (exit 2) for an error reported elsewhere.
  void note_error() { had_error_ = true; }

  /// Ends the report (document close, statistics or summary), flushes it,
  /// and returns the run's exit code.
  int finish();

 private:
  // SARIF: the file's URI relative to the repository root when it is below it, and whether it is.
  std::pair<std::string, bool> sarif_uri(const std::string& path) const;
  void print_statistics(std::FILE* summary) const;
  // Ruff's "[*] N fixable with the `--fix` option" line, when any finding has a fix.
  void print_fixable(std::FILE* summary) const;

  const CheckOptions& options_;
  std::span<const Rule> rules_;
  bool color_ = false;
  // SARIF locations are relative to the repository root (the folder holding .git above the
  // current one), or to the current folder outside a repository
  std::filesystem::path source_root_;
  std::FILE* report_ = stdout;
  // json and sarif documents are written as each file completes, not held:
  // memory stays flat however many findings a run has
  std::optional<StreamedJsonArray> json_stream_;
  bool had_error_ = false;
  std::size_t findings_ = 0, files_ = 0, fixed_total_ = 0, fixable_ = 0, hidden_fixable_ = 0, noqa_added_ = 0;
  std::string fixes_report_;
  bool any_diff_ = false, summary_to_stderr_ = false;
  std::map<std::string_view, std::pair<std::size_t, std::size_t>> stats_;
};

}  // namespace ddplint::cli
