// One project, not one file: the index of a project's Python modules, the
// summary of each module, and the facts that flow between them (which
// functions of other modules train, which of a file's functions another file
// calls every training step, which files run on CUDA).
//
// A file's findings are a function of its project, never of the command line:
// `ddplint engine.py` and `ddplint .` give engine.py the same facts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "linter/cache.hpp"
#include "linter/project_facts.hpp"
#include "linter/recent.hpp"
#include "linter/semantic_model.hpp"

namespace ddplint {

/// What the project index needs to know of one module, from its model.
struct FileSummary {
  /// A top-level function and what it does (from the model, with the facts it was built with).
  struct Function {
    std::string name;
    ProjectFacts::Trains trains = ProjectFacts::Trains::None;
    std::vector<std::string> parameters;  ///< named parameters in order (`self`, `*args`, `**kwargs` left out)
    std::vector<bool> host_default;       ///< per parameter: it has no default, or a host value as its default
    /// Per parameter: the function calls it as a model (`p(x)`, `p.forward(x)`),
    /// anywhere in its body: given a DDP model, it runs that model's forward.
    std::vector<bool> forwarded;
    /// The function selects a GPU for the process, itself or through a callee
    /// (SemanticModel::selects_process_gpu on a call of its body).
    bool selects_device = false;
  };
  /// Calls whose callee has a canonical name (through the file's imports):
  /// one entry per name, at its first call; the flags ORed over its calls.
  struct Call {
    std::string canonical;    ///< `engine.train_one_epoch`, `.misc.f`, `torch.save`
    std::uint32_t line = 0;   ///< 1-based line of the first call that sets `every_step` (else of the first call)
    bool every_step = false;  ///< some call runs on every training step, under no guard of any kind
    bool in_training_loop = false;  ///< some call is inside a training loop (step or epoch level)
    /// Over the calls made every step: for each argument passed (`#0`, `#1`
    /// by position, else its keyword), true when every such call passes a
    /// host value there (SemanticModel::certainly_host_value).
    std::map<std::string, bool, std::less<>> host_arguments;
    bool unpacked = false;  ///< some call made every step passes `*args` or `**kwargs`
    /// Every call's result feeds only logging or nothing (SemanticModel::result_use);
    /// computed only for calls the summary was asked about (`project_call`).
    bool result_logged_only = true;
    /// The same over the calls made every step (SemanticModel::runs_every_step, no guard).
    bool step_result_logged_only = true;
    /// The first call made every step (of a function the summary was asked
    /// about) whose result feeds only logging or nothing and whose arguments
    /// are, after it, read only for logging or not at all (names, a list of
    /// names `[loss, acc]`, `x.detach()` of a name, temporaries): a helper that
    /// reduces them in place or returns them reduces them for the logs.
    /// 1-based line, 0: none; and the top-level function making it.
    std::uint32_t logged_step_line = 0;
    std::string logged_step_function;
    /// Arguments (`#0`, ..., or the keyword) where some call passes a name a
    /// DDP or FSDP wrap is assigned to in this file (`model` after
    /// `model = DistributedDataParallel(model, ...)`): the callee may get the DDP model there.
    std::set<std::string, std::less<>> ddp_arguments;
    std::uint32_t ddp_line = 0;  ///< 1-based line of the first call that passes one
    /// Arguments (`#0`, ..., or the keyword) where every call passes the
    /// file's parsed command line (SemanticModel::is_command_line).
    std::set<std::string, std::less<>> command_line_arguments;
    /// The top-level function of this file that makes the call at `line`
    /// (empty: module level, a method or a nested function).
    std::string function;
  };
  std::vector<Function> functions;
  std::vector<Call> calls;
  /// A Dataset class defined at the top level whose samples' cost is known
  /// (SemanticModel::dataset_class_cost).
  struct Dataset {
    std::string name;
    bool in_memory = false;
    std::string work;         ///< the per-sample call as written (`Image.open`), when not in memory
    std::uint32_t line = 0;   ///< 1-based line of that call
  };
  std::vector<Dataset> datasets;
  /// The file's imports (local name -> target), for names other modules import from it;
  /// `from MODULE import *` as ("*", MODULE).
  std::vector<std::pair<std::string, std::string>> imports;
  bool cuda = false;  ///< SemanticModel::uses_cuda(), project facts included
  /// When some call passes the file's parsed command line: its options'
  /// integer values as the project's launches give them
  /// (SemanticModel::launched_command_line; empty where no launch starts the file).
  ProjectFacts::OptionValues launched_options;
};

/// The summary of `model`'s file. `project_call` (may be empty) says which
/// canonical names may be functions of the project: only their results' uses
/// are followed (value flow costs more than the rest of a summary).
FileSummary summarize(const SemanticModel& model, const std::function<bool(std::string_view)>& project_call = {});

/// True when folder `dir` marks a project's root: it holds `pyproject.toml` or
/// `.git`, or `setup.py` or `setup.cfg` where it is no package (a package's
/// `setup.py`, beside its `__init__.py`, is one of its modules).
bool is_project_marker_folder(const std::filesystem::path& dir);

/// The project of `file`: the nearest folder at or above the file's folder
/// holding `pyproject.toml` or `.git`, or `setup.py` or `setup.cfg` where it
/// is no package (no `__init__.py`: a package's `setup.py` is a module), else the
/// file's own folder, or the folder above its top package when that folder
/// is a package (has `__init__.py`). Absolute and lexically normal.
std::filesystem::path project_root(const std::filesystem::path& file);

/// `path` made absolute (against the working folder) and lexically normal;
/// a path that already is comes back as it is, without the component-wise
/// rebuild of std::filesystem::path::lexically_normal (a run asks this of
/// every file it lints).
std::filesystem::path absolute_normal(const std::filesystem::path& path);

/// Text that stands for a file's bytes on disk (an editor's unsaved buffer),
/// by absolute normal path; std::nullopt: read the file.
using SourceOverlay = std::function<std::optional<std::string>(const std::filesystem::path&)>;

/// The index of one project: every `*.py` file under its root (leaving out
/// kDefaultExclude folders, hidden folders, what git ignores and folders that
/// are projects of their own), and
/// the facts each file takes from the others.
class Project {
 public:
  /// Projects with more Python files than this are not indexed (their files
  /// get no project facts, as if linted alone).
  static constexpr std::size_t kMaxFiles = 20000;
  /// Rounds of the fixed point (facts flow one call edge per round; a chain
  /// main.py -> engine.py -> utils.py needs two). Past this, facts found so far stand.
  static constexpr int kMaxRounds = 8;
  /// Launch scripts read for the launches of the project's Python files (the first found).
  static constexpr std::size_t kMaxLaunchScripts = 2000;

