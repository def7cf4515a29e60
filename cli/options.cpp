// Stage 1 of a run: declares every option and sub-command to CLI11 and parses the words.
#include "cli/options.hpp"

#include "linter/selection.hpp"

#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <thread>

namespace ddplint::cli {

namespace {
// The cores this process may run on: its affinity mask (`taskset`, a
// container's CPU set), else the machine's; at least 1.
unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// A value among `choices`; the error names them and the closest one.
CLI::Validator one_of(std::vector<std::string> choices) {
  std::string listed;
  for (const auto& c : choices) listed += (listed.empty() ? "" : ", ") + c;
  return CLI::Validator(
      [choices, listed](std::string& value) -> std::string {
        if (std::find(choices.begin(), choices.end(), value) != choices.end()) return {};
        std::string hint = closest_word(value, choices);
        return "'" + value + "' is not one of " + listed + (hint.empty() ? "" : " (did you mean '" + hint + "'?)");
      },
      "{" + listed + "}");
}

// The option of `app` (and its sub-commands) closest to an unknown `--word`, for the error's hint.
std::string closest_option(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* a : {&app}) {
    for (const CLI::Option* opt : a->get_options())
      for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const CLI::App* sub : a->get_subcommands({}))
      for (const CLI::Option* opt : sub->get_options())
        for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
  }
  std::string name = word.substr(0, word.find('='));
  return closest_word(name, names);
}

// The default command's options: what to lint, with which rules and configuration, and how to report.
void add_check_options(CLI::App& app, CheckOptions& o) {
  app.add_option("paths", o.paths, "Files or folders to lint (folders: every *.py inside); - reads standard input")
      ->type_name("PATH");
  app.add_option("--select", o.select_args,
                 "Rules to enable: codes or prefixes, comma-separated (DDP4,DDP101); default every rule but the opt-in "
                 "ones, which only their exact code enables")
      ->type_name("CODES")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_option("--extend-select", o.extend_select_args,
                 "Rules to enable on top of the selection: codes or prefixes, comma-separated (DDP102 turns an opt-in rule on)")
      ->type_name("CODES")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_option("--ignore", o.ignore_args, "Rules to disable: codes or prefixes, comma-separated")
      ->type_name("CODES")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_option("--format,--output-format", o.format,
                 "Output format (concise: one short line per finding; text adds the whole message; full adds the source)")
      ->check(one_of({"text", "concise", "full", "grouped", "json", "json-lines", "github", "sarif"}))
      ->capture_default_str();
  app.add_option("--min-severity", o.min_severity,
                 "Report only findings of this severity or higher (error > warning > info); rules below it do not run")
      ->check(one_of({"info", "warning", "error"}));
  app.add_flag("--statistics", o.statistics, "Print a count of findings per rule instead of the findings");
  app.add_option("-o,--output-file", o.output_file, "Write the report to this file instead of standard output")
      ->type_name("PATH");
  app.add_option("--explain", o.explain, "Print the documentation of a rule (its code, or its name) and exit")->type_name("RULE");
  app.add_flag("--list-rules", o.list_rules, "Print a table of every rule and exit");
  app.add_option("--stdin-filename", o.stdin_filename,
                 "Read the source from standard input, and name it PATH (its configuration and project are PATH's)")
      ->type_name("PATH");
  app.add_option("--config", o.config_path,
                 "Configuration file to use for every file (ddplint.toml, or pyproject.toml with [tool.ddplint]) "
                 "instead of the closest one to each file")
      ->type_name("PATH");
  app.add_flag("--isolated", o.isolated, "Ignore every configuration file");
  app.add_flag("--no-project", o.no_project,
               "Lint each file alone, without the facts of its project (the other modules it imports or is imported by)");
  app.add_flag("--no-cache", o.no_cache,
               "Read and write no cache (by default each project keeps its summaries and findings in .ddplint_cache/)")
      ->envname("DDPLINT_NO_CACHE");
  app.add_option("--cache-dir", o.cache_dir, "Keep the cache of every project in this folder instead")
      ->type_name("PATH")
      ->envname("DDPLINT_CACHE_DIR");
  app.add_flag("--force-exclude", o.force_exclude,
               "Apply exclude patterns and .gitignore to paths named on the command line, and to --stdin-filename, too (as a pre-commit hook needs)");
  app.add_flag_callback("--respect-gitignore", [&o] { o.respect_gitignore = true; },
                        "Leave out files git ignores when walking folders (the default; overrides the configuration)");
  app.add_flag_callback("--no-respect-gitignore", [&o] { o.respect_gitignore = false; },
                        "Lint files git ignores too (overrides the configuration's respect-gitignore)");
  app.add_flag("--fix", o.fix, "Apply safe fixes to the files (atomically); report what is left");
  app.add_flag("--unsafe-fixes", o.unsafe_fixes, "With --fix or --diff: apply unsafe fixes too");
  app.add_flag("--diff", o.diff, "Print the fixes as a unified diff and change nothing (exit 1 if there is one)");
  app.add_flag("--show-fixes", o.show_fixes, "With --fix: list the fixes applied, per file and rule");
  app.add_flag("--exit-zero", o.exit_zero, "Exit with 0 even when findings are reported");
  app.add_flag("--exit-non-zero-on-fix", o.exit_non_zero_on_fix,
               "With --fix: exit with 1 when a file was changed, even if no finding is left");
  app.add_flag("--add-noqa", o.add_noqa,
               "Add a `# noqa: CODE` comment to each line with findings (kept codes are merged; run twice, changes nothing)");
  app.add_flag("--show-files", o.show_files, "Print the files that would be linted, one per line, and exit");
  app.add_flag("--show-settings", o.show_settings,
               "Print the settings (configuration file, rules selected, options) for each file named, and exit");
  app.add_flag("-q,--quiet", o.quiet, "Print findings only: no summary line");
  o.jobs = usable_cores();
  app.add_option("-j,--jobs", o.jobs, "Files linted in parallel (default: the number of cores it may run on); output order is the same")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
}

