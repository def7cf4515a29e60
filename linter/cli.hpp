// The `ddplint` command line.
#pragma once

#include <span>

#include "linter/diagnostic.hpp"

namespace ddplint {

/// Exit codes of the command line (Ruff's convention).
enum ExitCode : int {
  kExitClean = 0,     ///< no findings
  kExitFindings = 1,  ///< findings reported
  kExitError = 2,     ///< usage error, unreadable path, undecodable file or internal error
  kExitNoCuda = 3,    ///< `verify`: no CUDA device visible; GPU measurements skipped, CPU ones ran
  kExitVerifyUnavailable = 4,  ///< `verify`: ddplint-verify is not built or not found
};

/// Runs the command line with `rules` as the rule set. Writes findings to
/// stdout and errors to stderr; returns the exit code.
int run_cli(int argc, char** argv, std::span<const Rule> rules);

}  // namespace ddplint
