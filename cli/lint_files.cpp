// Stage 4 of a run: each file linted (and fixed), on worker threads, emitted in input order.
#include "cli/lint_files.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "linter/fixes.hpp"
#include "linter/lint_cache.hpp"
#include "linter/notebook.hpp"
#include "linter/suppressions.hpp"

namespace ddplint::cli {

namespace {
CacheSettings cache_settings_of(const CheckOptions& options) {
  CacheSettings c;
  if (options.no_cache) return c;
  c.build_id = executable_build_id();
  c.enabled = !c.build_id.empty();
  if (!options.cache_dir.empty()) {
    std::error_code ec;
    c.dir = std::filesystem::absolute(options.cache_dir, ec).lexically_normal();
  }
  return c;
}
}  // namespace

namespace {
// A fixed notebook's findings are shown on the notebook as written: its index
// read from `written` (the lines of the file where each row is), when it
// reads back to the same source.
void reread_notebook(SourceFile& fixed, const std::string& written) {
  std::string why;
  std::optional<Notebook> again = Notebook::parse(written, why);
  if (again && again->source() == fixed.text()) fixed.set_notebook(again->index());
}
}  // namespace

FileLinter::FileLinter(const CheckOptions& options, std::span<const Rule> rules, const Report& report)
    : options_(options),
      caches_(std::make_shared<CacheSet>(cache_settings_of(options))),
      projects_(caches_),
      rules_(rules),
      report_(report) {}

const ProjectFacts* FileLinter::facts_of(const std::string& path, std::shared_ptr<const Project>& keep) const {
  return facts_of_absolute(absolute_normal(path), keep);
}

const ProjectFacts* FileLinter::facts_of_absolute(const std::filesystem::path& absolute,
                                                  std::shared_ptr<const Project>& keep) const {
  if (options_.no_project) return nullptr;
  keep = projects_.project_of(absolute);
  return keep ? keep->facts_for(absolute) : nullptr;
}

FileOutcome FileLinter::lint_source(SourceFile source, const FileSettings& settings, bool write_back) const {
  return lint_source(std::move(source), settings, write_back, nullptr);
}

FileOutcome FileLinter::lint_source(SourceFile source, const FileSettings& settings, bool write_back,
                                    const ProjectFacts* facts, const Cache* cache, std::string_view absolute,
                                    const Notebook* notebook, std::string_view notebook_bytes) const {
  const RuleSelection& selection = settings.selection;
  FileOutcome o;
  o.path = source.path();
  std::string original;
  LintResult result;
  SourceFile* shown = &source;
  std::optional<FixOutcome> fixed;
  if (options_.fixing()) {
    original = std::string(source.text());
    fixed.emplace(fix_source(std::move(source), rules_, selection, options_.unsafe_fixes, settings.options, facts,
                             &settings.fixable));
    result = std::move(fixed->remaining);
    shown = &fixed->source;
    o.fixed = fixed->fixed;
    o.fixed_total = fixed->fixed_total;
  } else {
    result = lint_cached(cache, source, rules_, selection, settings.options, facts, absolute);
    // `unfixable` rules: no fix offered, none counted
    for (Diagnostic& d : result.diagnostics)
      if (d.fix && !settings.fixable.enabled(d.rule->code)) d.fix.reset();
  }
  if (!result.error.empty()) {
    o.err = "ddplint: " + o.path + ": " + result.error + "\n";
    o.error = true;
    return o;
  }
  o.linted = true;
  if (const NotebookIndex* cells = shown->notebook().get()) {
    // a fix that would cross cells or touch an IPython line is not offered
    for (Diagnostic& d : result.diagnostics)
      if (d.fix && !std::all_of(d.fix->edits.begin(), d.fix->edits.end(),
                                [&](const Edit& e) { return cells->editable(e); }))
        d.fix.reset();
  }
  // a notebook is written back as its JSON, with the fixed cells
  auto file_text = [&](const SourceFile& s) {
    return notebook != nullptr && s.notebook() ? notebook->write(s.text(), *s.notebook()) : std::string(s.text());
  };
  if (options_.add_noqa) {
    // --add-noqa: each finding's line gets its `# noqa: CODE`; nothing is reported
    std::vector<Edit> edits = add_noqa_edits(source, result.diagnostics);
    if (const NotebookIndex* cells = source.notebook().get())  // (a notebook: in its cells, off IPython lines)
      std::erase_if(edits, [&](const Edit& e) { return !cells->editable(e); });
    if (edits.empty()) return o;
    std::string original_text(source.text());
    std::string noqa_text = apply_edits(original_text, edits);
    std::string_view expected = original_text;
    if (notebook != nullptr && source.notebook()) {
      noqa_text = notebook->write(noqa_text, source.notebook()->after(edits));
      expected = notebook_bytes;
    }
    std::string why;
    if (!write_file_atomically(o.path, expected, noqa_text, why)) {
      o.err = "ddplint: " + o.path + ": noqa comments not written: " + why + "\n";
      o.error = true;
      return o;
    }
    o.noqa_added = edits.size();
    return o;
  }
  if (fixed && fixed->changed) {
    if (options_.diff) {
      o.diff = notebook != nullptr && fixed->source.notebook()
                   ? notebook->diff(fixed->source.text(), *fixed->source.notebook(), o.path)
                   : unified_diff(original, fixed->source.text(), o.path);
    } else if (!write_back) {
      // standard input: the fixed source is the output (below)
    } else {
      std::string why;
      std::string_view expected = notebook != nullptr ? notebook_bytes : std::string_view(original);
      std::string text = file_text(fixed->source);
      if (notebook != nullptr) reread_notebook(fixed->source, text);
      if (!write_file_atomically(o.path, expected, text, why)) {
        o.err = "ddplint: " + o.path + ": fixes not written: " + why + "\n";
        o.error = true;
        o.fixed.clear();
        o.fixed_total = 0;
        return o;
      }
    }
  }
  if (options_.diff) return o;  // --diff shows the changes only
  if (options_.fix && !write_back) {
    // printed whole, changed or not (a notebook as it was read when nothing changed)
    o.stdin_fixed = notebook != nullptr && !(fixed && fixed->changed) ? std::string(notebook_bytes) : file_text(*shown);
    if (notebook != nullptr && fixed && fixed->changed) reread_notebook(*shown, o.stdin_fixed);
    o.stdin_source = true;
  }
  report_.format(*shown, result, o);
  return o;
}

FileOutcome FileLinter::lint_path(const DiscoveredPath& entry, const FileSettings& settings) const {
  if (!entry.error.empty()) {
    FileOutcome o;
    o.err = "ddplint: " + entry.path + ": " + entry.error + "\n";
    o.error = true;
    return o;
  }
  std::string err;
  auto bytes = read_file(entry.path, err);
  if (!bytes) {
    FileOutcome o;
    o.err = "ddplint: " + entry.path + ": " + err + "\n";
    o.error = true;
    return o;
  }
  std::filesystem::path absolute = absolute_normal(entry.path);
  std::shared_ptr<const Project> project;
  const ProjectFacts* facts = nullptr;
  std::optional<Notebook> notebook;
  if (has_notebook_extension(absolute.filename().string())) {
    // a Jupyter notebook: its code cells as one Python source (no project
    // facts: the project index reads *.py files only)
    std::string why;
    notebook = Notebook::parse(*bytes, why);
    if (!notebook) {
      FileOutcome o;
      o.err = "ddplint: " + entry.path + ": " + why + "\n";
      o.error = true;
      return o;
    }
  } else if (language_of(entry.path, *bytes) == Language::Shell) {
    // a launch script: the facts of the Python scripts it starts
    if (!options_.no_project) {
      project = projects_.project_of(absolute);
      if (project) facts = project->launch_facts_for(absolute, *bytes);
    }
  } else {
    facts = facts_of_absolute(absolute, project);
  }
  // the findings go to the cache of the file's project (or, linted alone, of
  // the project it would have)
  std::shared_ptr<const Cache> alone;
  const Cache* cache = project ? project->cache() : nullptr;
  if (!project && caches_->settings().enabled) {
    alone = caches_->cache_for(project_root(absolute));
    cache = alone.get();
  }
  if (notebook) {
    SourceFile source(entry.path, notebook->source());
    source.set_notebook(notebook->index());
    return lint_source(std::move(source), settings, true, nullptr, cache, absolute.native(), &*notebook, *bytes);
  }
  return lint_source(SourceFile(entry.path, std::move(*bytes)), settings, true, facts, cache, absolute.native());
}

bool lint_stdin(const std::vector<std::string>& paths, const CheckOptions& options, Configurations& configs,
                const FileLinter& linter, Report& report, bool excluded) {
  if (std::find(paths.begin(), paths.end(), "-") == paths.end()) return true;
  const std::string& stdin_filename = options.stdin_filename;
  std::string name = stdin_filename.empty() ? "-" : stdin_filename;
  std::string err;
  errno = 0;
  auto data = read_stream(stdin, err);
  if (!data) {
    std::fprintf(stderr, "ddplint: %s: cannot read standard input: %s\n", name.c_str(), err.c_str());
    report.note_error();
    return true;
  }
  if (excluded) {
    // an editor or pipe that takes stdout as the fixed buffer gets its text back
    if (options.fix) std::fwrite(data->data(), 1, data->size(), stdout);
    return true;
  }
  std::shared_ptr<const Config> config;
  std::string where = stdin_filename.empty() ? "stdin.py" : stdin_filename;
  if (!configs.config_of(where, config)) return false;
  // --stdin-filename names where the text lives: it takes that file's project facts
  std::shared_ptr<const Project> project;
  const ProjectFacts* facts = stdin_filename.empty() ? nullptr : linter.facts_of(stdin_filename, project);
  FileOutcome o;
  // --fix on standard input prints the source: on an error, the input as it came
  std::string original = options.fix ? *data : std::string();
  if (has_notebook_extension(where)) {
    // a notebook on standard input (--stdin-filename x.ipynb); --fix prints its JSON
    std::string why;
    std::optional<Notebook> notebook = Notebook::parse(*data, why);
    if (!notebook) {
      o.err = "ddplint: " + name + ": " + why + "\n";
      o.error = true;
    } else {
      SourceFile source(name, notebook->source());
      source.set_notebook(notebook->index());
      o = linter.lint_source(std::move(source), configs.settings_of(config.get(), where), false, nullptr, nullptr, {},
                             &*notebook, *data);
    }
  } else {
    o = linter.lint_source(SourceFile(name, std::move(*data)), configs.settings_of(config.get(), where), false, facts);
  }
  if (options.fix && o.error && !o.stdin_source) {
    // an editor or pipe takes stdout as the fixed buffer: it gets its text back unchanged (found by hostile testing)
    o.stdin_fixed = std::move(original);
    o.stdin_source = true;
  }
  report.emit(o);
  return true;
}

namespace {
struct Next {
  DiscoveredPath entry;
  std::shared_ptr<const FileSettings> settings;
};

// The paths to lint, each with its settings, one at a time (one caller at a time).
class FileQueue {
 public:
  FileQueue(PathWalk walk, bool fixing, Configurations& configs)
      : walk_(std::move(walk)), fixing_(fixing), configs_(configs) {}

