// The launch model: what a shell script or SLURM batch file says about how
// distributed training starts (launchers, their options, the environment they
// run in, the job's allocation). The shell counterpart of SemanticModel: built
// once per file from a tree-sitter-bash tree, then asked by the rules'
// check_launch(). Nothing is run or expanded beyond what the file itself
// writes: a word whose value depends on the caller (`$1`, `$(nproc)`, an
// unset variable) is Unknown, and rules stay silent on Unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "linter/project_facts.hpp"
#include "linter/source.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

/// One word of a command (or the value of an assignment) as the shell passes it.
struct ShellWord {
  std::uint32_t start = 0;  ///< byte range of the word in the file
  std::uint32_t end = 0;
  /// The value after quote removal and expansion of variables the file
  /// assigns once, unconditionally, before the word (`GPUS=4 ... $GPUS`).
  /// Unset when the value is not known here.
  std::optional<std::string> value;
};

/// An environment variable setting and how far it reaches.
struct EnvSetting {
  enum class Scope : std::uint8_t {
    Exported,  ///< `export X=1` (or `declare -x`): this shell and every command it starts afterwards
    Command,   ///< `X=1 cmd` or `env X=1 cmd`: that one command only
    Shell,     ///< `X=1` alone: a shell variable, seen by commands only once exported
  };
  std::string name;
  ShellWord value;          ///< the assigned value (an empty word for `export X=` or `export X` of an unset name)
  Scope scope = Scope::Shell;
  std::uint32_t start = 0;  ///< the assignment's bytes (`NCCL_DEBUG=INFO`)
  std::uint32_t end = 0;
  /// Inside an `if`, `case`, loop or function, or after `&&`/`||`: a deliberate,
  /// guarded setting that may not run (Accelerate disables P2P only on GPUs
  /// that lack it), or one that runs only on some paths.
  bool conditional = false;
};

/// An option of a launcher, of a wrapper such as srun, or of the trained
/// script: `--nproc_per_node=4`, `--nproc-per-node 4`, `--standalone`.
struct LaunchOption {
  std::string name;  ///< without leading dashes, `_` read as `-`: "nproc-per-node"
  std::string written;  ///< as written, dashes included: "--nproc_per_node"
  std::optional<ShellWord> value;  ///< none for a flag
  std::uint32_t start = 0;  ///< from the option's first byte to its value's last
  std::uint32_t end = 0;
};

/// How a command starts Python.
enum class Launcher : std::uint8_t {
  Python,                  ///< `python train.py`: one process
  Torchrun,                ///< `torchrun ...`
  TorchDistributedRun,     ///< `python -m torch.distributed.run ...` (torchrun's module)
  TorchDistributedLaunch,  ///< `python -m torch.distributed.launch ...`: deprecated
  Accelerate,              ///< `accelerate launch ...`
  DeepSpeed,               ///< `deepspeed ...`
};

/// One command that starts training (or any Python script), after the
/// wrappers in front of it (`srun`, `mpirun`, `nohup`, `env X=1`, `exec`, `time`).
struct Launch {
  Launcher launcher = Launcher::Python;
  std::uint32_t start = 0;  ///< the whole command
  std::uint32_t end = 0;
  /// The words that name the launcher: `torchrun`, `python -m torch.distributed.launch`,
  /// `accelerate launch`.
  std::uint32_t launcher_start = 0;
  std::uint32_t launcher_end = 0;
  std::vector<std::string> wrappers;          ///< "srun", "mpirun", ... outermost first
  std::vector<LaunchOption> wrapper_options;  ///< the options of those wrappers
  std::vector<LaunchOption> options;          ///< the launcher's own options (torchrun's, accelerate's)
  /// The script started (`train.py`), or the module after `-m`; none when not known.
  std::optional<ShellWord> script;
  bool module = false;  ///< `script` names a module (`-m pkg.train`)
  std::vector<LaunchOption> script_options;  ///< the options given to the script (`--batch_size 8`)
  std::vector<EnvSetting> env;               ///< `X=1 cmd` / `env X=1 cmd` settings of this command
  bool conditional = false;                  ///< as EnvSetting::conditional
  bool in_function = false;                  ///< in a function body: the environment is the caller's
  bool background = false;                   ///< run in the background (`cmd &`): others may run beside it
  /// A word among the launcher's options that the file does not fix and may
  /// expand to options (`$RDZV_ARGS`, `"${ARGS[@]}"`): options not found may be there.
  bool opaque_options = false;
  /// A word after the script that the file does not fix (`"$@"`, `$EXTRA`):
  /// it may expand to any of the script's options.
  bool opaque_script_options = false;
  /// A word after the script that is not an option nor an option's value.
  bool positional_script_arguments = false;

