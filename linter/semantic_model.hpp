// SemanticModel: everything the rules know about one Python file, built by one
// walk over its tree-sitter tree. Rules ask it questions; they do not walk the
// raw syntax for these facts again.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "linter/project_facts.hpp"
#include "linter/source.hpp"
#include "linter/syntax.hpp"
#include "linter/value.hpp"

namespace ddplint {

/// Kinds of enclosing `if` conditions that make code run rarely or on few ranks.
enum GuardKind : std::uint8_t {
  kGuardNone = 0,
  kGuardPeriodic = 1 << 0,       ///< `step % every == 0` (also accumulation boundaries)
  kGuardFinalStep = 1 << 1,      ///< `i == len(loader) - 1`, `if last_step:`
  kGuardMainProcess = 1 << 2,    ///< `rank == 0`, `is_main_process()`, `local_rank in (-1, 0)`
  kGuardRankDependent = 1 << 3,  ///< any condition on a rank value
  kGuardOffByDefault = 1 << 4,   ///< `if args.sync_step:` whose value is false by default (store_true, False)
  kGuardOnFailure = 1 << 5,      ///< taken only when a value is not finite: `if loss.isnan().any():`, `if not math.isfinite(x):`
};
using GuardMask = std::uint8_t;

/// The ranks of a distributed run on which a condition holds (the "ranks"
/// question of the model): every rank, rank 0 only, every rank but 0, some
/// other rank-dependent set, none, or unknown. Ranks of a distributed run are
/// 0..world_size-1, so the non-distributed sentinel -1 is no rank: `rank in
/// (-1, 0)`, `rank <= 0` and `not rank` all hold on rank 0 only, `rank > 0`,
/// `rank != 0` and `rank not in [-1, 0]` on every other rank.
struct RankSet {
  enum class Which : std::uint8_t {
    Unknown,  ///< the condition's ranks cannot be told (no claim)
    All,      ///< it does not depend on the rank (the same test on every rank)
    Zero,     ///< rank 0 only
    NonZero,  ///< every rank but 0
    Other,    ///< some other rank-dependent set (`rank == 3`, `rank < 4`)
    None,     ///< no rank of a distributed run (`rank == -1`)
  };
  Which which = Which::Unknown;
  /// The rank expression tested (`args.local_rank`), when the set depends on one
  std::string_view rank;
  /// The conjuncts that do not depend on the rank, by their text and whether
  /// the branch takes them negated (an `else`), sorted:
  /// two branches that hold on complementary ranks pair up only under the
  /// same such conditions (`local_rank != 0 and not evaluate` with
  /// `local_rank == 0 and not evaluate`)
  std::vector<std::pair<std::string_view, bool>> uniform;  ///< (text, negated)
  /// True when `other` holds on exactly the ranks this one does not, under
  /// the same rank-independent conditions: every rank enters one of the two.
  bool complements(const RankSet& other) const;
};

/// A lexical region: the module, a function body, a loop body, one branch of
/// an `if`, or a `with` body. Regions nest; index 0 is the module.
struct Region {
  enum class Kind : std::uint8_t { Module, Function, Class, Loop, Branch, With };
  Kind kind = Kind::Module;
  int parent = -1;        ///< enclosing region, -1 for the module
  int scope = 0;          ///< region index of the enclosing function (or 0: module)
  TSNode node{};          ///< the def/class/for/while/if/with statement (module: root)
  TSNode condition{};     ///< Branch: the condition tested (null for a plain `else`)
  bool negated = false;   ///< Branch: true for `else`, which runs when `condition` is false
  GuardMask guard = 0;    ///< Branch: classified condition (computed after the walk)
  int function = -1;      ///< Function: index into functions()
};

/// Hash for unordered maps keyed by std::string that are looked up by
/// std::string_view without building a string (C++20 heterogeneous lookup).
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

/// Local name -> imported module or object, in a flat vector: a file binds a
/// handful of names by import, and a linear scan of a few string_views costs
/// less than hashing the name (measured with callgrind on the torch corpus).
/// Later imports of a name replace earlier ones, as in Python, except the
/// fallback import of an `except` handler whose `try` body imports the same
/// name (the `try`'s import is what runs where it succeeds). Holds views:
/// the model owns the text they point into.
class AliasTable {
 public:
  explicit AliasTable(std::pmr::memory_resource* memory) : entries_(memory) {}
  /// What `local` is bound to, or nullptr.
  const std::string_view* find(std::string_view local) const {
    for (const auto& [name, target] : entries_)
      if (name == local) return &target;
    return nullptr;
  }
  /// Binds `local` to `target`.
  void set(std::string_view local, std::string_view target) {
    for (auto& [name, t] : entries_) {
      if (name == local) {
        t = target;
        return;
      }
    }
    entries_.emplace_back(local, target);
  }
  /// Every (local name, target) pair, in the order first bound.
  std::span<const std::pair<std::string_view, std::string_view>> entries() const { return entries_; }

 private:
  std::pmr::vector<std::pair<std::string_view, std::string_view>> entries_;
};

/// One argument of a call's argument list (comments excluded), in order.
struct Argument {
  enum class Kind : std::uint8_t { Positional, Keyword, ListSplat, DictionarySplat };
  Kind kind = Kind::Positional;
  TSNode node{};             ///< the argument node (`keyword_argument` for a keyword)
  TSNode value{};            ///< the passed expression (`v` in `k=v`; the node itself when positional)
  std::string_view keyword;  ///< `k` in `k=v`, else empty
};

struct CallSite;

/// True for the canonical name of a class of timm's loss scalers
/// (`timm.utils.NativeScaler`, `timm.utils.ApexScaler`, also through
/// `timm.utils.cuda`): an object whose `__call__(loss, optimizer, ...)` runs
/// backward on the scaled loss, then the optimizer step unless
/// `need_update=False` (timm/utils/cuda.py). NativeScaler holds a
/// torch.cuda.amp.GradScaler; ApexScaler scales through apex.amp.
inline bool is_timm_loss_scaler(std::string_view canonical) {
  return canonical == "timm.utils.NativeScaler" || canonical == "timm.utils.cuda.NativeScaler" ||
         canonical == "timm.utils.ApexScaler" || canonical == "timm.utils.cuda.ApexScaler";
}

/// True for the canonical name of a call that wraps a model in DDP or FSDP
/// and returns the wrapper (`DistributedDataParallel(...)`,
/// `FullyShardedDataParallel(...)`; not `fully_shard`, which shards in place).
inline bool is_ddp_wrap(std::string_view canonical) {
  return canonical == "torch.nn.parallel.DistributedDataParallel" ||
         canonical == "torch.distributed.fsdp.FullyShardedDataParallel";
}

/// True for the canonical name of a call that builds a torch optimizer
/// (`torch.optim.SGD(...)`, `torch.optim.AdamW(...)`), not a learning-rate
/// scheduler of `torch.optim.lr_scheduler`.
inline bool is_optimizer_constructor(std::string_view canonical) {
  return canonical.starts_with("torch.optim.") && canonical.find("lr_scheduler") == std::string_view::npos;
}

/// A 64-bit hash of a name, for the model's name indexes (which compare names
/// only where hashes are equal). It has no seed: a file crafted with names that
/// collide makes a lookup linear in the colliding names of that file.
inline std::uint64_t name_hash(std::string_view s) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;  // 2^64 / golden ratio
  const std::size_t n = s.size();
  std::uint64_t h = n * kMul;
  auto mix = [&](std::uint64_t w) {
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  };
  if (n >= 8) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);  // one load
      mix(w);
    }
    if (i < n) {  // the last 8 bytes, overlapping the previous word
      std::uint64_t w;
      std::memcpy(&w, s.data() + n - 8, 8);
      mix(w);
    }
  } else {
    std::uint64_t w = 0;
    for (std::size_t j = 0; j < n; ++j) w |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[j])) << (8 * j);
    mix(w);
  }
  return h ^ (h >> 32);
}

/// Calls listed under one name in the model's sorted indexes: iterates as
/// `const CallSite*` in file order without copying (valid while the model lives).
class CallRange {
 public:
  using Entry = std::pair<std::uint64_t, int>;  // (name_hash of the name, index into the calls)
  class iterator {
   public:
    iterator(const Entry* e, const CallSite* calls) : e_(e), calls_(calls) {}
    const CallSite* operator*() const;
    iterator& operator++() {
      ++e_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return e_ != o.e_; }
    bool operator==(const iterator& o) const { return e_ == o.e_; }