  // The next path to lint and its settings, or std::nullopt at the end.
  std::optional<Next> next() {
    while (auto entry = walk_.next()) {
      if (fixing_ && entry->error.empty()) {
        std::error_code ec;
        std::filesystem::path real = std::filesystem::weakly_canonical(entry->path, ec);
        if (!ec && !fixed_real_.insert(real).second) continue;
      }
      std::shared_ptr<const Config> config;
      if (entry->error.empty() && !configs_.config_of(entry->path, config)) {  // it changed since the first walk
        walk_error = true;
        entry->error = "not linted: its configuration has an error (above)";
      }
      std::shared_ptr<const FileSettings> settings = configs_.shared_settings_of(config, entry->path);
      return Next{std::move(*entry), std::move(settings)};
    }
    return std::nullopt;
  }

  bool walk_error = false;  // a configuration error or a walk that failed: the run fails

 private:
  PathWalk walk_;
  bool fixing_;
  Configurations& configs_;
  // --fix/--diff: one file reached by two spellings (`a.py ./a.py`, overlapping
  // folders, symbolic links) is fixed once, two workers writing it would race
  // (this set of real paths is the one thing that grows with the run, and only then)
  std::set<std::filesystem::path> fixed_real_;
};

// `workers` threads lint the paths as the queue hands them out; outcomes are
// emitted strictly in input order as soon as each is ready. A ring of
// `window` slots: file i waits in slot i % window until emitted.
// Output in input order without a thread that waits per file: the worker
// that completes the next file to emit emits it, and every following file
// already done, one emitter at a time. Workers block only when the window
// is full (a wake-up per file cost 2-core runs ~17,000 context switches).
class InOrderPool {
 public:
  InOrderPool(FileQueue& queue, const FileLinter& linter, Report& report, std::size_t workers)
      : queue_(queue), linter_(linter), report_(report), workers_(workers), slots_(workers * 8) {}