  /// The launcher option with this (normalised) name, or null.
  const LaunchOption* option(std::string_view name) const;
  /// The wrapper option with any of these (normalised) names, or null.
  const LaunchOption* wrapper_option(std::initializer_list<std::string_view> names) const;
  /// True when a launcher (not plain Python) starts the processes.
  bool is_distributed_launcher() const { return launcher != Launcher::Python; }
  /// True for torchrun and its modules (`torch.distributed.run`, `.launch`).
  bool is_torch_launcher() const {
    return launcher == Launcher::Torchrun || launcher == Launcher::TorchDistributedRun ||
           launcher == Launcher::TorchDistributedLaunch;
  }
};

/// One `#SBATCH` directive of the header (sbatch stops reading them at the
/// first command).
struct SbatchDirective {
  LaunchOption option;  ///< `--gpus-per-node=4` -> name "gpus-per-node", value "4"
};

/// The launch model of one shell file.
class LaunchModel {
 public:
  /// Builds the model from `tree`, a parse_shell() tree of `source`.
  /// `project` (may be null): what the file's project says about the Python
  /// scripts it starts (Project::launch_facts_for).
  LaunchModel(const SourceFile& source, const SyntaxTree& tree, const ProjectFacts* project = nullptr);

  /// What the project says about the Python script `launch` starts, or null
  /// when it is not a file of the project (or the file is linted alone).
  const LaunchedScript* launched_script(const Launch& launch) const {
    if (project_ == nullptr || !launch.script || !launch.script->value || launch.module) return nullptr;
    return project_->launched_script(*launch.script->value);
  }

  /// True when `launch` starts a `.py` script, written as a literal path, that
  /// is no file of the file's project (ProjectFacts::missing_scripts): what
  /// it runs is not known. False when linted alone.
  bool starts_missing_script(const Launch& launch) const {
    if (project_ == nullptr || !launch.script || !launch.script->value || launch.module) return false;
    return project_->missing_scripts.contains(*launch.script->value);
  }

  const SourceFile& source() const { return source_; }
  /// The file's bytes [start, end).
  std::string_view text(std::uint32_t start, std::uint32_t end) const;

  /// Every environment setting, in file order.
  const std::vector<EnvSetting>& env_settings() const { return env_; }
  /// Every command that starts Python, in file order.
  const std::vector<Launch>& launches() const { return launches_; }
  /// The `#SBATCH` directives, in order.
  const std::vector<SbatchDirective>& sbatch() const { return sbatch_; }
  /// The last `#SBATCH` directive with one of these names (`-N` is "N"), or null.
  const SbatchDirective* sbatch_option(std::initializer_list<std::string_view> names) const;

  /// The value `name` has in the environment of the command at byte `at`, as
  /// this file sets it: a `Command` setting of that command, else the last
  /// unconditional `Exported` setting before it (a later unconditional
  /// `export X` of a shell variable counts). Unset when the file does not set
  /// it before there, sets it only conditionally, or sets it to an unknown
  /// value (`unset`, `read`, a `source` or `eval` after the setting), and for a
  /// launch in a function (its caller's environment decides).
  std::optional<std::string> env_value(const Launch& launch, std::string_view name) const;

