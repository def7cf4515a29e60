// `ddplint verify SCRIPT`: lint the script, plan the measurements of its
// findings (verify/plan.hpp), run them with ddplint-verify, and report.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "linter/config.hpp"
#include "linter/lint.hpp"
#include "linter/output.hpp"
#include "verify/plan.hpp"

namespace ddplint::cli {

namespace {
// The ddplint-verify executable: $DDPLINT_VERIFY_BIN, else beside this
// executable (an install puts both in one bin/), else in the sibling build
// tree's verify/ folder (build/release/ddplint finds build/verify/ddplint-verify,
// which the verify preset builds), else on PATH. Empty when there is none;
// `looked` then says where it was looked for, for the error message.
std::string find_verify_binary(std::vector<std::string>& looked) {
  if (const char* env = std::getenv("DDPLINT_VERIFY_BIN"); env && *env) {
    if (::access(env, X_OK) == 0) return env;
    std::fprintf(stderr, "ddplint: DDPLINT_VERIFY_BIN=%s is not an executable file\n", env);
    looked.push_back(std::string("DDPLINT_VERIFY_BIN=") + env);
    return "";
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);  // this executable, links resolved
  if (!ec) {
    for (const std::filesystem::path& candidate :
         {exe.parent_path() / "ddplint-verify", exe.parent_path().parent_path() / "verify" / "ddplint-verify"}) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
      looked.push_back(candidate.string());
    }
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
  looked.push_back("PATH");
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

// Lints `script` under its configuration into `result`; false (reported) when it cannot be.
bool lint_script(const std::string& script, std::span<const Rule> rules, std::optional<SourceFile>& source,
                 LintResult& result) {
  std::string err;
  auto bytes = read_file(script, err);
  if (!bytes) {
    std::fprintf(stderr, "ddplint: %s: %s\n", script.c_str(), err.c_str());
    return false;
  }
  source.emplace(script, std::move(*bytes));
  ConfigResolver resolver(rules);
  std::shared_ptr<const Config> config;
  auto found = resolver.for_file(script);
  if (auto* e = std::get_if<ConfigError>(&found)) {
    std::fprintf(stderr, "ddplint: %s\n", e->to_string().c_str());
    return false;
  }
  config = std::get<std::shared_ptr<const Config>>(found);
  // the opt-in rules too: whether their advice is worth a maintainer's time on
  // this script is exactly what a measurement answers
  std::vector<std::string> opt_in;
  for (const Rule& r : rules)
    if (r.info.opt_in) opt_in.emplace_back(r.info.code);
  result = lint(*source, rules, selection_for(config.get(), script, {}, {}, opt_in),
                config ? config->options : ddplint::RuleOptions{});
  if (!result.error.empty()) {
    std::fprintf(stderr, "ddplint: %s: %s\n", script.c_str(), result.error.c_str());
    return false;
  }
  return true;
}

// Runs the plan with ddplint-verify, the results it wrote into `results`: the
// command's exit status, or std::nullopt when the run stops at once (reported).
std::optional<int> measure(const std::string& plan_text, nlohmann::json& results) {
  std::vector<std::string> looked;
  std::string binary = find_verify_binary(looked);
  if (binary.empty()) {
    std::string where;
    for (const std::string& w : looked) where += (where.empty() ? "" : ", ") + display_path(w);
    std::fprintf(stderr,
                 "ddplint: ddplint-verify is not built: build it with `cmake --preset verify && cmake --build --preset verify` "
                 "(needs LibTorch; see verify/README.md) or set DDPLINT_VERIFY_BIN (looked in: %s)\n",
                 where.c_str());
    return kExitVerifyUnavailable;
  }
  char dir[] = "/tmp/ddplint-verify-XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    std::fprintf(stderr, "ddplint: cannot create a temporary folder: %s\n", std::strerror(errno));
    return std::nullopt;
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
  if (rc == kExitNoCuda) return kExitNoCuda;
  if (rc != 0) {
    std::fprintf(stderr, "ddplint: ddplint-verify failed (exit status %d)\n", rc);
    return kExitError;
  }
  return kExitClean;
}
}  // namespace

int run_verify_command(const VerifyCommandOptions& options, std::span<const Rule> rules) {
  const std::string& script = options.script;
  std::optional<SourceFile> source;
  LintResult result;
  if (!lint_script(script, rules, source, result)) return kExitError;
  nlohmann::ordered_json plan = verify::make_plan(*source, result.diagnostics, options.plan);
  std::string plan_text = plan.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (!options.plan_path.empty()) {
    std::FILE* f = std::fopen(options.plan_path.c_str(), "w");
    if (!f || std::fwrite(plan_text.data(), 1, plan_text.size(), f) != plan_text.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "ddplint: %s: cannot write the plan: %s\n", options.plan_path.c_str(), std::strerror(errno));
      return kExitError;
    }
  }
  if (options.plan_only) {
    std::printf("%s\n", plan_text.c_str());
    return kExitClean;
  }
  // the static findings come first, whatever happens next
  if (options.format == "text") std::fputs(format_text(*source, result.diagnostics, false).c_str(), stdout);
  std::fflush(stdout);
  nlohmann::json results;
  int status = kExitClean;
  if (plan["measurements"].empty()) {
    if (options.format == "text") std::printf("Nothing to measure: no finding of this script has a measurement.\n");
  } else {
    auto measured = measure(plan_text, results);
    if (!measured) return kExitError;
    status = *measured;
  }
  if (options.format == "json") {
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const auto& d : result.diagnostics) findings.push_back(to_json(*source, d));
    nlohmann::ordered_json out = {{"findings", std::move(findings)}, {"plan", plan}, {"results", results}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } else if (!plan["measurements"].empty()) {
    std::printf("\nMeasured on this machine:\n%s",
                verify::format_report(*source, result.diagnostics, plan, results, options.step_ms).c_str());
    if (status == kExitNoCuda) std::printf("no CUDA device visible: verification skipped (the CPU measurements above ran)\n");
  }
  return status;
}

}  // namespace ddplint::cli