   private:
    const Entry* e_;
    const CallSite* calls_;
  };
  CallRange() = default;
  CallRange(const Entry* first, const Entry* last, const CallSite* calls) : first_(first), last_(last), calls_(calls) {}
  iterator begin() const { return {first_, calls_}; }
  iterator end() const { return {last_, calls_}; }
  bool empty() const { return first_ == last_; }
  std::size_t size() const { return static_cast<std::size_t>(last_ - first_); }

 private:
  const Entry* first_ = nullptr;
  const Entry* last_ = nullptr;
  const CallSite* calls_ = nullptr;
};

/// One call expression.
struct CallSite {
  TSNode node{};          ///< the `call` node
  TSNode callee{};        ///< its `function` child
  TSNode receiver{};      ///< for `x.m(...)`: `x`; null otherwise
  std::string_view canonical;  ///< resolved dotted name (`torch.utils.data.DataLoader`) or empty (kept by the model)
  std::string_view method;  ///< last name of the callee: `m` in `x.m(...)`, `f` in `f(...)`
  int region = 0;         ///< innermost region holding the call
  std::uint32_t first_argument = 0;  ///< its arguments: SemanticModel::arguments(call)
  std::uint32_t argument_count = 0;
};

inline const CallSite* CallRange::iterator::operator*() const { return calls_ + e_->second; }

/// One binding of a name or attribute path (`x`, `args.batch_size`, `self.model`).
struct Binding {
  enum class Kind : std::uint8_t { Assign, Augmented, Parameter, LoopTarget, WithTarget, Import, Definition };
  Kind kind = Kind::Assign;
  TSNode target{};        ///< the bound name or attribute
  TSNode value{};         ///< the bound expression (null when not a single expression)
  int scope = 0;          ///< region index of the function holding it (0: module)
  std::string_view path;  ///< the target's dotted path (`args.lr`; see SemanticModel::path_of)
};

/// The first place where the file is not valid Python 3.
struct SyntaxProblem {
  TSNode node{};          ///< the ERROR/MISSING node, or the offending statement or token
  std::string message;    ///< e.g. "unexpected `for`", "unexpected indent"
};

/// A write to the process environment in code: `os.environ["X"] = v`,
/// `os.environ.setdefault("X", v)`, `os.putenv("X", v)`, `os.environ.update(X=v)`.
struct EnvWrite {
  std::string name;  ///< the variable, e.g. "NCCL_IB_DISABLE"
  TSNode value{};    ///< the value written (null if not a single expression)
  TSNode at{};       ///< the statement part to report: the subscript or the call
};

/// What a value computed at one point goes on to feed (SemanticModel::value_use).
struct ValueUse {
  enum class Kind : std::uint8_t {
    Nothing,      ///< never read afterwards
    Logging,      ///< read only by printing, logging, progress bars, metric meters or accumulators of them
    Computation,  ///< reaches a computation, a condition, a return to unknown callers, or a use ddplint cannot follow
  };
  Kind kind = Kind::Nothing;
  TSNode sink{};  ///< for Logging: one logging call it reaches; for Computation: where it is used (may be null)
  /// For Logging decided in another file (a return to callers there): one of those calls.
  const ProjectCaller* caller = nullptr;
};

/// What a loaded checkpoint (`torch.load(...)`) restores (SemanticModel::loaded_state).
enum class LoadedState : std::uint8_t {
  Unknown,      ///< not seen restoring state: features, arguments, a cache, or a flow ddplint does not follow
  DeviceState,  ///< restored by `load_state_dict` into a model, an optimizer or another holder of tensors
  HostState,    ///< restored only into holders of Python numbers: LR schedulers, GradScalers, samplers
};

/// A training framework whose calls mean something in DDP terms
/// (linter/model/frameworks.cpp).
enum class Framework : std::uint8_t {
  None,
  Accelerate,  ///< Hugging Face Accelerate: `accelerate.Accelerator`
  Lightning,   ///< the Lightning Trainer: `lightning.Trainer`, `pytorch_lightning.Trainer`
  Fabric,      ///< Lightning Fabric: `lightning.Fabric`, `lightning_fabric.Fabric`
  HfTrainer,   ///< the Hugging Face Trainer's arguments: `transformers.TrainingArguments` (and TRL's configs)
};

/// What object of a framework an expression holds (SemanticModel::framework_object).
enum class FrameworkObject : std::uint8_t {
  None,
  Accelerator,       ///< an `accelerate.Accelerator`
  Fabric,            ///< a `lightning.Fabric`
  LightningTrainer,  ///< a `lightning.Trainer`
  LightningModule,   ///< `self` in a method of a LightningModule subclass
  TrainingArguments, ///< a `transformers.TrainingArguments` (or a TRL config)
};

/// The data-parallel wrapper that holds a model (SemanticModel::parallel_wrapper).
enum class ParallelWrapper : std::uint8_t {
  Unknown,
  Ddp,   ///< `torch.nn.parallel.DistributedDataParallel(...)`
  Fsdp,  ///< `torch.distributed.fsdp.FullyShardedDataParallel(...)`
};

/// One framework configuration written in the code: the constructor call
/// `Accelerator(...)`, `L.Trainer(...)`, `L.Fabric(...)` or `TrainingArguments(...)`.
struct FrameworkConfig {
  Framework framework = Framework::None;
  /// The constructor call; for arguments parsed from the command line, the
  /// `HfArgumentParser((..., TrainingArguments))` call.
  const CallSite* call = nullptr;
  /// For HfArgumentParser: the class region of this file's dataclass that
  /// subclasses TrainingArguments (its field defaults are the settings'
  /// defaults), or -1 for TrainingArguments itself.
  int dataclass = -1;
  /// True when the settings come from the command line (HfArgumentParser):
  /// a setting's value is then its default unless the launch overrides it.
  bool parsed = false;
};

/// One setting of a FrameworkConfig (SemanticModel::framework_setting).
struct FrameworkSetting {
  enum class State : std::uint8_t {
    Written,  ///< given as a keyword: `value` holds the expression
    Default,  ///< not given, and every argument of the call is known: the framework's default applies
    Unknown,  ///< not given as a keyword, but `**kwargs` or positional arguments may set it
  };
  State state = State::Unknown;
  TSNode value{};
};

/// What producing a DataLoader's batches costs the process that iterates it
/// (SemanticModel::loader_data).
enum class LoaderData : std::uint8_t {
  Unknown,   ///< a dataset or collate_fn ddplint cannot read (or one that loads): no claim
  InMemory,  ///< a TensorDataset, or a Dataset class of this file whose `__getitem__` only indexes what it holds
  OnDevice,  ///< its collate_fn moves the batch to a device or makes tensors on one: a worker process cannot
             ///< run it (CUDA cannot be initialised in a forked worker), so the loader must stay in the main process
};

/// A function defined in the file.
struct FunctionInfo {
  std::string_view name;
  TSNode node{};          ///< the function_definition
  int region = 0;         ///< its Function region
  bool no_grad = false;   ///< decorated with `@torch.no_grad()` / `@torch.inference_mode()`
};

/// What the semantic model knows about one file. Build with the constructor;
/// all queries are const and do not touch the tree's structure again except to
/// read children of nodes the model recorded. Not copyable (holds caches).

/// The bindings of one path visible from a region (see SemanticModel::bindings_of).
using BindingList = InlineList<const Binding*, 4>;

/// The memory of one SemanticModel: a monotonic arena (an allocation is a
/// pointer bump; nothing is freed before the model is) that starts in a buffer
/// kept per thread (kThreadBufferBytes), so that a run over many files reuses
/// the same cache-warm memory instead of asking malloc for each file's vectors.
/// A second model alive on the same thread starts from the heap instead.
class ModelArena {
 public:
  /// The memory for the model of a source of `source_bytes` bytes: above
  /// kPoolAboveBytes a pool that takes back what vectors give up when they
  /// grow (a monotonic arena would hold every old copy: 576 MiB instead of
  /// 482 MiB for a 10 MB file, bench/speed.py --only 5), below it the arena.
  explicit ModelArena(std::size_t source_bytes);
  ~ModelArena();
  ModelArena(const ModelArena&) = delete;
  ModelArena& operator=(const ModelArena&) = delete;
  std::pmr::memory_resource* get() {
    return pool_ ? static_cast<std::pmr::memory_resource*>(&*pool_) : &resource_;
  }
  /// Sources above this size (bytes) get a pool instead of the arena.
  static constexpr std::size_t kPoolAboveBytes = 1024 * 1024;
  /// Size of the per-thread buffer, in bytes. Bytes a model takes, as the sum
  /// of the chunks an arena starting empty asked for (an upper bound): 17 KB
  /// for a 0.6 KB script, 38 KB for 0.9 KB (the median of bench/corpus/torch),
  /// 284 KB for its largest, 11 KB (measured by giving the arena a counting
  /// upstream resource). Larger models continue on the heap.
  static constexpr std::size_t kThreadBufferBytes = 256 * 1024;

