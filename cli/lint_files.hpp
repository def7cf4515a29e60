// Stage 4 of a run: lint (and fix) each file, on `-j` threads, in input order.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <span>

#include "cli/configure.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "linter/discovery.hpp"
#include "linter/notebook.hpp"
#include "linter/project.hpp"

namespace ddplint::cli {

/// Lints one file, fixing it first with --fix or --diff, and formats what is
/// left with the report. Thread-safe: each call is independent.
class FileLinter {
 public:
  /// Keeps a cache (linter/cache.hpp) unless options.no_cache or the
  /// executable cannot be read to name its build.
  FileLinter(const CheckOptions& options, std::span<const Rule> rules, const Report& report);

  /// `source` linted under `settings`; `write_back`: the file on disk to
  /// replace with the fixed text (false for standard input).
  FileOutcome lint_source(SourceFile source, const FileSettings& settings, bool write_back) const;
  /// lint_source with the project facts of the file (`facts` may be null)
  /// and the cache for its findings (`cache` may be null: none; `absolute`:
  /// the file's absolute path, its slot there). `notebook` (may be null): the
  /// Jupyter notebook whose virtual source `source` is (source.notebook() set),
  /// read from `notebook_bytes`; fixes are written back into its JSON, and
  /// --diff shows the changed cells.
  FileOutcome lint_source(SourceFile source, const FileSettings& settings, bool write_back,
                          const ProjectFacts* facts, const Cache* cache = nullptr,
                          std::string_view absolute = {}, const Notebook* notebook = nullptr,
                          std::string_view notebook_bytes = {}) const;

  /// The discovered path read and linted; an unreadable one gives an error outcome.
  FileOutcome lint_path(const DiscoveredPath& entry, const FileSettings& settings) const;

  /// The project facts of the file at `path` (null with --no-project or none);
  /// `keep` holds the project they belong to.
  const ProjectFacts* facts_of(const std::string& path, std::shared_ptr<const Project>& keep) const;
  /// facts_of() for a path already absolute and normal.
  const ProjectFacts* facts_of_absolute(const std::filesystem::path& absolute,
                                        std::shared_ptr<const Project>& keep) const;

 private:
  const CheckOptions& options_;
  std::shared_ptr<CacheSet> caches_;
  mutable ProjectSet projects_;
  std::span<const Rule> rules_;
  const Report& report_;
};

/// Lints standard input once, wherever `-` is among `paths`, and emits it.
/// False when its configuration has an error (reported): the run stops.
/// `excluded` (Discovery::stdin_excluded): it is read and not linted; --fix prints it back.
bool lint_stdin(const std::vector<std::string>& paths, const CheckOptions& options, Configurations& configs,
                const FileLinter& linter, Report& report, bool excluded = false);

/// Lints every path `walk` hands out, on options.jobs threads, and emits each
/// outcome in input order as soon as it and those before it are done; at most
/// a bounded window of outcomes is held. Errors are noted in `report`.
void lint_files(PathWalk walk, const CheckOptions& options, Configurations& configs, const FileLinter& linter,
                Report& report);

}  // namespace ddplint::cli
