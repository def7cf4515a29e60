// What a file's semantic model takes from the rest of its project (see
// linter/project.hpp, which computes it): the functions of other modules this
// file calls, and the calls other modules make into this file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddplint {

/// One call of a chain across files: where it is.
struct CallLink {
  std::string path;        ///< the calling file, relative to the working folder when indexed
  std::uint32_t line = 0;  ///< 1-based line of the call
  bool operator==(const CallLink&) const = default;
};

/// Where another file of the project calls a function of this file.
struct ProjectCaller {
  std::string path;        ///< the calling file, relative to the working folder when indexed
  std::uint32_t line = 0;  ///< 1-based line of the call
  /// The calls, in other files, that lead to the function making this call,
  /// outermost first: `main.py:57` when main.py's loop calls the engine
  /// function that calls this file's helper (at most
  /// ProjectFacts::kMaxChain links; a cycle ends the chain).
  std::vector<CallLink> before;
  bool operator==(const ProjectCaller&) const = default;
};

/// Project facts for one file. Empty (the default) for a file linted alone.
/// Every fact is an over-approximation only where the index proved it: an
/// import the index cannot resolve adds nothing, so rules stay silent on it.
/// What a launch script's project says about a Python script the launch
/// script starts (Project::launch_facts_for): facts of the Python side that
/// launch rules need.
struct LaunchedScript {
  std::string written;  ///< the script as the launch names it (`train.py`, `tools/train.py`)
  std::string path;     ///< the file it resolves to, relative to the project root
  /// SemanticModel::is_distributed(): it sets up a process group or wraps a model in DDP.
  bool distributed = false;
  /// It calls init_process_group (or wraps a model in DDP) outside any `if`:
  /// not a script whose DDP is one mode among others (nanoGPT's `ddp =
  /// int(os.environ.get("RANK", -1)) != -1`, a DataParallel fallback).
  bool ddp_always = false;
  /// It starts its own processes: torch.multiprocessing.spawn/start_processes/
  /// Process, multiprocessing.Process, torch.distributed's elastic_launch, or
  /// a Lightning Trainer or Fabric (whose DDP strategies launch them).
  bool spawns = false;
  /// It reads LOCAL_RANK from the environment (os.environ, os.getenv), in code.
  bool reads_local_rank_env = false;
  /// It defines a `--local_rank`/`--local-rank` argparse option and reads the parsed `.local_rank`.
  bool reads_local_rank_argument = false;
  bool operator==(const LaunchedScript&) const = default;
};

/// A launch in one of the project's launch scripts that starts this Python
/// file (Project::facts_for): what the file gets from it.
struct LaunchOfScript {
  std::string path;         ///< the launch script, relative to the project root
  std::uint32_t line = 0;   ///< 1-based line of the launch
  /// `python -m torch.distributed.launch` without `--use_env`: it passes the
  /// script `--local_rank` (the launch script's DDP206 finding is there).
  bool passes_local_rank = false;
  /// torchrun or `python -m torch.distributed.run`: LOCAL_RANK in the
  /// environment, no `--local_rank` argument.
  bool torchrun = false;
  /// The launch script names this file in a command ddplint does not read
  /// (`uv run python train.py`, `bash -c "torchrun train.py"`, a command in a
  /// variable), or holds more launches of it than kMaxLaunchesOf: how it is
  /// started is not known, so the facts below say nothing and the launches'
  /// options and world size are unknown for the file.
  bool unread = false;
  /// Processes per node (LaunchModel::processes_per_node), 0 when not known.
  std::int64_t processes_per_node = 0;
  /// The job's world size (LaunchModel::world_size), 0 when not known.
  std::int64_t world_size = 0;
  /// One option the launch gives the script: `--batch_size 8`, `--amp`.
  struct Argument {
    std::string written;               ///< as written, dashes included: "--batch_size"
    std::optional<std::string> value;  ///< its value ("8"); unset for a flag or a value not known here
    bool has_value = false;            ///< a value word follows (or `=`), known or not
    bool operator==(const Argument&) const = default;
  };
  std::vector<Argument> arguments;  ///< the script's options, in order (the last of a name wins)
  /// A word after the script that the launch script does not fix (`"$@"`):
  /// any option may be there.
  bool arguments_opaque = false;
  /// Words after the script that are not options (`config.json`, a data folder).
  bool positional_arguments = false;
  /// `path:line`, as messages name the launch.
  std::string where() const { return path + ":" + std::to_string(line); }
  bool operator==(const LaunchOfScript&) const = default;
};