 private:
  bool holds_thread_buffer_ = false;
  std::pmr::monotonic_buffer_resource resource_;
  std::optional<std::pmr::unsynchronized_pool_resource> pool_;
};

class SemanticModel {
 public:
  /// Builds the model in one walk over `tree`. `source` and `tree` must outlive it.
  /// `project` (may be null) gives what the rest of the file's project says
  /// about it (linter/project.hpp); it must outlive the model too.
  SemanticModel(const SourceFile& source, const SyntaxTree& tree, const ProjectFacts* project = nullptr);
  SemanticModel(const SemanticModel&) = delete;
  SemanticModel& operator=(const SemanticModel&) = delete;

  const SourceFile& source() const { return source_; }
  /// The text of `node` (empty if its range lies outside the source).
  std::string_view text(TSNode node) const;

  // --- syntax -------------------------------------------------------------
  /// The first syntax error in document order: an ERROR or MISSING node of the
  /// parse, inconsistent indentation (IndentationError/TabError, which
  /// tree-sitter accepts), a Python 2 print/exec statement, or `async`/`await`
  /// used as a name. std::nullopt for a valid file.
  const std::optional<SyntaxProblem>& first_syntax_error() const { return first_error_; }
  /// All `# ...` comment nodes in document order.
  std::span<const TSNode> comments() const { return comments_; }
  /// What the value held by the name `name` after byte `after` feeds, in the
  /// scope of region `region`: its reads after that point (until the name is
  /// bound again), followed through assignments, `+=` accumulators, dict and
  /// list building, `.item()`/`.mean()`-style reads, f-strings and returns to
  /// this file's callers. Unknown uses count as Computation, so a rule that
  /// needs "only logging" stays silent when unsure. Bounded: past its budget
  /// the answer is Computation.
  ValueUse value_use(std::string_view name, int region, std::uint32_t after) const;
  /// What the value of expression `node` (a call's result) goes on to feed,
  /// as value_use follows it. With `per_step`, a computation that does not
  /// run on every step (runs_every_step, periodic and final-step branches and
  /// off-by-default options exempt: a running sum read after the step loop, a
  /// test in a logging interval) counts as a use that can wait, as a log does:
  /// the value need not be read on every step for it.
  ValueUse result_use(TSNode node, bool per_step = false) const;
  /// What the result of the load call `load` restores: its value, a
  /// subscript or `.get()` of it, or a name bound to one of those in the same
  /// function after the load (two hops at most), passed to
  /// `x.load_state_dict(...)`. DeviceState when some `x` may hold tensors (a
  /// model, an optimizer: their saved state is on the device they trained on);
  /// HostState when every `x` is an LR scheduler, a GradScaler or a sampler
  /// (by its constructor, else its name); Unknown when nothing restores it.
  LoadedState loaded_state(const CallSite& load) const;
  /// True when `word` occurs in the code itself: in a name, an attribute, a
  /// string used as a value (`os.environ["CUDA_VISIBLE_DEVICES"]`), anything
  /// but a comment or a docstring (a string standing alone as a statement).
  /// For facts a rule reads from what the code refers to, never from prose.
  bool mentions_in_code(std::string_view word) const;
  /// Byte offset where the first statement that is not a module docstring starts
  /// (end of the file if none): comments before it form the file's header block.
  std::uint32_t header_end() const { return header_end_; }

  // --- names ----------------------------------------------------------------
  /// Canonical dotted name of a name or attribute chain, resolved through the
  /// file's imports and aliases and normalised to the public spelling
  /// (`torch.nn.parallel.distributed.DistributedDataParallel` →
  /// `torch.nn.parallel.DistributedDataParallel`). Empty when the root name is
  /// not imported.
  std::string canonical_name(TSNode expr) const;
  /// canonical_name(expr) written into `out` (its capacity reused); false, with
  /// `out` empty, when the name does not resolve.
  bool canonical_name_into(TSNode expr, std::string& out) const;
  /// True if `import MODULE` / `import MODULE as LOCAL` (or `from PKG import
  /// MODULE`) binds `local` to module `module` anywhere in the file.
  bool imports_module_as(std::string_view local, std::string_view module) const {
    const std::string_view* target = aliases_.find(local);
    return target != nullptr && *target == module;
  }
  /// The file's imports: local name -> imported module or object.
  const AliasTable& imports() const { return aliases_; }
  /// The modules of the file's `from MODULE import *` statements, as written
  /// (relative ones with their dots), in document order.
  std::span<const std::string_view> star_imports() const { return star_imports_; }
  /// Dotted path of a plain name or attribute chain (`args.batch_size`), or empty.
  std::string path_of(TSNode expr) const;
  /// path_of(expr) as a view: into the text when the chain is written plainly
  /// (the common case, no string built), else into `storage`, which it fills.
  std::string_view path_view(TSNode expr, std::string& storage) const;
  /// Last identifier of a name or attribute chain (`batch_size` in `args.batch_size`).
  std::string_view last_name(TSNode expr) const;

  // --- calls ----------------------------------------------------------------
  std::span<const CallSite> calls() const { return calls_; }
  /// Calls whose callee resolves to `canonical` (exact match), in file order.
  CallRange calls_to(std::string_view canonical) const;
  /// Calls `x.name(...)` or `name(...)` by last name, whatever the receiver, in file order.
  CallRange calls_named(std::string_view name) const;
  /// The call site record for a `call` node, or nullptr.
  const CallSite* call_at(TSNode call) const;
  /// Argument `keyword=` if present, else positional argument `position` (0-based;
  /// -1 to skip positions). Null node when absent.
  TSNode argument(const CallSite& call, std::string_view keyword, int position = -1) const;
  /// The call's arguments in order, recorded by the walk (empty when its
  /// arguments are a bare generator expression: `f(x for x in y)`).
  std::span<const Argument> arguments(const CallSite& call) const {
    return std::span<const Argument>(arguments_).subspan(call.first_argument, call.argument_count);
  }
  /// True if the call passes `*args` or `**kwargs` (its arguments are then not all known).
  bool has_unpacked_arguments(const CallSite& call) const;
  /// Number of plain positional arguments.
  int positional_count(const CallSite& call) const;

