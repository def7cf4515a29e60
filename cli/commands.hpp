// The commands of `ddplint`, one file each: each takes its parsed options and
// the rule set, prints its output, and returns the exit code (cli/options.hpp).
#pragma once

#include <span>
#include <string_view>

#include "cli/options.hpp"
#include "linter/diagnostic.hpp"

namespace ddplint::cli {

/// Runs the command line with `rules` as the rule set: parses the options,
/// then runs the command they name. Writes findings to stdout (or the report
/// file) and errors to stderr; returns the exit code.
int run(int argc, char** argv, std::span<const Rule> rules);

/// `ddplint [PATH...]` (cli/check.cpp): lints, fixes and reports.
int run_check(const CheckOptions& options, std::span<const Rule> rules);

/// `ddplint server` (cli/server_command.cpp): the language server on stdin/stdout.
int run_server_command(std::span<const Rule> rules);

/// `ddplint rule` (cli/rule_command.cpp): one rule's documentation, or every
/// rule's as text, JSON or the docs/rules.md page.
int run_rule_command(const RuleCommandOptions& options, std::span<const Rule> rules);

/// `--list-rules` (cli/rule_command.cpp): a table of every rule.
int list_rules(std::span<const Rule> rules);

/// `--explain CODE` (cli/rule_command.cpp): the rule's documentation, or an
/// error naming the unknown code.
int explain_rule(std::string_view code, std::span<const Rule> rules);

/// `ddplint verify SCRIPT` (cli/verify_command.cpp): the findings, the
/// measurement plan, the measurements by ddplint-verify, and the report.
int run_verify_command(const VerifyCommandOptions& options, std::span<const Rule> rules);

}  // namespace ddplint::cli