struct ProjectFacts {
  /// Most links kept in ProjectCaller::before.
  static constexpr std::size_t kMaxChain = 8;
  /// What a function of another module does, keyed by the canonical name this
  /// file's imports give the call (`engine.train_one_epoch`, `.misc.f`).
  enum class Trains : std::uint8_t {
    None,     ///< neither backward() nor an optimizer step
    InLoop,   ///< runs a training loop (calling it once is not a step)
    Direct,   ///< runs backward() or an optimizer step itself: each call is a step
  };
  /// Every call of a top-level function of another module of the project
  /// that the index resolved has an entry, Trains::None included.
  std::map<std::string, Trains, std::less<>> callees;
  /// This file's top-level functions called on every step of a training loop
  /// in another file that runs on CUDA (with no guard of any kind between), by name.
  std::map<std::string, ProjectCaller, std::less<>> step_entries;
  /// This file's top-level functions called inside a training loop of another
  /// file that runs on CUDA (at epoch or step level), by name.
  std::map<std::string, ProjectCaller, std::less<>> loop_entries;
  /// For this file's functions in step_entries: the parameters that every
  /// call made every step by a CUDA file passes a host value (a Python number
  /// or string, a container of them, the result of `.item()`, or the
  /// parameter's default), by function and parameter name. `.item()` on such a
  /// value is no host-device sync.
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> host_parameters;
  /// For this file's top-level functions: the parameters to which some call
  /// in another file passes a model that file wraps in DDP or FSDP, by
  /// function and parameter name (a may-fact: one such call suffices).
  struct DdpArguments {
    std::set<std::string, std::less<>> parameters;  ///< the parameters given the DDP model
    ProjectCaller caller;                           ///< one such call
    bool operator==(const DdpArguments&) const = default;
  };
  std::map<std::string, DdpArguments, std::less<>> ddp_parameters;
  /// For this file's top-level functions: the parameters to which every call
  /// from another file passes that file's parsed command line (`args` in a
  /// script that defines argparse options), where the project's launch
  /// scripts start that script and every launch is read: the options'
  /// integer values (bools as 0/1) as every launch gives them, the default
  /// where a launch gives none (SemanticModel::launched_command_line). By
  /// function, parameter and argparse destination; several callers keep the
  /// values they agree on. A script no launch script starts adds nothing: its
  /// defaults are not how it is run.
  using OptionValues = std::map<std::string, std::int64_t, std::less<>>;
  std::map<std::string, std::map<std::string, OptionValues, std::less<>>, std::less<>> command_line_parameters;
  /// This file's top-level functions that a CUDA file calls every step only
  /// for its logs: the call's result feeds only logging (or nothing), and what
  /// it passes is read after it only for logging (FileSummary::Call::
  /// logged_step_line). One such call, by function name. A collective there
  /// that reduces a parameter in place, or what the function returns, serves
  /// that call's logs.
  std::map<std::string, ProjectCaller, std::less<>> logged_calls;
  /// How the other files of the project use the results of this file's
  /// top-level functions they call, by function name.
  struct ResultUse {
    bool logging_only = true;  ///< every such call's result feeds only logging, or nothing
    ProjectCaller caller;      ///< one such call
    bool operator==(const ResultUse&) const = default;
  };
  std::map<std::string, ResultUse, std::less<>> result_uses;
  /// This file's calls of other files' functions that run a forward of what
  /// they are given (`validate(model, loader)`, whose body calls `model(x)`),
  /// by the call's canonical name: the arguments they forward as a model
  /// (`#0`, `#1` by position, and the parameters' names for keywords).
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> forwarding_calls;
  /// This file's calls of other files' top-level functions that select a GPU
  /// for the process (SemanticModel::selects_process_gpu: `torch.cuda.set_device(local_rank)`
  /// in their body or in a callee's, as `init_distributed_mode(args)` does),
  /// by the call's canonical name.
  std::set<std::string, std::less<>> device_selecting_calls;
  /// What the samples of a Dataset class of another file cost, for the
  /// classes this file calls (SemanticModel::dataset_class_cost there), by the
  /// call's canonical name (`.data.QueryDataset`, `datasets.coco.CocoDetection`).
  /// Classes whose cost is not known are left out.
  struct DatasetCost {
    /// `__getitem__` only indexes what the object holds: loading costs nothing.
    bool in_memory = false;
    /// Otherwise the per-sample work: the call as written (`Image.open`, `self.transform`)...
    std::string work;
    /// ...and where, `path:line` as messages name it.
    std::string where;
    bool operator==(const DatasetCost&) const = default;
  };
  std::map<std::string, DatasetCost, std::less<>> datasets;
  /// A file that moves work to CUDA calls into this one (transitively).
  bool cuda = false;
  /// The project was indexed and its imports followed: `imported`,
  /// `imported_whole` and `imported_names` are complete. False for a file
  /// linted alone, in a project too large to index, or in one that imports
  /// modules by computed names (`importlib.import_module(name)`).
  bool indexed = false;
  /// The file is a module of a package (an `__init__.py` beside it): part of
  /// an API others may import, whatever the project itself imports.
  bool package_module = false;
  /// Some other file of the project imports this module.
  bool imported = false;
  /// Some importer takes the module itself (`import pkg.m`, `from pkg import
  /// m`, `from m import *`) or imports it in a way the index does not follow:
  /// any of its names may be used.
  bool imported_whole = false;
  /// The names other files import from this module (`from m import f`) or
  /// call through it (`m.f(...)`, through re-exports too).
  std::set<std::string, std::less<>> imported_names;
  /// For a launch script: the project's Python scripts it starts, one entry
  /// per distinct script word (in launch order), for those that resolve to a
  /// file of the project.
  std::vector<LaunchedScript> launched;
  /// For a launch script of an indexed project: the script words (`tools/train.py`)
  /// of its launches that name no file of the project, from the launch
  /// script's folder, any folder above it up to the root, or the root: the
  /// launch starts code the project does not hold (a vendored copy's
  /// instructions, a script kept elsewhere), so what runs is not known.
  std::set<std::string, std::less<>> missing_scripts;
  /// For a Python file: the launches of the project's launch scripts that
  /// start it, in path and line order (at most kMaxLaunchesOf).
  std::vector<LaunchOfScript> launched_by;
  static constexpr std::size_t kMaxLaunchesOf = 64;

  /// The launched script the launch names `written`, or null.
  const LaunchedScript* launched_script(std::string_view written) const {
    for (const LaunchedScript& l : launched)
      if (l.written == written) return &l;
    return nullptr;
  }

  /// No fact at all.
  bool empty() const { return callees.empty() && only_withdraws(); }
  /// No fact that could add a finding (the prefilter may skip the file):
  /// callees that train nothing only withdraw findings (a loader handed to a
  /// function known to train nothing), as `indexed` does.
  bool only_withdraws() const {
    bool trains_somewhere = false;
    for (const auto& [name, trains] : callees) trains_somewhere = trains_somewhere || trains != Trains::None;
    return !trains_somewhere && step_entries.empty() && loop_entries.empty() && host_parameters.empty() &&
           ddp_parameters.empty() && command_line_parameters.empty() && logged_calls.empty() && result_uses.empty() && forwarding_calls.empty() &&
           device_selecting_calls.empty() && datasets.empty() && !cuda && !imported && !imported_whole && imported_names.empty() &&
           launched.empty() && missing_scripts.empty() && launched_by.empty();
  }
  bool operator==(const ProjectFacts&) const = default;
};

}  // namespace ddplint