  /// GPUs one node of the job offers the launch, and what says so:
  /// CUDA_VISIBLE_DEVICES in its environment (the count of its entries up to
  /// the first invalid one, as CUDA reads it: `-1` is none), else
  /// the batch header (`--gpus-per-node=[type:]N[,...]`, `--gres=gpu[:type]:N[,...]`
  /// (their sum), or `--gpus=N` on one node). Unset when not known.
  struct Gpus {
    std::int64_t count = 0;
    std::string because;  ///< e.g. "CUDA_VISIBLE_DEVICES=0,1", "#SBATCH --gpus-per-node=4"
  };
  std::optional<Gpus> gpus_per_node(const Launch& launch) const;

  /// Tasks srun starts on each node for `launch` (each runs the command): its
  /// `--ntasks-per-node` (or the `#SBATCH` header's), 1 by default and 1
  /// without srun; unset when a total task count (`-n`/`--ntasks`) or mpirun
  /// leaves the per-node count unknown. `option` (may be null) receives the
  /// option that says so, or null.
  std::optional<std::int64_t> tasks_per_node(const Launch& launch, const LaunchOption** option = nullptr) const;

  /// Processes the launch starts on each node, each a rank of the job:
  /// torchrun's `--nproc-per-node` (its modules' too; 1 when absent, the
  /// launcher's default; `gpu`/`auto` count gpus_per_node) times the tasks srun
  /// starts per node; plain Python starts 1, or srun's tasks when that is 1.
  /// Unset when not known: accelerate and deepspeed (a config file may set
  /// the count), mpirun, options hidden in `$ARGS`, several srun tasks of
  /// plain Python (srun may bind each to its own GPU).
  std::optional<std::int64_t> processes_per_node(const Launch& launch) const;

  /// The job's world size, nodes times processes per node, for a torch
  /// launcher that no wrapper repeats (no srun, mpirun or xargs) with a fixed
  /// `--nnodes` (1 when absent). Unset otherwise (plain Python sets no world size).
  std::optional<std::int64_t> world_size(const Launch& launch) const;

  /// Words that name a Python file outside the launches read here: in a
  /// command that is no launch the model reads (`uv run python train.py`,
  /// `bash -c "torchrun train.py"`), as an argument of a launch
  /// (`python launcher.py train.py`), or in a variable's value (`CMD="torchrun
  /// train.py"`). `value` holds the `.py` word (a word of a string's value
  /// split at spaces). A launch of that file may hide there.
  const std::vector<ShellWord>& unread_scripts() const { return unread_scripts_; }

  /// Byte ranges of the file's comments, for `# noqa`.
  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& comments() const { return comments_; }
  /// Where the header block ends: comments before the first command (the
  /// shebang and `#SBATCH` lines included); a `# ddplint: noqa` there applies
  /// to the whole file.
  std::uint32_t header_end() const { return header_end_; }

 private:
  const SourceFile& source_;
  const ProjectFacts* project_ = nullptr;
  std::vector<EnvSetting> env_;
  std::vector<Launch> launches_;
  std::vector<SbatchDirective> sbatch_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> comments_;
  std::vector<ShellWord> unread_scripts_;
  std::uint32_t header_end_ = 0;
  // A Markdown file: its shell blocks (markdown_shell_view), each a script of
  // its own: settings and the #SBATCH header reach launches of their block only.
  bool markdown_ = false;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> blocks_;
  bool same_block(std::uint32_t a, std::uint32_t b) const;
  bool header_reaches(const Launch& launch) const;
  std::vector<std::uint32_t> opaque_;  // after `source`, `.`, `eval`: any variable may have changed
  friend struct LaunchBuilder;
};

/// Reads a whole non-negative decimal number (`"4"`); unset otherwise.
std::optional<std::int64_t> parse_count(std::string_view text);

/// The largest node count torchrun's `--nnodes` allows: "2" -> 2, "1:4" -> 4;
/// unset when not a number or range of numbers.
std::optional<std::int64_t> parse_node_count(std::string_view text);

}  // namespace ddplint
