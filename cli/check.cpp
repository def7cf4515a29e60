// `ddplint [PATH...]`, the default command: a run in its stages, in order.
#include "cli/commands.hpp"
#include "cli/configure.hpp"
#include "cli/discover.hpp"
#include "cli/lint_files.hpp"
#include "cli/report.hpp"

namespace ddplint::cli {

int run_check(const CheckOptions& options, std::span<const Rule> rules) {
  // configuration: --select/--ignore and --config checked before anything is read
  Configurations configs(options, rules);
  if (!configs.resolve_arguments()) return kExitError;
  // discovery: every file's configuration is resolved before any is linted
  Discovery discovery(options, configs);
  if (!discovery.check_configurations()) return kExitError;
  // (configurations are all read before anything is written, the report file
  // included: a bad one leaves an earlier report as it was)
  Report report(options, rules);
  if (!report.open(discovery.paths())) return kExitError;
  // lint (and fix): standard input first, then the files in the walk's order
  FileLinter linter(options, rules, report);
  if (!lint_stdin(discovery.paths(), options, configs, linter, report)) return kExitError;
  lint_files(discovery.walk(), options, configs, linter, report);
  // report: the summary, and the exit code
  return report.finish();
}

}  // namespace ddplint::cli