  void run() {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < workers_; ++t) pool.emplace_back([this] { work(); });
    for (auto& t : pool) t.join();
  }

 private:
  // Takes the next path and its index into `i`; false when every path is handed out.
  bool take(std::unique_lock<std::mutex>& lock, std::size_t& i, std::optional<Next>& item) {
    auto has_room = [&] { return walked_ || next_ < emitted_ + slots_.size(); };
    if (!has_room()) {
      ++room_waiters_;
      room_.wait(lock, has_room);
      --room_waiters_;
    }
    if (walked_) return false;
    try {
      item = queue_.next();
    } catch (const std::exception& e) {  // a folder that cannot be walked ends the walk, reported
      std::fprintf(stderr, "ddplint: internal error while finding files: %s\n", e.what());
      queue_.walk_error = true;
    }
    if (!item) {
      walked_ = true;
      if (room_waiters_ > 0) room_.notify_all();
      return false;
    }
    i = next_++;
    return true;
  }

  // Emits the next file and every following one already done (the lock is held on entry and exit).
  void emit_ready(std::unique_lock<std::mutex>& lock) {
    emitting_ = true;
    while (slots_[emitted_ % slots_.size()]) {
      std::optional<FileOutcome>& slot = slots_[emitted_ % slots_.size()];
      FileOutcome out = std::move(*slot);
      slot.reset();
      ++emitted_;
      // one emitted file makes room for one more: one waiter is woken (waking
      // all of them per file made -j 16 on 2 cores four times slower than -j 1)
      bool wake = room_waiters_ > 0;
      lock.unlock();
      if (wake) room_.notify_one();
      try {
        report_.emit(out);
      } catch (const std::exception& e) {  // on a worker thread: report, never terminate
        std::fprintf(stderr, "ddplint: internal error while writing the output: %s\n", e.what());
        report_.note_error();
      }
      lock.lock();
    }
    emitting_ = false;
  }