  // --- bindings and values ----------------------------------------------------
  /// Bindings of `path` visible from `region`: those in the innermost function
  /// scope that binds it, else the module's. Attribute paths (`args.x`) are
  /// file-wide. Empty when unbound.
  BindingList bindings_of(std::string_view path, int region) const;
  /// The single expression bound to the name/attribute `expr`, if it is bound
  /// exactly once by a plain assignment; null node otherwise.
  TSNode single_assignment(TSNode expr) const;
  /// The name or attribute an expression is assigned to (`val_loader` in
  /// `val_loader = DataLoader(...)`), or a null node. O(1) after a first
  /// linear pass.
  TSNode assigned_to(TSNode value) const;
  /// Resolved constant value of an expression: literals, names bound once,
  /// `args.X` with an argparse default in the file, simple arithmetic, `int()`/
  /// `float()`/`str()` of known values. When the project's launch scripts
  /// start this file (ProjectFacts::launched_by), `args.X` is what every
  /// launch gives `--x` (or the default where it gives none), and
  /// `dist.get_world_size()` and the WORLD_SIZE variable are the world size
  /// every launch sets; launches that disagree, or pass `"$@"`, leave it
  /// Unknown. Other environment reads are Unknown.
  Value value_of(TSNode expr) const;
  /// True when the file starts its own worker processes:
  /// torch.multiprocessing.spawn/start_processes/Process,
  /// multiprocessing.Process, torch.distributed's elastic_launch, or a
  /// Lightning Trainer or Fabric (whose DDP strategies launch them).
  bool starts_processes() const;
  /// For `args.X`, an argparse value of this file: the first of the
  /// project's launches of this file that gives X's option on its command
  /// line (`train.py --workers 0`), so a message can say where the value
  /// comes from; null otherwise.
  const LaunchOfScript* launch_giving(TSNode expr) const;
  /// True when `launch` gives, on its command line, the option `expr`
  /// (`args.X`, an argparse option of this file not assigned in it) reads.
  bool gives_option(const LaunchOfScript& launch, TSNode expr) const;
  /// True when `expr` is the file's parsed command line: a name that
  /// conventionally holds it (`args`, `opt`, `hparams`, ...) in a file that
  /// defines argparse options, the same reading value_of gives `args.X`.
  bool is_command_line(TSNode expr) const;
  /// The file's argparse options whose value is a known integer (a bool as
  /// 0/1) as the project's launch scripts start the file: every launch's
  /// value, or the default where a launch gives none, by destination. Empty
  /// when no launch script starts the file, or when a launch is not read or
  /// passes words it does not fix (`"$@"`).
  ProjectFacts::OptionValues launched_command_line() const;
  /// True when the file defines argparse option `dest` (add_argument or
  /// set_defaults), `dest` with underscores (`gradient_accumulation_steps`).
  bool defines_option(std::string_view dest) const;
  /// The value of `expr` as the project launches the program, where that
  /// decides it: an integer literal, a name bound once to such a value, or a
  /// command-line option `args.X` whose value the project's launches fix (in
  /// this file, where a launch script starts it; or a parameter every caller
  /// in another file fills with a launched script's command line,
  /// ProjectFacts::command_line_parameters). Unknown otherwise: a default
  /// alone is not how a script is run.
  Value launched_value(TSNode expr) const;
  /// The argparse destinations of the file (`batch_size` for
  /// `add_argument("--batch-size")`), in no particular order, each once.
  std::vector<std::string_view> argparse_destinations() const;
  /// The `add_argument` call that defines destination `dest` first, or nullptr.
  const CallSite* argparse_definition(std::string_view dest) const;
  /// Region holding `node` (innermost region whose range contains it).
  int region_of(TSNode node) const;

  // --- loops and guards ---------------------------------------------------------
  std::span<const Region> regions() const { return regions_; }
  /// The byte range [start, end) of region `r`'s body (for the module, the
  /// whole text). Regions are numbered in the order their bodies start, so the
  /// regions inside `r` are those after it that start before its end.
  std::pair<std::uint32_t, std::uint32_t> region_range(int r) const { return region_ranges_[static_cast<std::size_t>(r)]; }
  std::span<const FunctionInfo> functions() const { return functions_; }
  /// True when the node runs on every step of a training loop: its innermost
  /// enclosing training loop is a step loop (it calls backward()/optimizer.step()
  /// itself, not only through an inner loop), possibly through functions of this
  /// file called from such a loop, and no enclosing `if` between it and that
  /// loop is a guard of a kind in `exempt`.
  bool runs_every_step(TSNode node, GuardMask exempt) const;
  /// Call sites (indices into calls()) that resolve to function `f` of this file.
  std::span<const int> callers_of(int f) const {
    return f >= 0 && static_cast<std::size_t>(f) < callers_.size() ? std::span<const int>(callers_[f]) : std::span<const int>();
  }
  /// True for `x.backward()` and `.step()` on an optimizer or GradScaler: the
  /// calls that make a loop a training loop.
  bool is_training_call(const CallSite& call) const { return training_call(call); }
  /// True when something in the file applies gradients, not only computes
  /// them: an optimizer, GradScaler or engine `.step()`, `zero_grad`, an
  /// optimizer built, a hand-written update (`p -= ...`, `p.add_(p.grad, ...)`),
  /// a project function that trains, DeepSpeed, Accelerate, Lightning or the HF
  /// Trainer. A file with backward() and none of these (head importance,
  /// adversarial perturbations, a timing benchmark) has no step loop.
  bool applies_gradients() const;
  /// Innermost Loop region at or above `region` within its function (the walk
  /// stops at a function, class or the module), or -1.
  int innermost_loop(int region) const;
  /// True if region `r` is a loop that runs once per training step: it holds a
  /// training call (backward, an optimizer step, a function that makes them)
  /// outside any periodic branch of its own. A loop whose every training call
  /// sits under `if step % n == 0:` (an RL environment loop that trains every
  /// few environment steps) is a training loop but not a step loop.
  bool is_step_loop(int r) const { return r >= 0 && static_cast<std::size_t>(r) < step_loop_.size() && step_loop_[r]; }
  /// True if loop region `r` stops within a few iterations (at most
  /// kFewIterations, 10): its body holds, as one of its own statements,
  /// `if COUNTER >= N: ... break` (or `>`, `==`; `N <= COUNTER`) with N a known
  /// integer (a literal, a name bound once, an argparse default or what every
  /// launch passes), where COUNTER is the loop's own index (`for i, b in
  /// enumerate(loader)`, `for i in range(n)`) or a name the body increments by
  /// one as one of its own statements (`step += 1`). A probe, a smoke test or
  /// a tutorial's one-step loop: per-step costs do not add up in it, so
  /// runs_every_step is false there and a loader it iterates feeds no training
  /// run. An early-stopping counter, incremented under a branch, is no such counter.
  bool few_iterations(int r) const {
    return r >= 0 && static_cast<std::size_t>(r) < few_iterations_.size() && few_iterations_[r];
  }
  /// True if region `r` is a training loop: a step loop, or a loop holding one (an epoch loop).
  bool is_training_loop(int r) const {
    return r >= 0 && static_cast<std::size_t>(r) < training_loop_.size() && training_loop_[r];
  }
  /// True when the node is inside any training loop (step or epoch level).
  bool in_training_loop(TSNode node) const;
  /// Classifies an `if` condition (see GuardKind). `negated` for the else branch.
  GuardMask classify_condition(TSNode condition, bool negated) const;
  /// Guards of every enclosing branch of `node` within its function, ORed.
  GuardMask enclosing_guards(TSNode node) const;
  /// True when `node` is an option the configuration does not choose, within
  /// its expression: the value of a dictionary literal indexed by a known key
  /// that is another (`{"bf16": a, "fp16": b}[args.precision]` with
  /// --precision "bf16" by default and in every launch), or the arm of a
  /// conditional expression whose test is off by default (kGuardOffByDefault).
  bool unselected_option(TSNode node) const;
  /// True when `node` runs only where CUDA is unavailable: in the `else` of a
  /// test `torch.cuda.is_available()` (or a name bound once to it), in an
  /// `elif` after one, or under `if not torch.cuda.is_available():`. A claim
  /// about CUDA runs is not made there (the `gloo` group of a CPU or MPS fallback).
  /// Also where the operating system is not Linux (`if os.name == "nt":`, the
  /// `else` of `if "linux" in sys.platform:`): NCCL, the backend of multi-GPU
  /// CUDA runs, is Linux-only (torch.distributed's backends table), so no
  /// multi-GPU CUDA run takes that path.
  bool on_path_without_cuda(TSNode node) const;
  /// The ranks on which `condition` holds (its else branch when `negated`),
  /// decided by the set of ranks each comparison holds on, not by its
  /// spelling: `rank != 0`, `rank > 0`, `rank not in (-1, 0)` and `not
  /// is_main_process()` are all every rank but 0. Conjuncts that do not test
  /// a rank are kept in `uniform`; an `or` of a rank test with anything else,
  /// or tests of two rank expressions, is Unknown.
  RankSet rank_set(TSNode condition, bool negated) const;
  /// The ranks that run `node` within its function: the intersection of the
  /// rank sets of its enclosing branches (Unknown when one is Unknown, All
  /// when none tests a rank), with their rank-independent conditions.
  RankSet ranks_within_function(TSNode node) const;
  /// True when a later statement of the block that holds `node` is a `return`
  /// or `raise`: the block leaves its function after `node` runs.
  bool block_exits_after(TSNode node) const;