  /// Indexes the project at `root` (absolute, normal): lists its files and
  /// finds the import edges between them (a scan of import lines, no parse).
  /// Files that cannot be read or parsed add nothing. `cache` (may be null)
  /// keeps the summaries between runs. `overlay` (may be empty) gives the
  /// text of files whose buffers differ from the disk: it is read instead, for
  /// the import edges and the summaries (files not on disk are not added).
  explicit Project(std::filesystem::path root, std::shared_ptr<const Cache> cache = nullptr,
                   SourceOverlay overlay = {});
  ~Project();
  Project(const Project&) = delete;
  Project& operator=(const Project&) = delete;

  /// Facts for `file` (absolute, normal), or nullptr when it has none. A
  /// Python file started by launches of the project's launch scripts gets
  /// them (ProjectFacts::launched_by; the launch scripts are read once, on
  /// the first question). The
  /// first question about a file summarises (parses) the files joined to it by
  /// import edges, either way, and solves their facts; files of the project
  /// that no edge joins to it are never parsed for it. Thread-safe; the facts
  /// live as long as the Project.
  const ProjectFacts* facts_for(const std::filesystem::path& file) const;
  /// Facts for the launch script `file` (absolute, normal) whose text is
  /// `text`: the project's Python scripts its launches start
  /// (ProjectFacts::launched). A script word resolves against the launch
  /// script's folder, then the project root; one that names no file of the
  /// project, a module (`-m`), or a path outside the root is left out. Each
  /// script is parsed once per Project (its facts do not depend on other
  /// files). nullptr when no launch starts a script of the project.
  /// Thread-safe; the facts live as long as the Project (or until the same
  /// file is asked about with another text).
  const ProjectFacts* launch_facts_for(const std::filesystem::path& file, std::string_view text) const;
  const std::filesystem::path& root() const { return root_; }
  /// The project's cache (null when the run keeps none); also for findings.
  const Cache* cache() const;
  /// Python files found under the root (0 when it had more than kMaxFiles).
  std::size_t file_count() const { return file_count_; }
  /// Files summarised so far (those of the components asked about).
  std::size_t summarised_count() const {
    std::lock_guard lock(mutex_);
    return summarised_;
  }
  /// Bytes of the summaries of the files summarised so far (each file's
  /// summary as the cache stores it, at the fixed point): what a file's summary
  /// costs while its component is solved (they are dropped after; the facts stay).
  std::size_t summary_bytes() const {
    std::lock_guard lock(mutex_);
    return summary_bytes_;
  }
  /// Most rounds a component's fixed point took so far.
  int rounds() const {
    std::lock_guard lock(mutex_);
    return rounds_;
  }