  void work() {
    for (;;) {
      std::size_t i;
      std::optional<Next> item;
      {
        std::unique_lock lock(mutex_);
        if (!take(lock, i, item)) return;
      }
      FileOutcome o;
      try {
        o = linter_.lint_path(item->entry, *item->settings);
      } catch (const std::exception& e) {  // one bad file never stops the others
        o = FileOutcome{};
        o.err = "ddplint: " + item->entry.path + ": internal error: " + e.what() + "\n";
        o.error = true;
      }
      std::unique_lock lock(mutex_);
      slots_[i % slots_.size()] = std::move(o);
      if (emitting_ || i != emitted_) continue;  // emitted by whoever completes the file before it
      emit_ready(lock);
    }
  }

  FileQueue& queue_;
  const FileLinter& linter_;
  Report& report_;
  const std::size_t workers_;
  std::vector<std::optional<FileOutcome>> slots_;
  std::mutex mutex_;
  std::condition_variable room_;
  std::size_t next_ = 0, emitted_ = 0;
  bool walked_ = false;  // every path has been handed out
  bool emitting_ = false;
  std::size_t room_waiters_ = 0;
};
}  // namespace

void lint_files(PathWalk walk, const CheckOptions& options, Configurations& configs, const FileLinter& linter,
                Report& report) {
  FileQueue queue(std::move(walk), options.fixing(), configs);
  const std::size_t workers = std::max<std::size_t>(1, options.jobs);
  if (workers <= 1) {
    while (auto item = queue.next()) {
      FileOutcome o = linter.lint_path(item->entry, *item->settings);
      report.emit(o);
    }
  } else {
    InOrderPool(queue, linter, report, workers).run();
  }
  if (queue.walk_error) report.note_error();
}

}  // namespace ddplint::cli