  // --- value kinds -----------------------------------------------------------
  /// A rank value: `rank`, `local_rank`, `args.rank`, `dist.get_rank()`,
  /// `os.environ["RANK"]`, the process index a spawned function is given
  /// (spawned_process_index), or a name bound to one of these
  /// (`args.gpu = gpu` in `def main_worker(gpu, ...)` that mp.spawn starts).
  bool is_rank_value(TSNode expr) const;
  /// True for the first parameter of a function of this file that
  /// torch.multiprocessing.spawn (or start_processes) starts
  /// (`mp.spawn(worker, ...)`, `def worker(gpu, ...)`) when nothing else binds
  /// it: the index of the process on its machine, 0 to nprocs - 1, whatever
  /// the parameter is called (spawn passes `i` as fn's first argument:
  /// torch/multiprocessing/spawn.py, _wrap). A local rank, never a global one.
  bool spawned_process_index(TSNode expr) const;
  /// A comparison of two operands with one operator token (`a < b`, `x == 0`;
  /// not `a < b < c`, `not in` or `is not`), through parentheses: fills
  /// `operands` with the two and `op` with the operator's text. False (and
  /// `operands`/`op` unspecified) for anything else.
  bool binary_comparison(TSNode expr, NodeList& operands, std::string_view& op) const;
  /// A world-size value: `dist.get_world_size()`, `torch.cuda.device_count()`,
  /// `os.environ["WORLD_SIZE"]`, names such as `world_size` / `ngpus_per_node`,
  /// or names bound to one of these.
  bool is_world_size_value(TSNode expr) const;
  /// Name of the environment variable read by `os.environ["X"]`,
  /// `os.environ.get("X", …)` or `os.getenv("X", …)` (through int()/str()), or empty.
  std::string env_var_read(TSNode expr) const;
  /// True when the file reads environment variable `name` in code:
  /// `os.environ.get("NAME", ...)`, `os.getenv("NAME", ...)`, or
  /// `environ["NAME"]` / `environ['NAME']` written out.
  bool reads_env_var(std::string_view name) const;
  /// True if the expression (through names bound in the file) divides by a
  /// world-size value; `division` receives the `/` or `//` node found.
  bool divides_by_world_size(TSNode expr, TSNode* division = nullptr) const;
  /// True if the device expression names one specific GPU (`local_rank`,
  /// `"cuda:1"`, `torch.device("cuda", i)`, `f"cuda:{rank}"`), or is unknown
  /// (a parameter, an attribute set elsewhere): the model cannot rule out that it does.
  bool may_be_indexed_device(TSNode expr) const;
  /// True if call `c` selects a GPU for this process by something other than a
  /// constant index: `torch.cuda.set_device(x)` or `torch.cuda.device(x)`,
  /// `init_process_group(..., device_id=...)`, `deepspeed.initialize(...)`
  /// (DeepSpeedEngine._set_distributed_vars sets the device from the local
  /// rank), or a call of another file's function that does one of these in
  /// its body or a callee's (ProjectFacts::device_selecting_calls).
  bool selects_process_gpu(const CallSite& c) const;

  /// The expression of every decorator (`torch.no_grad()` in `@torch.no_grad()`,
  /// `custom_bwd` in `@custom_bwd`), in document order.
  std::span<const TSNode> decorators() const { return decorators_; }
  /// Every binding recorded by the walk, in document order.
  std::span<const Binding> bindings() const { return bindings_; }
  /// Writes to the process environment, in document order.
  std::span<const EnvWrite> env_writes() const { return env_writes_; }
  /// True when the file itself sets `WORLD_SIZE` to 1 in the environment
  /// (`os.environ["WORLD_SIZE"] = "1"`, a string or an integer; not
  /// `setdefault`, which leaves a launcher's value) in a statement at its top
  /// level that no branch guards: a tutorial or notebook that runs
  /// `init_process_group` as the only process, whatever starts it.
  /// Also true when the file refuses a run of several processes
  /// (refuses_several_processes).
  bool declares_single_process() const;
  /// True when the file sets `MASTER_ADDR` to this machine (`"localhost"` or
  /// `"127.0.0.1"`) in the environment, or starts its process group with a
  /// rendezvous on this machine (`init_method="tcp://127.0.0.1:..."`, a
  /// literal, f-string or `.format` string) or with
  /// `world_size=torch.cuda.device_count()`: the process group cannot span
  /// nodes, so a global rank is a local one.
  bool pins_master_to_this_machine() const;
  /// True when the file stops a run of several processes: `assert
  /// dist.get_world_size() == 1` (`<= 1`, `< 2`), or `if get_world_size() !=
  /// 1:` (`> 1`, `>= 2`) whose body starts with `raise`, `sys.exit()` or
  /// `exit()`, on a world-size call (is_world_size_value). Wherever it sits:
  /// a tool that refuses several processes on one path is not one to make a
  /// per-process claim about.
  bool refuses_several_processes() const;
  /// True when `cond` holds exactly when the run has several processes (`W
  /// != 1`, `W > 1`, `W >= 2`, mirrored too) on a world-size value W, or,
  /// when `negated`, exactly when it has one (`W == 1`, `W <= 1`, `W < 2`).
  bool several_processes_test(TSNode cond, bool negated) const;
  /// True when the body of `if_statement` (an `if` or `elif`) starts, past
  /// comments, with `raise` or a call of `sys.exit`, `os._exit` or the
  /// builtins `exit()`/`quit()`: the branch stops the program.
  bool branch_starts_by_exiting(TSNode if_statement) const;

  // --- file facts ----------------------------------------------------------------
  /// Calls init_process_group, wraps a model in DDP/FSDP, or reads LOCAL_RANK/RANK/WORLD_SIZE.
  bool is_distributed() const { return distributed_; }
  /// Moves work to CUDA: `"cuda"` device strings, `.cuda()`, `torch.cuda.*` calls, NCCL.
  bool uses_cuda() const { return cuda_; }
  /// Wraps a model in DistributedDataParallel or FullyShardedDataParallel.
  bool wraps_ddp() const { return wraps_ddp_; }
  /// True if the file has a training loop or a function that trains
  /// (calls backward() or optimizer.step()).
  bool trains() const { return trains_; }
  /// True if the process group backend is explicitly gloo-only.
  bool gloo_backend() const { return gloo_; }


