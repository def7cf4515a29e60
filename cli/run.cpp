// The program's top: parse the options, then hand them to the command they name.
#include <cstdio>

#include "cli/commands.hpp"

namespace ddplint::cli {

int run(int argc, char** argv, std::span<const Rule> rules) {
  auto parsed = parse_options(argc, argv);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const Options& options = std::get<Options>(parsed);
  switch (options.command) {
    case Command::Server: return run_server_command(rules);
    case Command::Rule: return run_rule_command(options.rule, rules);
    case Command::Verify: return run_verify_command(options.verify, rules);
    case Command::Check: break;
  }
  if (options.check.list_rules) return list_rules(rules);
  if (options.check.explain_given) return explain_rule(options.check.explain, rules);
  return run_check(options.check, rules);
}

}  // namespace ddplint::cli
