// Stage 1 of a run: the command line's words, parsed into plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "verify/plan.hpp"

namespace ddplint::cli {

/// Exit codes of the command line (Ruff's convention).
enum ExitCode : int {
  kExitClean = 0,     ///< no findings
  kExitFindings = 1,  ///< findings reported
  kExitError = 2,     ///< usage error, unreadable path, undecodable file or internal error
  kExitNoCuda = 3,    ///< `verify`: no CUDA device visible; GPU measurements skipped, CPU ones ran
  kExitVerifyUnavailable = 4,  ///< `verify`: ddplint-verify is not built or not found
};

/// The default command (`ddplint [PATH...]`): what to lint, how, and how to report it.
struct CheckOptions {
  std::vector<std::string> paths;                     ///< files, folders, `-` for standard input
  std::vector<std::string> select_args, extend_select_args, ignore_args;  ///< --select / --extend-select / --ignore as given (comma lists)
  std::string format = "text";                        ///< --format (or the configuration's output-format)
  bool format_given = false;                          ///< --format/--output-format was given
  std::string explain;                                ///< --explain CODE
  bool explain_given = false;                         ///< --explain was given (even empty)
  bool list_rules = false;                            ///< --list-rules
  std::string stdin_filename;                         ///< --stdin-filename: standard input is read, under this name
  std::string config_path;                            ///< --config
  std::string output_file;                            ///< -o/--output-file
  bool exit_zero = false, quiet = false, isolated = false, statistics = false;
  bool no_project = false;  ///< --no-project: each file linted alone
  bool no_cache = false;    ///< --no-cache (or DDPLINT_NO_CACHE set): nothing read from or written to a cache
  std::string cache_dir;    ///< --cache-dir (or DDPLINT_CACHE_DIR): one cache folder for every project
  bool fix = false, unsafe_fixes = false, diff = false, show_fixes = false, force_exclude = false;
  bool exit_non_zero_on_fix = false;  ///< --exit-non-zero-on-fix: exit 1 when --fix changed a file
  bool add_noqa = false;              ///< --add-noqa: write `# noqa: CODE` on each finding's line
  bool show_files = false;            ///< --show-files: list the files the run would lint
  bool show_settings = false;         ///< --show-settings: each named file's settings
  std::string min_severity;           ///< --min-severity: info, warning or error (empty: every severity)
  std::optional<bool> respect_gitignore;  ///< --[no-]respect-gitignore: overrides the configuration
  unsigned jobs = 1;                      ///< -j: files linted in parallel (default: the usable cores)

  /// --fix or --diff: files are run through the fixer.
  bool fixing() const { return fix || diff; }
};

/// `ddplint verify SCRIPT`.
struct VerifyCommandOptions {
  std::string script;
  std::string format = "text";  ///< text or json
  std::string plan_path;        ///< --plan: also write the plan here
  bool plan_only = false;       ///< --plan-only
  std::optional<double> step_ms;  ///< --step-ms: the user's measured step time, in milliseconds
  verify::PlanOptions plan;       ///< --gpus, --params, --batch-bytes
};

/// `ddplint rule [CODE] [--all]`.
struct RuleCommandOptions {
  std::string code;
  bool all = false;
  std::string format = "text";  ///< text, json or markdown
};

/// Which command the words name.
enum class Command { Check, Server, Rule, Verify };

/// Every option of every command; only the chosen command's are meaningful.
struct Options {
  Command command = Command::Check;
  CheckOptions check;
  VerifyCommandOptions verify;
  RuleCommandOptions rule;
};

/// Parses `argv` with CLI11. Returns the options, or the exit code when
/// parsing itself ends the run: --help and --version (printed, kExitClean),
/// or a usage error (one line on stderr, kExitError).
std::variant<Options, int> parse_options(int argc, char** argv);

}  // namespace ddplint::cli