  // --- frameworks (linter/model/frameworks.cpp) ----------------------------------
  /// The framework configurations constructed in the file, in file order.
  std::span<const FrameworkConfig> framework_configs() const { return framework_configs_; }
  /// The setting `key` of `config`: the keyword's value when written; Default
  /// when the call passes no `**kwargs` and no positional argument that could
  /// be it (the framework's own default then applies); else Unknown. For a
  /// parsed config (HfArgumentParser), the default of the field in this
  /// file's dataclass (`ddp_backend: str = field(default="gloo")`: Written,
  /// the value node inside the class), else Default, as an argparse default is
  /// read as the option's value.
  FrameworkSetting framework_setting(const FrameworkConfig& config, std::string_view key) const;
  /// The framework object `expr` holds: a name or attribute every binding of
  /// which (in its scope) is a framework constructor call, or a parameter
  /// annotated with the framework's class (`fabric: L.Fabric`), or `self` in
  /// a method of a LightningModule subclass of this file. None when unknown.
  FrameworkObject framework_object(TSNode expr) const;
  /// The wrapper the model `expr` holds: a DDP or FSDP constructor call, a
  /// name or attribute whose last assignment before `expr` in its scope (else
  /// its one assignment) is such a call, or a call of a function of this file
  /// annotated `-> FSDP`/`-> DDP` or whose every return is one. Unknown
  /// otherwise (a parameter, a framework's `prepare`, ...). Up to 4 steps deep.
  ParallelWrapper parallel_wrapper(TSNode expr) const { return parallel_wrapper_rec(expr, 0); }
  /// What the batches of the DataLoader call `loader` cost to produce: its
  /// `collate_fn` (a function of this file, through `functools.partial`, a
  /// lambda or a wrapper, and the functions of this file it calls) puts them on
  /// a device (OnDevice), or its dataset is a TensorDataset or a Dataset class
  /// of this module, derived from torch's Dataset only, whose `__getitem__`
  /// calls nothing but builtins and tensor conversions (InMemory); otherwise
  /// Unknown (datasets.cpp).
  LoaderData loader_data(const CallSite& loader) const;
  /// The call that makes each sample of DataLoader call `loader` cost work:
  /// its dataset is (every binding of a name to) a Dataset class of this file
  /// whose `__getitem__`, or a method of the class it calls on `self`, reads
  /// or decodes a file (`open`, PIL, OpenCV, imageio, torchvision.io,
  /// torchaudio, soundfile, librosa, decord, PyAV, h5py, pandas readers,
  /// `numpy.load`, `torch.load`, json/pickle) or calls a transform, augmenter,
  /// tokenizer or processor it holds (`self.transform(img)`,
  /// `self.tokenizer(text)`). Null when none is seen (a dataset of another
  /// file, an in-memory one): DDP101's cost then depends on the dataset.
  TSNode per_sample_work(const CallSite& loader) const;
  /// What the samples of a Dataset class cost (`class_definition` a class of
  /// this file): `in_memory` when its bases are torch's Dataset, `object` or
  /// none and its `__getitem__` only indexes what it holds (builtins,
  /// container and tensor methods that convert or view); else `work`, the
  /// first call of `__getitem__` (or of a method of the class it calls on
  /// `self`) that reads or decodes a file or runs a transform, tokenizer or
  /// processor it holds (per_sample_work's list); neither when unknown (no
  /// `__getitem__`, other calls).
  struct DatasetClassCost {
    bool in_memory = false;
    TSNode work{};
  };
  DatasetClassCost dataset_class_cost(TSNode class_definition) const;
  /// The Class region of `class_definition` (a class statement of this
  /// file), or -1. (Not region_of() of its body: a body of one method starts
  /// and ends where that method does, and region_of() answers the method.)
  int class_region(TSNode class_definition) const;
  /// The cost of the samples of DataLoader call `loader`'s dataset when it is
  /// (every binding of a name to) a call of a Dataset class of another file
  /// whose cost the project facts know (ProjectFacts::datasets), else null.
  /// Only per-sample work is answered here; an in-memory class of another
  /// file makes loader_data() InMemory.
  const ProjectFacts::DatasetCost* dataset_work_elsewhere(const CallSite& loader) const;
  /// The framework configuration whose constructor call `expr` (a name bound
  /// once to it, or an attribute such as `self.accelerator`) holds, or nullptr.
  const FrameworkConfig* framework_config_of(TSNode expr) const;
  /// True when function `f` is a Lightning hook that runs once per training
  /// step: `training_step`, `on_train_batch_start`/`_end`, `on_before_backward`,
  /// `on_after_backward`, `on_before_optimizer_step`, `on_before_zero_grad`,
  /// `optimizer_step`, a method of a subclass (in this file) of
  /// `LightningModule` or `Callback` (Lightning's training loop calls them
  /// for every batch: lightning/pytorch/loops/training_epoch_loop.py).
  bool is_lightning_step_hook(int f) const;
  /// True when `node` is in a method of a LightningModule subclass of this file
  /// (whose loss, returned by training_step, the Trainer's precision plugin
  /// backpropagates and, under "16-mixed", scales).
  bool in_lightning_module(TSNode node) const;
  /// True when class region `r` derives, directly or through classes of this
  /// file, from one of the canonical classes `bases`.
  bool class_derives_from(int r, std::span<const std::string_view> bases) const;

  // --- the project --------------------------------------------------------------
  /// The project facts the model was built with (empty when linted alone).
  const ProjectFacts& project() const { return project_ ? *project_ : no_project_facts(); }
  /// True when another file of the project calls a top-level function of this
  /// one and no launch script starts it: a helper module of some script, whose
  /// set-up (the device it pins, the process group) is that script's.
  bool helper_module() const { return !project().result_uses.empty() && project().launched_by.empty(); }
  /// What function `f` (index into functions()) does, from this file and the
  /// project facts: Direct when it runs backward() or an optimizer step itself
  /// (or through a callee that does), InLoop when it runs a training loop.
  ProjectFacts::Trains function_trains(int f) const {
    return f >= 0 && static_cast<std::size_t>(f) < function_trains_.size() ? function_trains_[f] : ProjectFacts::Trains::None;
  }
  /// True when the byte at `offset` lies in a definition that no run of the
  /// project reaches, as far as this file and the project facts show: a
  /// top-level function or class, undecorated and not a dunder, that no code
  /// of this file names outside such definitions (its own body included) and
  /// that no other file imports (ProjectFacts::imported_names). Asked only of
  /// an entry file: one with a `__main__` guard, one a launch script starts,
  /// or one the project imports by name. False (no claim) without project
  /// facts, for a module of a package (its API is others' to call), when the
  /// module is imported whole or by computed names, or when
  /// the file reaches its names dynamically (`globals()`, `locals()`,
  /// `vars()`, `eval`, `exec`, `fire.Fire()` with no arguments).
  /// Also true in the `if __name__ == "__main__":` block of a module that
  /// other files of the project import and no launch script starts (package
  /// modules included, and in projects that also import by computed names):
  /// a self-test or demo the project never runs.
  /// Also true in a branch on a command-line option (`if args.X:`, `not`
  /// included) that every launch of the script gives with a value that
  /// does not take it (SemanticModel::gives_option, launched_value), and in
  /// a branch whose condition is false from literals alone (`if False:`,
  /// `if False and x:`, `if 0:`, the `else` of `if True:`). Names in these two
  /// kinds of branch reach nothing: a function called only there is unreached.
  bool unreached(std::uint32_t offset) const;
  /// How the file may reach names it never writes out, as a mask of the
  /// calls it makes (linter/model/reach.cpp): kNamesByScope for `globals()`,
  /// `locals()`, `eval`, `exec`; kVarsOfScope for `vars()` with no argument;
  /// kFireCommands for `fire.Fire()` with no argument (every top-level
  /// function a command); kNamesByAttribute for `getattr` and `vars(obj)`.
  /// 0 when it makes none of these calls. Computed once per file.
  enum DynamicNameUse : std::uint8_t {
    kNamesByScope = 1 << 0,
    kVarsOfScope = 1 << 1,
    kFireCommands = 1 << 2,
    kNamesByAttribute = 1 << 3,
  };
  std::uint8_t dynamic_name_use() const;
  /// True when the module runs code under `if __name__ == "__main__":` at its top level.
  bool has_main_guard() const;
  /// True for a function defined at the top level of the module (not a method or a nested function).
  bool is_top_level_function(int f) const;
  /// The top-level function whose body holds `node` (index into functions()),
  /// or -1: at module level, in a method, or in a nested function.
  int top_level_function_of(TSNode node) const;
  /// True when `expr` is certainly a host value, not a tensor: a number,
  /// string, bool or None literal, an f-string, arithmetic of such values, a
  /// list/tuple/set/dict of them, `.item()`, `.tolist()`, `float()`/`int()`/
  /// `len()`/`round()`/`str()`/`bool()` of anything, `range()` items, sizes
  /// (`x.shape[0]`, `x.size(0)`, `x.numel()`), learning rates
  /// (`opt.param_groups[0]["lr"]`, `sched.get_last_lr()[0]`), or a name every
  /// binding of which holds one.
  bool certainly_host_value(TSNode expr) const;
  /// True when `expr` (through method calls and attributes, to the name they
  /// start from) holds only values that come from parameters the project
  /// facts call host (ProjectFacts::host_parameters), directly, through a loop
  /// over them (`for k, v in values.items()`), or through assignments of host
  /// values (`v = v.item()`).
  bool from_host_parameter(TSNode expr) const;
  /// The container whose entries a loop's iterable walks: `d` for `d`,
  /// `d.items()`, `d.values()`, `enumerate(d)`, `list(d.values())` (up to 4
  /// calls deep); the iterable itself when no call is stripped.
  TSNode iterated_container(TSNode iterable) const;
  /// The named parameters of function `f` in order, leaving out `self`/`cls`
  /// of a method and `*args`/`**kwargs`, each with its default (null when none).
  std::vector<std::pair<std::string_view, TSNode>> parameters_of(int f) const;
  /// When `node` runs on every training step only because another file calls
  /// its enclosing top-level function every step: that call. Null otherwise.
  const ProjectCaller* step_caller_elsewhere(TSNode node) const;
  /// The function of this file a call runs (`f(...)`, `self.f(...)`): the
  /// definition before the call, else the first after it; empty when the
  /// callee is not a plain name or a method of `self`/`cls`, or no function
  /// of the file has that name.
  std::vector<int> resolve_local_function(const CallSite& call) const;
  /// What the project index knows of a call of a top-level function of
  /// another module of the project (ProjectFacts::callees): whether it trains;
  /// std::nullopt for any other call (a library's, a class's, an unresolved
  /// name) and in a file linted alone.
  std::optional<ProjectFacts::Trains> project_callee(const CallSite& call) const;
  /// The identifiers spelled `name` anywhere in the file (comments and strings
  /// aside; attribute names such as `loader` in `self.loader` included), in
  /// document order. The first question builds an index of every identifier
  /// (one walk of the file); each later one is a lookup.
  std::vector<TSNode> occurrences_of(std::string_view name) const;

