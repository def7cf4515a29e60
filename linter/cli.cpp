#include "linter/cli.hpp"

#include <sys/stat.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include "linter/config.hpp"
#include "linter/discovery.hpp"
#include "linter/fixes.hpp"
#include "linter/gitignore.hpp"
#include "linter/lint.hpp"
#include "linter/output.hpp"
#include "lsp/server.hpp"
#include "verify/plan.hpp"

namespace ddplint {

namespace {
// The cores this process may run on: its affinity mask (`taskset`, a
// container's CPU set), else the machine's; at least 1.
unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// The rule with `code` among `rules`, or nullptr.
const Rule* rule_with_code(std::span<const Rule> rules, std::string_view code) {
  for (const Rule& r : rules)
    if (r.info.code == code) return &r;
  return nullptr;
}

bool use_color() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

void list_rules(std::span<const Rule> rules) {
  std::size_t name_w = 4;
  for (const Rule& r : rules) name_w = std::max(name_w, r.info.name.size());
  std::printf("%-7s  %-*s  %-8s  %s\n", "code", static_cast<int>(name_w), "name", "severity", "summary");
  for (const Rule& r : rules) {
    std::printf("%-7.*s  %-*.*s  %-8.*s  %.*s\n", static_cast<int>(r.info.code.size()), r.info.code.data(),
                static_cast<int>(name_w), static_cast<int>(r.info.name.size()), r.info.name.data(),
                static_cast<int>(to_string(r.info.severity).size()), to_string(r.info.severity).data(),
                static_cast<int>(r.info.summary.size()), r.info.summary.data());
  }
}

// The ddplint-verify executable: $DDPLINT_VERIFY_BIN, else beside this
// executable, else on PATH. Empty when there is none.
std::string find_verify_binary() {
  if (const char* env = std::getenv("DDPLINT_VERIFY_BIN"); env && *env) {
    if (::access(env, X_OK) == 0) return env;
    std::fprintf(stderr, "ddplint: DDPLINT_VERIFY_BIN=%s is not an executable file\n", env);
    return "";
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path beside = exe.parent_path() / "ddplint-verify";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      std::size_t colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
      std::string candidate = (dir.empty() ? std::string(".") : dir) + "/ddplint-verify";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return "";
}

// Runs `binary plan results` and returns its exit status (-1 if it could not start).
int run_child(const std::string& binary, const std::string& plan, const std::string& results) {
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // `ddplint verify` is the driver: a launcher's rank variables in this shell must not turn it into a rank
    for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "DDPLINT_VERIFY_MEASUREMENT", "DDPLINT_VERIFY_BACKEND"})
      ::unsetenv(v);
    ::execl(binary.c_str(), binary.c_str(), plan.c_str(), results.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // bounded: ddplint-verify budgets 480 s for its measurements; past 600 s it is stopped
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      std::fprintf(stderr, "ddplint: ddplint-verify ran past 600 s and was stopped\n");
      return 128 + SIGKILL;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// `ddplint verify`: the findings, the plan, the measurements, the report.
int run_verify(std::span<const Rule> rules, const std::string& script, const verify::PlanOptions& options,
               std::optional<double> step_ms, const std::string& format, const std::string& plan_path, bool plan_only) {
  std::string err;
  auto bytes = read_file(script, err);
  if (!bytes) {
    std::fprintf(stderr, "ddplint: %s: %s\n", script.c_str(), err.c_str());
    return kExitError;
  }
  SourceFile source(script, std::move(*bytes));
  ConfigResolver resolver(rules);
  std::shared_ptr<const Config> config;
  auto found = resolver.for_file(script);
  if (auto* e = std::get_if<ConfigError>(&found)) {
    std::fprintf(stderr, "ddplint: %s\n", e->to_string().c_str());
    return kExitError;
  }
  config = std::get<std::shared_ptr<const Config>>(found);
  LintResult result = lint(source, rules, selection_for(config.get(), script, {}, {}), config ? config->options : RuleOptions{});
  if (!result.error.empty()) {
    std::fprintf(stderr, "ddplint: %s: %s\n", script.c_str(), result.error.c_str());
    return kExitError;
  }
  nlohmann::ordered_json plan = verify::make_plan(source, result.diagnostics, options);
  std::string plan_text = plan.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (!plan_path.empty()) {
    std::FILE* f = std::fopen(plan_path.c_str(), "w");
    if (!f || std::fwrite(plan_text.data(), 1, plan_text.size(), f) != plan_text.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "ddplint: %s: cannot write the plan: %s\n", plan_path.c_str(), std::strerror(errno));
      return kExitError;
    }
  }
  if (plan_only) {
    std::printf("%s\n", plan_text.c_str());
    return kExitClean;
  }
  // the static findings come first, whatever happens next
  if (format == "text") std::fputs(format_text(source, result.diagnostics, false).c_str(), stdout);
  std::fflush(stdout);
  nlohmann::json results;
  int status = kExitClean;
  if (plan["measurements"].empty()) {
    if (format == "text") std::printf("Nothing to measure: no finding of this script has a measurement.\n");
  } else if (std::string binary = find_verify_binary(); binary.empty()) {
    std::fprintf(stderr,
                 "ddplint: ddplint-verify is not built: build it with `cmake --preset verify && cmake --build --preset verify` "
                 "(needs LibTorch; see verify/README.md) or set DDPLINT_VERIFY_BIN\n");
    status = kExitVerifyUnavailable;
  } else {
    char dir[] = "/tmp/ddplint-verify-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
      std::fprintf(stderr, "ddplint: cannot create a temporary folder: %s\n", std::strerror(errno));
      return kExitError;
    }
    std::string plan_file = std::string(dir) + "/plan.json", results_file = std::string(dir) + "/results.json";
    {
      std::FILE* f = std::fopen(plan_file.c_str(), "w");
      if (f) {
        std::fwrite(plan_text.data(), 1, plan_text.size(), f);
        std::fclose(f);
      }
    }
    int rc = run_child(binary, plan_file, results_file);
    std::string rerr;
    if (auto text = read_file(results_file, rerr)) {
      try {
        results = nlohmann::json::parse(*text);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ddplint: ddplint-verify wrote unreadable results: %s\n", e.what());
      }
    }
    ::unlink(plan_file.c_str());
    ::unlink(results_file.c_str());
    ::rmdir(dir);
    if (rc == kExitNoCuda) {
      status = kExitNoCuda;
    } else if (rc != 0) {
      std::fprintf(stderr, "ddplint: ddplint-verify failed (exit status %d)\n", rc);
      status = kExitError;
    }
  }
  if (format == "json") {
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const auto& d : result.diagnostics) findings.push_back(to_json(source, d));
    nlohmann::ordered_json out = {{"findings", std::move(findings)}, {"plan", plan}, {"results", results}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } else if (!plan["measurements"].empty()) {
    std::printf("\nMeasured on this machine:\n%s", verify::format_report(source, result.diagnostics, plan, results, step_ms).c_str());
    if (status == kExitNoCuda) std::printf("no CUDA device visible: verification skipped (the CPU measurements above ran)\n");
  }
  return status;
}

// `ddplint rule`: one rule's documentation, or all rules as text, JSON or the docs/rules.md page.
int print_rules(std::span<const Rule> rules, const std::string& code, bool all, const std::string& format) {
  if (all == !code.empty()) {
    std::fprintf(stderr, "ddplint: rule: give a rule code or --all (see ddplint rule --help)\n");
    return kExitError;
  }
  std::vector<const Rule*> chosen;
  for (const Rule& r : rules)
    if (all || r.info.code == code) chosen.push_back(&r);
  if (chosen.empty()) {
    std::fprintf(stderr, "ddplint: unknown rule code '%s' (see --list-rules)\n", code.c_str());
    return kExitError;
  }
  std::string out;
  if (format == "json") {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Rule* r : chosen) {
      list.push_back({{"code", r->info.code},
                      {"name", r->info.name},
                      {"summary", r->info.summary},
                      {"severity", to_string(r->info.severity)},
                      {"fix", r->info.fixable ? "sometimes" : "none"},
                      {"deprecated_api", r->info.deprecated_api},
                      {"url", r->info.url},
                      {"explanation", r->info.docs}});
    }
    out = (all ? list : list[0]).dump(2) + "\n";
  } else if (format == "markdown") {
    out = "# ddplint rules\n\n"
          "<!-- Generated by `ddplint rule --all --format markdown > docs/rules.md`; a test checks it is current. -->\n\n"
          "| code | name | severity | fix | summary |\n|---|---|---|---|---|\n";
    for (const Rule* r : chosen) {
      std::string summary(r->info.summary);
      std::string escaped;
      for (char c : summary) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
      out += "| [" + std::string(r->info.code) + "](#" + std::string(r->info.code) + ") | " + std::string(r->info.name) +
             " | " + std::string(to_string(r->info.severity)) + " | " + (r->info.fixable ? "yes" : "") + " | " + escaped + " |\n";
    }
    for (const Rule* r : chosen) {
      out += "\n<a id=\"" + std::string(r->info.code) + "\"></a>\n\n# " + std::string(r->info.code) + " " +
             std::string(r->info.name) + "\n\n";
      // the rule's own headings sit one level below
      std::string docs(r->info.docs);
      std::string shifted;
      std::size_t i = 0;
      bool in_code = false;
      while (i < docs.size()) {
        std::size_t nl = docs.find('\n', i);
        std::string line = docs.substr(i, nl == std::string::npos ? std::string::npos : nl - i);
        if (line.rfind("```", 0) == 0) in_code = !in_code;
        if (!in_code && line.rfind("## ", 0) == 0) line = "#" + line;
        shifted += line + "\n";
        if (nl == std::string::npos) break;
        i = nl + 1;
      }
      while (shifted.size() >= 2 && shifted[shifted.size() - 1] == '\n' && shifted[shifted.size() - 2] == '\n') shifted.pop_back();
      out += shifted;
    }
  } else {
    for (const Rule* r : chosen) {
      if (!out.empty()) out += "\n";
      out += "# " + std::string(r->info.name) + " (" + std::string(r->info.code) + ")\n\n" + std::string(r->info.docs);
      if (!out.empty() && out.back() != '\n') out += '\n';
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitClean : kExitError;
}

}  // namespace

int run_cli(int argc, char** argv, std::span<const Rule> rules) {
  CLI::App app{"ddplint: finds what makes PyTorch DistributedDataParallel training slow or wrong.", "ddplint"};
  app.set_version_flag("--version", std::string("ddplint ") + DDPLINT_VERSION);
  std::vector<std::string> paths;
  std::vector<std::string> select_args, ignore_args;
  std::string format = "text";
  std::string explain;
  std::string stdin_filename;
  bool list = false, exit_zero = false, quiet = false, isolated = false;
  bool fix = false, unsafe_fixes = false, diff = false, show_fixes = false, force_exclude = false;
  std::string config_path;
  app.add_option("paths", paths, "Files or folders to lint (folders: every *.py inside); - reads standard input")
      ->type_name("PATH");
  app.add_option("--select", select_args, "Rules to enable: codes or prefixes, comma-separated (DDP4,DDP101); default ALL")
      ->type_name("CODES")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_option("--ignore", ignore_args, "Rules to disable: codes or prefixes, comma-separated")
      ->type_name("CODES")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_option("--format", format, "Output format")
      ->check(CLI::IsMember({"text", "full", "grouped", "json", "json-lines", "github", "sarif"}))
      ->capture_default_str();
  bool statistics = false;
  std::string output_file;
  app.add_flag("--statistics", statistics, "Print a count of findings per rule instead of the findings");
  app.add_option("-o,--output-file", output_file, "Write the report to this file instead of standard output")
      ->type_name("PATH");
  app.add_option("--explain", explain, "Print the documentation of a rule and exit")->type_name("CODE");
  app.add_flag("--list-rules", list, "Print a table of every rule and exit");
  app.add_option("--stdin-filename", stdin_filename, "Name shown for source read from standard input (-)")
      ->type_name("PATH");
  app.add_option("--config", config_path,
                 "Configuration file to use for every file (ddplint.toml, or pyproject.toml with [tool.ddplint]) "
                 "instead of the closest one to each file")
      ->type_name("PATH");
  app.add_flag("--isolated", isolated, "Ignore every configuration file");
  app.add_flag("--force-exclude", force_exclude,
               "Apply exclude patterns and .gitignore to paths named on the command line too (as a pre-commit hook needs)");
  std::optional<bool> respect_gitignore;  // the command line overrides `respect-gitignore`
  app.add_flag_callback("--respect-gitignore", [&] { respect_gitignore = true; },
                        "Leave out files git ignores when walking folders (the default; overrides the configuration)");
  app.add_flag_callback("--no-respect-gitignore", [&] { respect_gitignore = false; },
                        "Lint files git ignores too (overrides the configuration's respect-gitignore)");
  app.add_flag("--fix", fix, "Apply safe fixes to the files (atomically); report what is left");
  app.add_flag("--unsafe-fixes", unsafe_fixes, "With --fix or --diff: apply unsafe fixes too");
  app.add_flag("--diff", diff, "Print the fixes as a unified diff and change nothing (exit 1 if there is one)");
  app.add_flag("--show-fixes", show_fixes, "With --fix: list the fixes applied, per file and rule");
  app.add_flag("--exit-zero", exit_zero, "Exit with 0 even when findings are reported");
  app.add_flag("-q,--quiet", quiet, "Print findings only: no summary line");
  unsigned jobs = usable_cores();
  app.add_option("-j,--jobs", jobs, "Files linted in parallel (default: the number of cores it may run on); output order is the same")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  CLI::App* server = app.add_subcommand("server", "Run the language server: LSP 3.17 over standard input/output");
  CLI::App* rule_cmd = app.add_subcommand("rule", "Print a rule's documentation (or every rule's with --all)");
  CLI::App* verify_cmd = app.add_subcommand(
      "verify", "Lint a script, then measure on this machine's GPUs what its findings cost (needs ddplint-verify)");
  std::string verify_script, verify_format = "text", verify_plan_path;
  verify::PlanOptions verify_options;
  std::optional<double> verify_step_ms;
  bool verify_plan_only = false;
  verify_cmd->add_option("script", verify_script, "The training script")->required()->type_name("PATH");
  verify_cmd->add_option("--gpus", verify_options.gpus, "GPUs (ranks) for multi-GPU measurements (default: all visible)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
  verify_cmd->add_option("--params", verify_options.params,
                         "Model parameters, for the all-reduce sizes (default 25,557,032: ResNet-50)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  verify_cmd->add_option("--batch-bytes", verify_options.batch_bytes,
                         "Bytes copied to each GPU per step (default 64 MiB)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  verify_cmd->add_option("--step-ms", verify_step_ms, "Your measured step time in ms, to put costs in proportion")
      ->check(CLI::PositiveNumber)
      ->check(CLI::Range(1e-3, 1e7));  // finite: nan and inf are refused
  verify_cmd->add_option("--format", verify_format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  verify_cmd->add_option("--plan", verify_plan_path, "Also write the plan (JSON) to this file")->type_name("PATH");
  verify_cmd->add_flag("--plan-only", verify_plan_only, "Print the plan and stop (no measurement)");
  std::string rule_code, rule_format = "text";
  bool rule_all = false;
  rule_cmd->add_option("code", rule_code, "The rule's code, e.g. DDP401")->type_name("CODE");
  rule_cmd->add_flag("--all", rule_all, "Every rule");
  rule_cmd->add_option("--format", rule_format, "text (Markdown), json, or markdown (the docs/rules.md page)")
      ->check(CLI::IsMember({"text", "json", "markdown"}))
      ->capture_default_str();
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? kExitClean : kExitError;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e) == 0 ? kExitClean : kExitError;
  } catch (const CLI::ParseError& e) {
    // one line, in the same form as every other ddplint error
    std::fprintf(stderr, "ddplint: %s (see --help)\n", e.what());
    return kExitError;
  }

  if (*server) return lsp::run_server(rules, STDIN_FILENO, STDOUT_FILENO);
  if (*rule_cmd) return print_rules(rules, rule_code, rule_all, rule_format);
  if (*verify_cmd)
    return run_verify(rules, verify_script, verify_options, verify_step_ms, verify_format, verify_plan_path, verify_plan_only);
  if (list) {
    list_rules(rules);
    return kExitClean;
  }
  if (app.count("--explain") > 0) {
    auto it = std::find_if(rules.begin(), rules.end(), [&](const Rule& r) { return r.info.code == explain; });
    if (it == rules.end()) {
      std::fprintf(stderr, "ddplint: unknown rule code '%s' (see --list-rules)\n", explain.c_str());
      return kExitError;
    }
    std::printf("# %.*s (%.*s)\n\n", static_cast<int>(it->info.name.size()), it->info.name.data(),
                static_cast<int>(it->info.code.size()), it->info.code.data());
    std::fwrite(it->info.docs.data(), 1, it->info.docs.size(), stdout);
    if (!it->info.docs.empty() && it->info.docs.back() != '\n') std::fputc('\n', stdout);
    return kExitClean;
  }

  std::vector<std::string> select, ignore;
  for (const auto& s : select_args)
    for (auto& c : split_codes(s)) select.push_back(std::move(c));
  for (const auto& s : ignore_args)
    for (auto& c : split_codes(s)) ignore.push_back(std::move(c));
  if (auto bad = unknown_code(select, rules)) {
    std::fprintf(stderr, "ddplint: --select: unknown rule code or prefix '%s' (see --list-rules)\n", bad->c_str());
    return kExitError;
  }
  if (auto bad = unknown_code(ignore, rules)) {
    std::fprintf(stderr, "ddplint: --ignore: unknown rule code or prefix '%s' (see --list-rules)\n", bad->c_str());
    return kExitError;
  }
  if (isolated && !config_path.empty()) {
    std::fprintf(stderr, "ddplint: --config and --isolated cannot be used together\n");
    return kExitError;
  }
  // Configuration: --config for every file, else the closest file to each one.
  std::shared_ptr<const Config> fixed_config;
  if (!config_path.empty()) {
    auto loaded = load_config(config_path, rules);
    if (auto* err = std::get_if<ConfigError>(&loaded)) {
      std::fprintf(stderr, "ddplint: %s\n", err->to_string().c_str());
      return kExitError;
    }
    auto& config = std::get<std::optional<Config>>(loaded);
    if (!config) {
      std::error_code ec;
      std::fprintf(stderr, "ddplint: %s: %s\n", config_path.c_str(),
                   std::filesystem::exists(config_path, ec) ? "no [tool.ddplint] table" : "no such file");
      return kExitError;
    }
    fixed_config = std::make_shared<const Config>(std::move(*config));
  }
  ConfigResolver resolver(rules);
  auto settings_of = [&](const Config* config, const std::string& path) {
    return settings_for(config, path, select, ignore);
  };
  std::vector<std::string> config_errors;  // each reported once
  // The configuration of `path`; nullptr for none; false on a configuration error.
  std::optional<std::pair<std::string, std::variant<std::shared_ptr<const Config>, ConfigError>>> last_folder;
  auto config_of = [&](const std::string& path, std::shared_ptr<const Config>& out) {
    out.reset();
    if (isolated) return true;
    if (fixed_config) {
      out = fixed_config;
      return true;
    }
    // the files of one folder come together: the last folder's answer is kept.
    // Keyed by the path up to its last '/', for a last component that is a
    // plain name: such paths resolve to the same folder (ConfigResolver::for_file
    // takes the normalised path's parent), and the folder lookup (absolute path,
    // normalisation, a map of paths compared component by component) was 5% of
    // a run over many small files.
    std::size_t slash = path.rfind('/');
    std::string_view folder = std::string_view(path).substr(0, slash == std::string::npos ? 0 : slash + 1);
    std::string_view name = std::string_view(path).substr(folder.size());
    bool plain = !name.empty() && name != "." && name != "..";
    std::variant<std::shared_ptr<const Config>, ConfigError> other;
    const std::variant<std::shared_ptr<const Config>, ConfigError>* answer = &other;
    if (!plain) {
      other = resolver.for_file(path);
    } else {
      if (!last_folder || folder != last_folder->first) last_folder.emplace(std::string(folder), resolver.for_file(path));
      answer = &last_folder->second;
    }
    const auto& found = *answer;
    if (auto* err = std::get_if<ConfigError>(&found)) {
      std::string line = err->to_string();
      if (std::find(config_errors.begin(), config_errors.end(), line) == config_errors.end()) {
        config_errors.push_back(line);
        std::fprintf(stderr, "ddplint: %s\n", line.c_str());
      }
      return false;
    }
    out = std::get<std::shared_ptr<const Config>>(found);
    return true;
  };

  if (paths.empty()) paths.push_back(".");
  std::vector<std::string> file_args;
  for (const auto& p : paths) {
    // a path given twice is linted once
    if (p != "-" && std::find(file_args.begin(), file_args.end(), p) == file_args.end()) file_args.push_back(p);
  }
  // folder discovery leaves out the configuration's `exclude` patterns and what git ignores
  GitIgnore gitignore;
  std::error_code cwd_error;
  const std::filesystem::path cwd = std::filesystem::current_path(cwd_error);
  std::map<const Config*, std::vector<std::string>> patterns_of;  // exclude patterns, per configuration
  auto excluded = [&](const std::filesystem::path& path, bool is_dir) {
    std::shared_ptr<const Config> config;
    if (!config_of(path.string(), config)) return false;  // reported; the run stops before linting
    std::filesystem::path absolute = (path.is_absolute() ? path : cwd / path).lexically_normal();
    const std::filesystem::path& base = config ? config->directory : cwd;
    auto patterns = patterns_of.find(config.get());
    if (patterns == patterns_of.end()) patterns = patterns_of.emplace(config.get(), exclude_patterns(config.get())).first;
    if (matches_exclude(patterns->second, absolute, base)) return true;
    bool respect = respect_gitignore.value_or(config ? config->respect_gitignore : true);
    return respect && gitignore.ignored(absolute, is_dir);
  };
  if (force_exclude) {
    // a path named on the command line under an excluded folder (`generated/c.py`
    // with `exclude = ["generated"]`; a pre-commit hook names files) is left out
    // as the folder walk would leave it out: its folders between the
    // configuration's folder (or the working directory) and the file are checked
    std::erase_if(file_args, [&](const std::string& arg) {
      std::filesystem::path absolute =
          (std::filesystem::path(arg).is_absolute() ? std::filesystem::path(arg) : cwd / arg).lexically_normal();
      std::shared_ptr<const Config> config;
      if (!config_of(absolute.string(), config)) return false;  // reported; the run stops before linting
      const std::filesystem::path base = config ? config->directory : cwd;
      for (std::filesystem::path dir = absolute.parent_path(); dir != dir.parent_path(); dir = dir.parent_path()) {
        std::string relative = dir.lexically_relative(base).generic_string();
        if (relative.empty() || relative == "." || relative.rfind("..", 0) == 0) break;  // the project's folders only
        if (excluded(dir, true)) return true;
      }
      return false;
    });
  }
  // Every file's configuration is resolved before any is linted: a bad
  // configuration stops the run. This first walk keeps no paths: the lint walks
  // again, so memory holds the folders being walked, not every path of the run.
  {
    // the folders the lint will walk, and the configuration of each file found
    // in them (as the lint's walk resolves it); the files' own exclusion is
    // left to the lint's walk: it cannot change which configuration governs them
    auto folders_only = [&](const std::filesystem::path& path, bool is_dir) {
      if (is_dir) return excluded(path, true);
      std::shared_ptr<const Config> config;
      config_of(path.string(), config);  // errors are collected in config_errors
      return true;
    };
    PathWalk check(file_args, folders_only, force_exclude);
    while (auto entry = check.next()) {
      std::shared_ptr<const Config> config;
      if (entry->error.empty()) config_of(entry->path, config);  // files named as arguments
    }
  }
  if (!config_errors.empty()) return kExitError;
  if (std::find(paths.begin(), paths.end(), "-") != paths.end()) {
    std::shared_ptr<const Config> config;  // standard input's, from --stdin-filename's folder
    if (!config_of(stdin_filename.empty() ? "stdin.py" : stdin_filename, config)) return kExitError;
  }
  // (configurations are all read before anything is written, the report file
  // included: a bad one leaves an earlier report as it was)
  bool had_error = false;
  bool color = (format == "text" || format == "full" || format == "grouped") && output_file.empty() && use_color();
  std::size_t findings = 0, files = 0;

  // One file's output, computed on any thread and emitted in input order.
  struct Outcome {
    std::string out, err;
    nlohmann::ordered_json json = nlohmann::ordered_json::array();
    std::size_t findings = 0;
    bool linted = false, error = false;
    std::string path;
    std::map<std::string_view, std::size_t> fixed;  // rule code -> findings fixed (or fixable, with --diff)
    std::size_t fixed_total = 0;
    std::string diff;       // --diff: this file's diff
    std::string stdin_fixed;  // --fix on standard input: the fixed source
    bool stdin_source = false;
    std::map<std::string_view, std::pair<std::size_t, std::size_t>> stats;  // code -> (findings, with a safe fix)
  };
  const bool fixing = fix || diff;
  // SARIF locations are relative to the repository root (the folder holding .git above the
  // current one), or to the current folder outside a repository
  std::filesystem::path source_root = std::filesystem::current_path();
  for (std::filesystem::path p = source_root; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (std::filesystem::exists(p / ".git", ec)) {
      source_root = p;
      break;
    }
    if (p == p.parent_path()) break;
  }
  auto sarif_uri = [&](const std::string& path) -> std::pair<std::string, bool> {
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
    std::filesystem::path rel = abs.lexically_relative(source_root);
    if (!rel.empty() && *rel.begin() != "..") return {uri_path_encode(rel.generic_string()), true};
    return {"file://" + uri_path_encode(abs.generic_string()), false};
  };
  // `write_back`: the file on disk to replace with the fixed text (empty for standard input)
  auto lint_source = [&](SourceFile source, const FileSettings& settings, bool write_back) {
    const RuleSelection& selection = settings.selection;
    Outcome o;
    o.path = source.path();
    std::string original;
    LintResult result;
    SourceFile* shown = &source;
    std::optional<FixOutcome> fixed;
    if (fixing) {
      original = std::string(source.text());
      fixed.emplace(fix_source(std::move(source), rules, selection, unsafe_fixes, settings.options));
      result = std::move(fixed->remaining);
      shown = &fixed->source;
      o.fixed = fixed->fixed;
      o.fixed_total = fixed->fixed_total;
    } else {
      result = lint(source, rules, selection, settings.options);
    }
    if (!result.error.empty()) {
      o.err = "ddplint: " + o.path + ": " + result.error + "\n";
      o.error = true;
      return o;
    }
    o.linted = true;
    if (fixed && fixed->changed) {
      if (diff) {
        o.diff = unified_diff(original, fixed->source.text(), o.path);
      } else if (!write_back) {
        // standard input: the fixed source is the output (below)
      } else {
        std::string why;
        if (!write_file_atomically(o.path, original, fixed->source.text(), why)) {
          o.err = "ddplint: " + o.path + ": fixes not written: " + why + "\n";
          o.error = true;
          o.fixed.clear();
          o.fixed_total = 0;
          return o;
        }
      }
    }
    if (diff) return o;  // --diff shows the changes only
    if (fix && !write_back) {
      o.stdin_fixed = std::string(shown->text());  // printed whole, changed or not
      o.stdin_source = true;
    }
    o.findings = result.diagnostics.size();
    if (statistics) {
      for (const auto& d : result.diagnostics) {
        auto& [n, fixable] = o.stats[d.rule->code];
        ++n;
        if (d.fix && (d.fix->applicability == Fix::Applicability::Safe || unsafe_fixes)) ++fixable;
      }
    } else if (format == "json" || format == "json-lines") {
      for (const auto& d : result.diagnostics) o.json.push_back(to_json(*shown, d));
      if (format == "json-lines") {
        for (const auto& item : o.json) o.out += item.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
        o.json.clear();
      }
    } else if (format == "sarif") {
      auto [uri, relative] = sarif_uri(shown->path());
      std::map<std::pair<std::string_view, std::string>, std::size_t> seen;  // (rule, line text) -> count
      for (const auto& d : result.diagnostics) {
        const Rule* rule = rule_with_code(rules, d.rule->code);
        std::size_t index = rule ? static_cast<std::size_t>(rule - rules.data()) : 0;
        const LineIndex& li = shown->lines();
        std::uint32_t line = li.line_of(d.start);
        std::string text(shown->text().substr(li.line_start(line), li.line_end(line) - li.line_start(line)));
        auto result_json = sarif_result(*shown, d, index, uri, seen[{d.rule->code, text}]++);
        if (!relative) result_json["locations"][0]["physicalLocation"]["artifactLocation"].erase("uriBaseId");
        o.json.push_back(std::move(result_json));
      }
    } else if (format == "full") {
      o.out = format_full(*shown, result.diagnostics, color);
    } else if (format == "grouped") {
      o.out = format_grouped(*shown, result.diagnostics, color);
    } else if (format == "github") {
      o.out = format_github(*shown, result.diagnostics);
    } else {
      o.out = format_text(*shown, result.diagnostics, color);
    }
    return o;
  };
  std::FILE* report = stdout;
  if (!output_file.empty()) {
    // opening the report truncates it: it must not be one of the files to lint
    // (`--fix -o train.py train.py` destroyed the source; found by hostile testing)
    struct stat out_st {};
    if (::stat(output_file.c_str(), &out_st) == 0 && S_ISREG(out_st.st_mode)) {
      std::error_code ec;
      const std::filesystem::path out_real = std::filesystem::weakly_canonical(output_file, ec);
      for (const std::string& p : paths) {
        if (p == "-") continue;
        struct stat in_st {};
        if (::stat(p.c_str(), &in_st) != 0) continue;
        bool same = S_ISREG(in_st.st_mode) && in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino;
        if (!same && S_ISDIR(in_st.st_mode) && out_real.extension() == ".py") {
          // a .py report inside a linted folder would be found and linted there
          const std::filesystem::path dir_real = std::filesystem::weakly_canonical(p, ec);
          auto rel = out_real.lexically_relative(dir_real);
          same = !rel.empty() && *rel.begin() != "..";
        }
        if (same) {
          std::fprintf(stderr, "ddplint: %s: the report file is one of the files to lint; nothing written\n",
                       output_file.c_str());
          return kExitError;
        }
      }
    }
    report = std::fopen(output_file.c_str(), "w");
    if (report == nullptr) {
      std::fprintf(stderr, "ddplint: %s: cannot write the report: %s\n", output_file.c_str(), std::strerror(errno));
      return kExitError;
    }
  }
  std::size_t fixed_total = 0;
  std::string fixes_report;
  bool any_diff = false, summary_to_stderr = false;
  std::map<std::string_view, std::pair<std::size_t, std::size_t>> stats;
  // json and sarif documents are written as each file completes, not held:
  // memory stays flat however many findings a run has
  std::optional<StreamedJsonArray> json_stream;
  if (!diff && !statistics) {
    bool stdin_fixed = fix && std::find(paths.begin(), paths.end(), "-") != paths.end();  // stdout is the source
    if (format == "json") {
      json_stream.emplace(stdin_fixed ? stderr : report, nlohmann::ordered_json::array(), "");
    } else if (format == "sarif") {
      std::string root = source_root.generic_string();
      json_stream.emplace(report,
                          sarif_log(rules, nlohmann::ordered_json::array(),
                                    "file://" + uri_path_encode(root) + (root.back() == '/' ? "" : "/")),
                          "/runs/0/results");
    }
  }
  auto emit = [&](Outcome& o) {
    if (!o.err.empty()) std::fwrite(o.err.data(), 1, o.err.size(), stderr);
    for (const auto& [code, counts] : o.stats) {
      stats[code].first += counts.first;
      stats[code].second += counts.second;
    }
    had_error = had_error || o.error;
    if (o.linted) ++files;
    findings += o.findings;
    fixed_total += o.fixed_total;
    if (!o.diff.empty()) {
      any_diff = true;
      std::fwrite(o.diff.data(), 1, o.diff.size(), report);
    }
    if (o.stdin_source) {
      summary_to_stderr = true;
      std::fwrite(o.stdin_fixed.data(), 1, o.stdin_fixed.size(), stdout);
      // the findings left go to stderr: stdout is the fixed source
      std::fwrite(o.out.data(), 1, o.out.size(), stderr);
      o.out.clear();
    }
    if (!o.out.empty()) std::fwrite(o.out.data(), 1, o.out.size(), report);
    if (json_stream)
      for (const auto& item : o.json) json_stream->push(item);
    if (show_fixes && !o.fixed.empty()) {
      fixes_report += "  " + o.path + ":\n";
      for (const auto& [code, n] : o.fixed) {
        const Rule* rule = rule_with_code(rules, code);
        fixes_report += "    " + std::to_string(n) + " x " + std::string(code) + " (" +
                        (rule ? std::string(rule->info.name) : std::string()) + ")\n";
      }
    }
  };
  auto lint_path = [&](const DiscoveredPath& entry, const FileSettings& selection) {
    if (!entry.error.empty()) {
      Outcome o;
      o.err = "ddplint: " + entry.path + ": " + entry.error + "\n";
      o.error = true;
      return o;
    }
    std::string err;
    auto bytes = read_file(entry.path, err);
    if (!bytes) {
      Outcome o;
      o.err = "ddplint: " + entry.path + ": " + err + "\n";
      o.error = true;
      return o;
    }
    return lint_source(SourceFile(entry.path, std::move(*bytes)), selection, true);
  };

  bool stdin_done = false;
  for (const auto& p : paths) {
    if (p != "-" || stdin_done) continue;
    stdin_done = true;
    std::string name = stdin_filename.empty() ? "-" : stdin_filename;
    std::string err;
    errno = 0;
    auto data = read_stream(stdin, err);
    if (!data) {
      std::fprintf(stderr, "ddplint: %s: cannot read standard input: %s\n", name.c_str(), err.c_str());
      had_error = true;
      continue;
    }
    std::shared_ptr<const Config> config;
    std::string where = stdin_filename.empty() ? "stdin.py" : stdin_filename;
    if (!config_of(where, config)) return kExitError;
    Outcome o =
        lint_source(SourceFile(name, std::move(*data)), settings_of(config.get(), where), false);
    emit(o);
  }

  // Files are linted by `jobs` threads as the walk hands them out; outcomes are
  // emitted strictly in input order as soon as each is ready, and at most a
  // bounded window of them is held.
  // Files under one configuration without per-file-ignores share one FileSettings.
  std::map<const Config*, std::shared_ptr<const FileSettings>> shared_settings;
  // --fix/--diff: one file reached by two spellings (`a.py ./a.py`, overlapping
  // folders, symbolic links) is fixed once, two workers writing it would race
  // (this set of real paths is the one thing that grows with the run, and only then)
  std::set<std::filesystem::path> fixed_real;
  PathWalk walk(file_args, excluded, force_exclude);
  bool walk_error = false;  // set by pull(), under the workers' mutex: read after they finish
  struct Next {
    DiscoveredPath entry;
    std::shared_ptr<const FileSettings> settings;
  };
  // the next path to lint and its settings, or std::nullopt at the end (one caller at a time)
  auto pull = [&]() -> std::optional<Next> {
    while (auto entry = walk.next()) {
      if (fixing && entry->error.empty()) {
        std::error_code ec;
        std::filesystem::path real = std::filesystem::weakly_canonical(entry->path, ec);
        if (!ec && !fixed_real.insert(real).second) continue;
      }
      std::shared_ptr<const Config> config;
      if (entry->error.empty() && !config_of(entry->path, config)) {  // it changed since the first walk
        walk_error = true;
        entry->error = "not linted: its configuration has an error (above)";
      }
      std::shared_ptr<const FileSettings> settings;
      if (config && !config->per_file_ignores.empty()) {
        settings = std::make_shared<const FileSettings>(settings_of(config.get(), entry->path));
      } else {
        auto& shared = shared_settings[config.get()];
        if (!shared) shared = std::make_shared<const FileSettings>(settings_of(config.get(), entry->path));
        settings = shared;
      }
      return Next{std::move(*entry), std::move(settings)};
    }
    return std::nullopt;
  };
  const std::size_t workers = std::max<std::size_t>(1, jobs);
  if (workers <= 1) {
    while (auto item = pull()) {
      Outcome o = lint_path(item->entry, *item->settings);
      emit(o);
    }
  } else {
    // a ring of `window` slots: file i waits in slot i % window until emitted
    const std::size_t window = workers * 8;
    std::vector<std::optional<Outcome>> slots(window);
    std::mutex mutex;
    std::condition_variable room;
    std::size_t next = 0, emitted = 0;
    bool walked = false;  // every path has been handed out
    // Output in input order without a thread that waits per file: the worker
    // that completes the next file to emit emits it, and every following file
    // already done, one emitter at a time. Workers block only when the window
    // is full (a wake-up per file cost 2-core runs ~17,000 context switches).
    bool emitting = false;
    std::size_t room_waiters = 0;
    auto work = [&] {
      for (;;) {
        std::size_t i;
        std::optional<Next> item;
        {
          std::unique_lock lock(mutex);
          auto has_room = [&] { return walked || next < emitted + window; };
          if (!has_room()) {
            ++room_waiters;
            room.wait(lock, has_room);
            --room_waiters;
          }
          if (walked) return;
          try {
            item = pull();
          } catch (const std::exception& e) {  // a folder that cannot be walked ends the walk, reported
            std::fprintf(stderr, "ddplint: internal error while finding files: %s\n", e.what());
            walk_error = true;
          }
          if (!item) {
            walked = true;
            if (room_waiters > 0) room.notify_all();
            return;
          }
          i = next++;
        }
        Outcome o;
        try {
          o = lint_path(item->entry, *item->settings);
        } catch (const std::exception& e) {  // one bad file never stops the others
          o = Outcome{};
          o.err = "ddplint: " + item->entry.path + ": internal error: " + e.what() + "\n";
          o.error = true;
        }
        std::unique_lock lock(mutex);
        slots[i % slots.size()] = std::move(o);
        if (emitting || i != emitted) continue;  // emitted by whoever completes the file before it
        emitting = true;
        while (slots[emitted % slots.size()]) {
          std::optional<Outcome>& slot = slots[emitted % slots.size()];
          Outcome out = std::move(*slot);
          slot.reset();
          ++emitted;
          // one emitted file makes room for one more: one waiter is woken (waking
          // all of them per file made -j 16 on 2 cores four times slower than -j 1)
          bool wake = room_waiters > 0;
          lock.unlock();
          if (wake) room.notify_one();
          try {
            emit(out);
          } catch (const std::exception& e) {  // on a worker thread: report, never terminate
            std::fprintf(stderr, "ddplint: internal error while writing the output: %s\n", e.what());
            had_error = true;
          }
          lock.lock();
        }
        emitting = false;
      }
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  had_error = had_error || walk_error;

  std::FILE* summary = summary_to_stderr ? stderr : report;
  if (diff) {
    if (!quiet) std::fprintf(stderr, "Would fix %s.\n", plural(fixed_total, "finding").c_str());
  } else if (statistics) {
    std::vector<std::pair<std::string_view, std::pair<std::size_t, std::size_t>>> rows(stats.begin(), stats.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    std::size_t count_w = 1, name_w = 1;
    for (const auto& [code, c] : rows) {
      count_w = std::max(count_w, std::to_string(c.first).size());
      if (const Rule* r = rule_with_code(rules, code)) name_w = std::max(name_w, r->info.name.size());
    }
    for (const auto& [code, c] : rows) {
      const Rule* r = rule_with_code(rules, code);
      std::string_view name = r ? r->info.name : std::string_view();
      // [*]: every finding of the rule has a fix --fix applies; [-]: some have
      const char* mark = c.second == 0 ? "" : c.second == c.first ? "[*]" : "[-]";
      std::fprintf(summary, "%*zu  %-7.*s  %-*.*s%s%s\n", static_cast<int>(count_w), c.first, static_cast<int>(code.size()),
                   code.data(), *mark ? static_cast<int>(name_w) : 0, static_cast<int>(name.size()), name.data(),
                   *mark ? "  " : "", mark);
    }
    if (!quiet && format == "text")
      std::fprintf(summary, "Found %s in %s.\n", plural(findings, "finding").c_str(), plural(files, "file").c_str());
  } else if (json_stream) {  // json, sarif
    json_stream->finish();
  } else if (format == "json-lines" || format == "github") {
    // one record per line, no summary
  } else if (!quiet) {
    if (fix)
      std::fprintf(summary, "Found %s (%zu fixed, %zu remaining) in %s.\n", plural(findings + fixed_total, "finding").c_str(),
                   fixed_total, findings, plural(files, "file").c_str());
    else
      std::fprintf(summary, "Found %s in %s.\n", plural(findings, "finding").c_str(), plural(files, "file").c_str());
  }
  if (show_fixes && fix && !quiet) {
    if (fixed_total > 0) std::fprintf(summary, "Fixed %s:\n%s", plural(fixed_total, "finding").c_str(), fixes_report.c_str());
    else std::fprintf(summary, "No fixes applied.\n");
  }
  bool report_failed = std::fflush(report) != 0 || std::ferror(report);
  if (report != stdout) report_failed = std::fclose(report) != 0 || report_failed;
  if (report_failed || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "ddplint: cannot write the output: %s\n", std::strerror(errno ? errno : EIO));
    return kExitError;
  }
  if (had_error) return kExitError;
  if (diff) return any_diff && !exit_zero ? kExitFindings : kExitClean;
  if (findings > 0 && !exit_zero) return kExitFindings;
  return kExitClean;
}

}  // namespace ddplint