// `ddplint verify SCRIPT`: the measuring sub-command's options.
void add_verify_options(CLI::App& verify_cmd, VerifyCommandOptions& o) {
  verify_cmd.add_option("script", o.script, "The training script")->required()->type_name("PATH");
  verify_cmd.add_option("--gpus", o.plan.gpus, "GPUs (ranks) for multi-GPU measurements (default: all visible)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
  verify_cmd.add_option("--params", o.plan.params,
                        "Model parameters, for the all-reduce sizes (default 25,557,032: ResNet-50)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  verify_cmd.add_option("--batch-bytes", o.plan.batch_bytes,
                        "Bytes copied to each GPU per step (default 64 MiB)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  verify_cmd.add_option("--step-ms", o.step_ms, "Your measured step time in ms, to put costs in proportion")
      ->check(CLI::PositiveNumber)
      ->check(CLI::Range(1e-3, 1e7));  // finite: nan and inf are refused
  verify_cmd.add_option("--format", o.format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  verify_cmd.add_option("--plan", o.plan_path, "Also write the plan (JSON) to this file")->type_name("PATH");
  verify_cmd.add_flag("--plan-only", o.plan_only, "Print the plan and stop (no measurement)");
}

// `ddplint rule [CODE] [--all]`: the documentation sub-command's options.
void add_rule_options(CLI::App& rule_cmd, RuleCommandOptions& o) {
  rule_cmd.add_option("code", o.code, "The rule's code, e.g. DDP401")->type_name("CODE");
  rule_cmd.add_flag("--all", o.all, "Every rule");
  rule_cmd.add_option("--format", o.format, "text (Markdown), json, or markdown (the docs/rules.md page)")
      ->check(CLI::IsMember({"text", "json", "markdown"}))
      ->capture_default_str();
}
}  // namespace

std::variant<Options, int> parse_options(int argc, char** argv) {
  Options options;
  CLI::App app{"ddplint: finds what makes PyTorch DistributedDataParallel training slow or wrong.", "ddplint"};
  app.set_version_flag("--version", std::string("ddplint ") + DDPLINT_VERSION);
  add_check_options(app, options.check);
  CLI::App* server = app.add_subcommand("server", "Run the language server: LSP 3.17 over standard input/output");
  // `--stdio`: what LSP clients (vscode-languageclient's TransportKind.stdio)
  // pass to ask for the only transport there is
  server->add_flag("--stdio")->description("Use standard input/output (the default and only transport)");
  CLI::App* rule_cmd = app.add_subcommand("rule", "Print a rule's documentation (or every rule's with --all)");
  CLI::App* verify_cmd = app.add_subcommand(
      "verify", "Lint a script, then measure on this machine's GPUs what its findings cost (needs ddplint-verify)");
  add_verify_options(*verify_cmd, options.verify);
  add_rule_options(*rule_cmd, options.rule);
  app.require_subcommand(0, 1);
  // `ddplint check PATH...`: Ruff's spelling of the default command, when
  // `check` is the first word (a file named check: `ddplint ./check`)
  std::vector<std::string> words;
  for (int i = argc - 1; i >= 1; --i) words.emplace_back(argv[i]);  // CLI11 takes them reversed
  if (!words.empty() && words.back() == "check") {
    // after `check` every word is a path or an option: `ddplint check rule` lints a path named rule
    words.pop_back();
    for (CLI::App* sub : {server, rule_cmd, verify_cmd}) app.remove_subcommand(sub);
    server = rule_cmd = verify_cmd = nullptr;
  }
  try {
    app.parse(words);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? kExitClean : kExitError;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e) == 0 ? kExitClean : kExitError;
  } catch (const CLI::ParseError& e) {
    // one line, in the same form as every other ddplint error, with the closest
    // option for an unknown one (`--output-formt`: did you mean --output-format?)
    std::string hint;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
      for (auto it = words.rbegin(); it != words.rend() && hint.empty(); ++it)
        if (it->rfind("--", 0) == 0 && it->size() > 2) {
          std::string near = closest_option(app, *it);
          if (!near.empty() && near != it->substr(0, it->find('='))) hint = " (did you mean " + near + "?)";
        }
    std::fprintf(stderr, "ddplint: %s%s (see --help)\n", e.what(), hint.c_str());
    return kExitError;
  }
  options.check.explain_given = app.count("--explain") > 0;
  options.check.format_given = app.count("--format") > 0;
  if (server != nullptr && *server) options.command = Command::Server;
  else if (rule_cmd != nullptr && *rule_cmd) options.command = Command::Rule;
  else if (verify_cmd != nullptr && *verify_cmd) options.command = Command::Verify;
  return options;
}

}  // namespace ddplint::cli