 private:
  friend class ModelBuilder;
  // A copy of `s` that lives as long as the model (canonical names, paths
  // not written plainly in the source, import targets).
  std::string_view keep(std::string_view s) {
    char* kept = static_cast<char*>(arena_.get()->allocate(s.size(), 1));
    std::memcpy(kept, s.data(), s.size());
    return {kept, s.size()};
  }
  bool training_call(const CallSite& call) const;
  // What the project index says a call of another module does (ProjectFacts::callees):
  // Trains::None for a call it does not know or a file linted alone.
  ProjectFacts::Trains project_callee_trains(const CallSite& call) const;
  // True when `expr` is os.environ, or a name bound once to a copy of its
  // entries that nothing writes to: `{key: os.environ[key] for key in (...)}`
  // (pytorch/examples' DDP example), `dict(os.environ)`, `os.environ.copy()`.
  bool environ_or_copy(TSNode expr) const;
  void analyse_loops();
  // True when loop region `r` breaks within kFewIterations iterations (few_iterations).
  bool stops_within_few(int r) const;
  /// True when top-level function `f` runs only behind an option that is off
  /// unless given (kGuardOffByDefault, when `exempt` holds it): every call of
  /// it in this file sits in the `if` (not the `else`) of such a test (`if
  /// rank == 0 and args.find_lr:`) whose block then exits (`return`: a run
  /// mode of its own, not a phase such as `if args.do_train:`), no other file imports it
  /// or calls it from a training loop, and its name appears nowhere but in
  /// those calls (not handed on as a callback). Its step loop is then no
  /// step of the run those guards leave out.
  bool called_only_under(int f, GuardMask exempt) const;
  bool runs_every_step_from(int region, std::uint32_t at, GuardMask exempt, int depth, std::vector<int>& visiting,
                            bool& cycle) const;
  // True when byte `at` of function or loop region `r` runs only after a rare
  // test (a guard in `exempt`) let it through: an `if` among its body's
  // statements before the one holding `at` (in line `with`/`try` bodies
  // included) whose every path that falls through passed such a test, the
  // others leaving (return or raise; in a loop, continue or break):
  // `if step % every != 0: return`, or an if/else tree of such tests.
  bool after_rare_early_exit(int r, std::uint32_t at, GuardMask exempt) const;
  // True when `block` (a suite) ends by leaving: return, raise (in a loop,
  // continue or break), or an if/else whose every branch does.
  bool block_exits(TSNode block, bool loop, int depth) const;
  // True when every path through `if_statement` that falls through passed a
  // test with a guard in `exempt` (its own condition, or an earlier one
  // negated) or a statement of its branch that is itself such an `if`.
  bool falls_through_rarely(TSNode if_statement, bool loop, GuardMask exempt, int depth) const;
  bool falls_through_rarely_uncached(TSNode if_statement, bool loop, GuardMask exempt, int depth) const;
  // True when some statement of `block` that ends before byte `at` is an `if`
  // that falls_through_rarely.
  bool rare_tail(TSNode block, std::uint32_t at, bool loop, GuardMask exempt, int depth) const;
  Value value_rec(TSNode expr, int depth) const;
  Value value_uncached(TSNode expr, int depth) const;
  Value argparse_uncached(const std::string& dest, int depth) const;
  Value argparse_default(const std::string& dest, int depth) const;
  Value launched_argument(const std::string& dest, const Value& fallback, int depth) const;
  Value launched_rec(TSNode expr, int depth) const;
  // For `object.dest` with `object` a parameter of this file's top-level
  // function that every caller elsewhere fills with a launched script's
  // command line: that option's value (ProjectFacts::command_line_parameters).
  std::optional<std::int64_t> command_line_parameter(TSNode object, std::string_view dest) const;
  std::optional<std::int64_t> launched_world_size() const;
  bool rank_rec(TSNode expr, int depth) const;
  bool ends_enclosing_loop(TSNode name) const;
  // `a == b` holds on one iteration of the loop around it: a counter that moves
  // every iteration against an integer the loop does not change (guards.cpp)
  bool one_iteration_test(TSNode a, TSNode b) const;
  // a local flag bound to a false constant, and otherwise only under rare
  // guards (periodic, final step, off by default): false on most steps
  bool rarely_set_flag(TSNode name, int depth) const;
  // `i` of `for i in range(...)`/`enumerate(...)`, a name that counts steps or
  // iterations (`global_step`, `self.iteration_step`), plus or minus a constant
  bool iteration_counter(TSNode expr) const;
  // an integer-valued expression no name of which the loop (region `loop`, -1
  // for none) binds: `nbatches`, `len(loader) - 1`, `self.initial_iter_step`
  bool loop_invariant_int(TSNode expr, int loop, int depth) const;
  bool host_value_rec(TSNode expr, int depth, int& budget) const;
  bool host_parameter_rec(TSNode expr, int depth, int& budget) const;
  GuardMask classify_rec(TSNode condition, bool negated, int depth) const;
  ParallelWrapper parallel_wrapper_rec(TSNode expr, int depth) const;
  bool body_puts_on_device(TSNode body, int depth) const;
  bool collate_puts_on_device(TSNode expr, int depth) const;
  bool in_memory_dataset(TSNode expr, int depth) const;
  TSNode per_sample_work_rec(TSNode expr, int depth) const;
  const ProjectFacts::DatasetCost* dataset_elsewhere_rec(TSNode expr, int depth) const;
  // The guard a test of parameter `name` carries: what the argument of every
  // call of its function in this file tests (0 when unknown)
  GuardMask parameter_guard(TSNode name, bool negated, int depth) const;
  /// A parameter of a function of this file, as its calls here see it.
  struct LocalParameter {
    int function = -1;  ///< index into functions()
    int position = -1;  ///< 0-based position among the function's parameters
    TSNode fallback{};  ///< its default value (null when none)
  };
  /// The function whose parameter `name` is (bound only as that parameter), for
  /// reading its calls in this file: nullopt when `name` is no such parameter,
  /// the function has no call here, or another file calls it every step or in
  /// a training loop (with `imported_too`, or imports it at all), since those
  /// calls' arguments are not seen here.
  std::optional<LocalParameter> local_parameter(TSNode name, bool imported_too) const;
  /// The guard of `name OP bound` (or `bound OP name`) where `name` is a
  /// parameter: off by default when every call of its function in this file
  /// passes (or defaults to) an integer that fails the test, else 0.
  GuardMask parameter_comparison_guard(TSNode name, std::string_view op, bool name_left, std::int64_t bound,
                                       bool negated) const;
  /// The default that a configuration class of this file gives the field read
  /// by `attr` (`cfg.sync_every_step`), where `cfg` is a parameter annotated
  /// with the class (`cfg: TrainConfig`) or a name bound once to a call of it
  /// that passes nothing that could set the field (`cfg = TrainConfig()`), and
  /// the class body declares the field with a literal default (`sync_every_step:
  /// bool = False`, `= field(default=False)`) and defines no `__init__` or
  /// `__post_init__`. Unknown otherwise (a class of another file, a field the
  /// file assigns anywhere).
  Value config_field_default(TSNode attr) const;
  RankSet rank_set_rec(TSNode condition, bool negated, int depth) const;
  // A flag parameter that every training call of a function sits under:
  // `if do_backward:` (when = true) or `if not eval_only:` (when = false).
  struct TrainingFlag {
    std::string_view name;
    int position = -1;   // among the parameters callers pass (self left out)
    TSNode fallback{};   // its default value, or null
    bool when = true;    // the truth of the parameter that trains
  };
  // The flag parameter of function `f`, when each call of `f`'s own body
  // (`calls`: indices into calls_) for which `trains(call, index)` holds is in a branch of `f` that tests one
  // parameter by itself (the same parameter and sense for all); nullopt else.
  std::optional<TrainingFlag> training_flag(int f, std::span<const int> calls,
                                            const std::function<bool(const CallSite&, int)>& trains) const;
  // The ranks of a distributed run on which comparison `c` (taken false when
  // `negated`) holds, evaluated on rank 0, rank 1 and a large rank: a mask of
  // {rank 0 = 1, every rank > 0 = 2} (0 to 3), 4 when it holds on some ranks
  // above 0 and not others (`rank == 3`), -1 when `c` is no comparison of a
  // rank value with integers. `rank_side` is set to the operand that is the rank.
  int rank_comparison_mask(TSNode c, bool negated, TSNode* rank_side) const;
  // True when function `f` returns only periodic tests (a periodic predicate)
  bool periodic_predicate(int f, int depth) const;
  bool world_rec(TSNode expr, int depth) const;
  bool world_rec_uncached(TSNode expr, int depth) const;
  bool divides_rec(TSNode expr, int depth, TSNode* division) const;
  bool divides_rec_uncached(TSNode expr, int depth, TSNode* division) const;
  bool indexed_device_rec(TSNode expr, int depth) const;
  bool indexed_device_rec_uncached(TSNode expr, int depth) const;
  Value argparse_value(std::string_view dest, int depth) const;