 private:
  struct State;
  void solve(std::size_t component) const;  // with mutex_ held
  std::filesystem::path root_;
  std::unique_ptr<State> state_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, ProjectFacts, std::less<>> facts_;  // absolute path -> non-empty facts
  // launch scripts: absolute path -> (text, facts); Python scripts: absolute path -> facts
  mutable std::map<std::string, std::pair<std::string, std::unique_ptr<ProjectFacts>>, std::less<>> launch_facts_;
  mutable std::map<std::string, std::optional<LaunchedScript>, std::less<>> launched_;
  // the project's launch scripts, read on the first facts_for: Python file (absolute) -> its launches
  void read_launches() const;  // with mutex_ held
  std::optional<std::filesystem::path> resolve_script(const std::filesystem::path& launch_script,
                                                      std::string_view written) const;
  mutable bool launches_read_ = false;
  mutable std::map<std::string, std::vector<LaunchOfScript>, std::less<>> launches_of_;
  std::size_t file_count_ = 0;
  mutable std::size_t summarised_ = 0;
  mutable std::size_t summary_bytes_ = 0;
  mutable int rounds_ = 0;
  /// Some file imports a module by a computed name (`importlib.import_module`,
  /// `__import__`): who imports which file is not known (ProjectFacts::indexed).
  bool dynamic_imports_ = false;
};

/// The projects of a run, each indexed once, shared by the threads that lint
/// its files. Holds the last kKept projects (a run walks files folder by
/// folder, so a project's files come together; 16 covers a monorepo's
/// packages nested in a parent project): memory does not grow with the
/// number of projects.
class ProjectSet {
 public:
  static constexpr std::size_t kKept = 16;
  /// Projects that keep their summaries in the caches of `caches` (may be
  /// null: none) and read files through `overlay` (may be empty; see Project).
  explicit ProjectSet(std::shared_ptr<CacheSet> caches = nullptr, SourceOverlay overlay = {})
      : caches_(std::move(caches)), overlay_(std::move(overlay)) {}
  /// The project of `file` (indexing it on first use; thread-safe).
  std::shared_ptr<const Project> project_of(const std::filesystem::path& file);

 private:
  struct Slot {
    std::once_flag once;
    std::filesystem::path root;
    std::shared_ptr<const Project> project;
  };
  static constexpr std::size_t kKnownFolders = 4096;
  std::shared_ptr<CacheSet> caches_;
  SourceOverlay overlay_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::filesystem::path> roots_;  // folder -> project_root() of its files
  RecentlyUsed<std::string, std::shared_ptr<Slot>> entries_{kKept};  // by the root's native string
};

}  // namespace ddplint
