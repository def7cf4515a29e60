// `ddplint [PATH...]`, the default command: a run in its stages, in order.
#include <algorithm>
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/configure.hpp"
#include "cli/discover.hpp"
#include "cli/lint_files.hpp"
#include "cli/report.hpp"

namespace ddplint::cli {

namespace {
// --show-files (Ruff's): the files the run would lint, one a line, in its order.
int show_files(Discovery& discovery) {
  int rc = kExitClean;
  if (std::find(discovery.paths().begin(), discovery.paths().end(), "-") != discovery.paths().end() &&
      !discovery.stdin_excluded())
    std::printf("-\n");
  PathWalk walk = discovery.walk();
  while (auto entry = walk.next()) {
    if (!entry->error.empty()) {
      std::fprintf(stderr, "ddplint: %s: %s\n", entry->path.c_str(), entry->error.c_str());
      rc = kExitError;
      continue;
    }
    std::printf("%s\n", display_path(entry->path).c_str());
  }
  return std::fflush(stdout) == 0 ? rc : kExitError;
}

// --show-settings (Ruff's): for each file the run would lint, the
// configuration file that governs it and what it selects.
int show_settings(Discovery& discovery, Configurations& configs, std::span<const Rule> rules) {
  int rc = kExitClean;
  PathWalk walk = discovery.walk();
  bool first = true;
  while (auto entry = walk.next()) {
    if (!entry->error.empty()) {
      std::fprintf(stderr, "ddplint: %s: %s\n", entry->path.c_str(), entry->error.c_str());
      rc = kExitError;
      continue;
    }
    std::shared_ptr<const Config> config;
    if (!configs.config_of(entry->path, config)) return kExitError;
    FileSettings settings = configs.settings_of(config.get(), entry->path);
    // rules: after the configuration, the command line and the file's per-file-ignores;
    // fixable: those of them with fixes that --fix applies (`fixable` minus `unfixable`)
    std::string enabled, fixable;
    for (const Rule& r : rules) {
      if (!settings.selection.enabled(r.info)) continue;
      enabled += (enabled.empty() ? "" : ", ") + std::string(r.info.code);
      if (r.info.fixable && settings.fixable.enabled(r.info.code)) fixable += (fixable.empty() ? "" : ", ") + std::string(r.info.code);
    }
    std::printf("%sResolved settings for: %s\n", first ? "" : "\n", display_path(entry->path).c_str());
    std::printf("Settings path: %s\n", config ? display_path(config->file.string()).c_str() : "(none: the defaults)");
    if (config)
      for (const auto& base : config->extends) std::printf("Extends: %s\n", display_path(base.string()).c_str());
    std::printf("rules: %s\n", enabled.empty() ? "(none)" : enabled.c_str());
    std::printf("fixable: %s\n", fixable.empty() ? "(none)" : fixable.c_str());
    std::printf("tiny-batch-threshold: %lld\n", static_cast<long long>(settings.options.tiny_batch_threshold));
    if (settings.options.line_length)
      std::printf("line-length: %u (from %s)\n", static_cast<unsigned>(settings.options.line_length),
                  display_path(settings.line_length_origin).c_str());
    else
      std::printf("line-length: (none: fixed lines are not wrapped)\n");
    // the torch releases supported: target-torch, and what the project declares
    if (config && config->target_torch)
      std::printf("target-torch: %s (from %s)\n", config->target_torch->lowest->to_string().c_str(),
                  display_path(config->target_torch->origin).c_str());
    else
      std::printf("target-torch: (none: the project's declaration)\n");
    if (settings.declared_torch.declared())
      std::printf("declared torch: %s (%s)\n", settings.declared_torch.written.c_str(),
                  settings.declared_torch.origin.c_str());
    else
      std::printf("declared torch: (none: the current release is assumed)\n");
    if (config) std::printf("respect-gitignore: %s\n", config->respect_gitignore ? "true" : "false");
    first = false;
  }
  return std::fflush(stdout) == 0 ? rc : kExitError;
}
}  // namespace

int run_check(const CheckOptions& given, std::span<const Rule> rules) {
  CheckOptions options = given;  // the configuration may give the output format
  // configuration: --select/--ignore and --config checked before anything is read
  Configurations configs(options, rules);
  if (!configs.resolve_arguments()) return kExitError;
  if (!options.format_given) {
    // `output-format` of the configuration of the working folder (or --config), as Ruff reads its root settings
    std::shared_ptr<const Config> root;
    if (configs.config_of("-", root) && root && root->output_format) options.format = *root->output_format;
  }
  // discovery: every file's configuration is resolved before any is linted
  Discovery discovery(options, configs);
  if (!discovery.check_configurations()) return kExitError;
  if (options.show_files) return show_files(discovery);
  if (options.show_settings) return show_settings(discovery, configs, rules);
  // (configurations are all read before anything is written, the report file
  // included: a bad one leaves an earlier report as it was)
  Report report(options, rules);
  if (!report.open(discovery.paths())) return kExitError;
  // lint (and fix): standard input first, then the files in the walk's order
  FileLinter linter(options, rules, report);
  if (!lint_stdin(discovery.paths(), options, configs, linter, report, discovery.stdin_excluded())) return kExitError;
  lint_files(discovery.walk(), options, configs, linter, report);
  // report: the summary, and the exit code
  return report.finish();
}

}  // namespace ddplint::cli