  // Memo of the recursive value-kind queries (world size, division, device), so
  // that following every binding of every name stays linear: key = query kind
  // and node identity; value 0 = false, 1 = true, 2 = being computed (a cycle).
  struct MemoKey {
    std::uint32_t start, end;
    std::uint16_t symbol;
    std::uint8_t query;
    bool operator==(const MemoKey&) const = default;
  };
  struct MemoHash {
    std::size_t operator()(const MemoKey& k) const {
      return (static_cast<std::size_t>(k.start) * 0x9E3779B97F4A7C15ull) ^ (static_cast<std::size_t>(k.end) << 20) ^
             (static_cast<std::size_t>(k.symbol) << 4) ^ k.query;
    }
  };
  template <typename F>
  bool memoized(std::uint8_t query, TSNode node, F&& compute) const;
  ModelArena arena_;  // (first: the containers below allocate from it)
  mutable std::pmr::unordered_map<MemoKey, std::uint8_t, MemoHash> memo_{arena_.get()};
  mutable std::pmr::unordered_map<std::uint64_t, bool> step_memo_{arena_.get()};
  // falls_through_rarely per (if statement start byte, loop, exempt): each if tree is read once per query kind
  mutable std::pmr::unordered_map<std::uint64_t, bool> rare_if_memo_{arena_.get()};
  mutable std::pmr::unordered_map<std::uint64_t, GuardMask> parameter_guard_memo_{arena_.get()};
  // config_field_default's indexes, built on first use: the top-level classes
  // by name (the last definition of a name wins, as in Python) with their
  // field defaults read on first question, and the attribute names the file
  // assigns anywhere
  struct ConfigClass {
    TSNode body{};
    bool read = false;
    bool has_init = false;  ///< defines __init__ or __post_init__: class defaults say nothing
    std::unordered_map<std::string_view, Value> fields;  ///< literal defaults by field name
  };
  mutable std::optional<std::unordered_map<std::string_view, ConfigClass>> config_classes_;
  mutable std::optional<std::unordered_map<std::string_view, bool>> written_attributes_;
  // on_path_without_cuda's answer for an `elif`/`else` clause (by its start
  // byte): whether an earlier test of its `if` statement holds where multi-GPU
  // CUDA runs can happen; filled for a whole statement at once
  mutable std::unordered_map<std::uint32_t, bool> clause_after_cuda_test_;
  mutable std::pmr::unordered_map<MemoKey, Value, MemoHash> value_memo_{arena_.get()};
  mutable std::unordered_map<std::string, Value> argparse_memo_;
  mutable std::pmr::unordered_multimap<std::uint32_t, int> assigned_index_{arena_.get()};  // start byte of a bound value -> binding

  const SourceFile& source_;
  std::pmr::vector<Region> regions_{arena_.get()};
  std::pmr::vector<std::pair<std::uint32_t, std::uint32_t>> region_ranges_{arena_.get()};  // byte range of each region's body
  std::pmr::vector<CallSite> calls_{arena_.get()};
  std::pmr::vector<Argument> arguments_{arena_.get()};  // grouped by call: CallSite::first_argument
  // (name_hash of the canonical name or the last name, call index), sorted by
  // hash, then name, then index: a lookup compares integers, not strings
  std::pmr::vector<CallRange::Entry> calls_by_canonical_{arena_.get()}, calls_by_name_{arena_.get()};
  std::pmr::vector<Binding> bindings_{arena_.get()};
  std::pmr::vector<CallRange::Entry> bindings_by_path_{arena_.get()};  // (name_hash of the path, binding index), sorted like the call indexes
  // (name_hash, scope, binding index) of every binding, sorted; built on the
  // first lookup of a name bound more than a few times (see bindings_of): the
  // bindings of a name in one scope are then a run found in O(log n), however
  // many other scopes bind it (a file of 6,000 functions that each bind `model`
  // made every lookup a pass over 6,000 bindings)
  struct ScopedBinding {
    std::uint64_t hash;
    int scope;
    int index;
    auto operator<=>(const ScopedBinding&) const = default;
  };
  mutable std::pmr::vector<ScopedBinding> bindings_by_scope_{arena_.get()};
  /// Every identifier of the file as (name hash, start byte, end byte), sorted:
  /// built on the first value_use() (linter/model/flow.cpp), which then finds
  /// the reads of a name without walking its scope again.
  struct NameOccurrence {
    std::uint64_t hash;
    std::uint32_t start, end;
    bool operator<(const NameOccurrence& o) const { return hash != o.hash ? hash < o.hash : start < o.start; }
  };
  mutable std::pmr::vector<NameOccurrence> name_occurrences_{arena_.get()};
  mutable bool name_occurrences_built_ = false;
  mutable std::optional<std::uint8_t> dynamic_name_use_;  // dynamic_name_use(), on first use
  /// The byte ranges of the unreached definitions (SemanticModel::unreached),
  /// sorted; built on the first question (linter/model/reach.cpp).
  mutable std::pmr::vector<std::pair<std::uint32_t, std::uint32_t>> unreached_{arena_.get()};
  mutable bool unreached_built_ = false;
  void build_unreached() const;
  void build_unreached_constant_branches() const;
  /// `certain`: the index in unreached_ from which the ranges are certain (no
  /// run takes them), so names in them reach nothing.
  void build_unreached_definitions(std::size_t certain) const;
  void build_unreached_launched_branches() const;
  void build_name_occurrences() const;
  friend struct FlowAccess;
  // local name -> dotted module path (views into the text or the arena)
  AliasTable aliases_{arena_.get()};
  std::vector<std::string_view> star_imports_;
  std::pmr::vector<FunctionInfo> functions_{arena_.get()};
  std::pmr::unordered_map<std::string_view, std::pmr::vector<int>> functions_by_name_{arena_.get()};
  std::pmr::vector<TSNode> comments_{arena_.get()};
  std::vector<EnvWrite> env_writes_;
  // `x[k] = v` with a plain name `x`: (the subscript, v), in document order
  std::pmr::vector<std::pair<TSNode, TSNode>> name_subscript_writes_{arena_.get()};
  bool container_mutated_by_non_host(std::string_view name, int scope, int depth, int& budget) const;
  std::pmr::vector<TSNode> decorators_{arena_.get()};
  std::optional<SyntaxProblem> first_error_;
  std::uint32_t header_end_ = 0;
  // argparse: dest -> the `add_argument` calls writing it; `set_defaults` values
  StringMap<std::vector<int>> argparse_;
  StringMap<std::vector<TSNode>> argparse_set_defaults_;
  // loop analysis, indexed by region
  std::pmr::vector<std::uint8_t> step_loop_{arena_.get()}, training_loop_{arena_.get()}, few_iterations_{arena_.get()};
  std::pmr::vector<std::pmr::vector<int>> callers_{arena_.get()};  // function index -> call indices
  bool distributed_ = false, cuda_ = false, wraps_ddp_ = false, gloo_ = false, trains_ = false;
  const ProjectFacts* project_ = nullptr;
  std::pmr::vector<ProjectFacts::Trains> function_trains_{arena_.get()};
  void find_frameworks();  // frameworks.cpp, after the walk: framework_configs_, step hooks
  std::pmr::vector<FrameworkConfig> framework_configs_{arena_.get()};
  std::pmr::vector<std::uint8_t> lightning_hook_{arena_.get()};  // function index -> a per-step hook
  static const ProjectFacts& no_project_facts();
};

/// Normalises a dotted name to its public spelling (see canonical_name).
std::string normalize_canonical(std::string name);
/// normalize_canonical on `name` in place.
void normalize_canonical_in_place(std::string& name);

}  // namespace ddplint
