// Small named predicates shared by several rules.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/semantic_model.hpp"

namespace ddplint::rules {

inline constexpr std::string_view kDataLoader = "torch.utils.data.DataLoader";
inline constexpr std::string_view kDDP = "torch.nn.parallel.DistributedDataParallel";
inline constexpr std::string_view kDataParallel = "torch.nn.parallel.DataParallel";

/// Guards under which a per-step cost is not per step: logging intervals,
/// the final iteration, the main process only, and opt-in flags that are off
/// by default (`if args.synchronize_step:` with action="store_true").
inline constexpr GuardMask kRareGuards =
    kGuardPeriodic | kGuardFinalStep | kGuardMainProcess | kGuardOffByDefault | kGuardOnFailure;

/// True if `name` (without the `torch.distributed.` prefix) is a collective.
bool is_collective(std::string_view canonical);

/// The distributed strategy a Lightning Trainer or Fabric configuration
/// (FrameworkConfig) asks for, as written: a string (`strategy="ddp_spawn"`)
/// or a strategy object (`DDPStrategy(find_unused_parameters=True)`).
struct FrameworkStrategy {
  const FrameworkConfig* config = nullptr;
  TSNode value{};                   ///< the `strategy=` value
  std::string name;                 ///< the string's value, when a known string ("" otherwise)
  const CallSite* object = nullptr; ///< the `DDPStrategy(...)` call it is (through a name bound once), or null
};
/// The strategies of the file's Lightning Trainer and Fabric configurations
/// whose `strategy=` is written (a string of known value, or a call to a
/// Lightning/Fabric `DDPStrategy`); a `DDPStrategy(...)` not passed to a
/// configuration of this file is listed too, with `config` null.
std::vector<FrameworkStrategy> framework_strategies(const SemanticModel& model);
/// The per-step work that runs in loops over DataLoaders Accelerate prepared
/// to move each batch with a blocking copy (its default: accelerate/
/// data_loader.py, DataLoaderShard.__iter__: send_to_device(batch, device,
/// non_blocking=self._non_blocking), False unless DataLoaderConfiguration(
/// non_blocking=True)), and in step loops that call torch.cuda.synchronize()
/// on every iteration themselves (a timing pattern): such a loop already
/// waits for the GPU's queue at every step, so one more host-device sync in
/// the step costs little.
class BlockingLoaderSteps {
 public:
  explicit BlockingLoaderSteps(const SemanticModel& model);
  /// True when `call` is in a step loop over such a loader, or runs per step
  /// through a function of this file while every step loop of the file iterates one.
  bool holds(const CallSite& call) const { return in_region(call.region); }
  /// The same for code in region `region`.
  bool in_region(int region) const;

 private:
  const SemanticModel& model_;
  std::vector<int> synchronizing_;  // step loops that synchronize every iteration (sorted regions)
  bool all_ = false;
  bool synchronizing(int loop) const { return std::binary_search(synchronizing_.begin(), synchronizing_.end(), loop); }
};

/// An unsafe fix that writes `strategy="<name>"` in place of the string of
/// `st` (a plain string literal only; none for an f-string, a name or an object).
std::optional<Fix> strategy_rename_fix(const SemanticModel& model, const FrameworkStrategy& st, std::string_view name);

/// True if the expression is a gradient: reads `.grad`, or is a name such as
/// `grad`/`grads` or bound to such an expression in the file.
bool mentions_gradient(const SemanticModel& model, TSNode expr);

/// True when `node` is inside the `backward` of a torch.autograd.Function
/// subclass: there the "gradients" are those of the function's inputs (a
/// differentiable all_gather's backward all-reduces activation gradients),
/// never a DDP model's parameter gradients, and any collective is part of the
/// computation.
bool in_autograd_function_backward(const SemanticModel& model, TSNode node);

/// Range of `node` cut at the end of its first line (for findings over long nodes).
std::pair<std::uint32_t, std::uint32_t> first_line_range(const SemanticModel& model, TSNode node);

/// True if the file writes `NCCL` out. DDP304/DDP306 resolve variable names
/// through constants and concatenation, but report only in such files: a name
/// spelled across pieces that split it ("NC" "CL_DEBUG") is deliberately not
/// followed, so their `needs` ("NCCL;...") hold exactly and the prefilter never
/// changes their findings.
bool spells_out_nccl(const SemanticModel& model);

/// True if `expr` is certainly a tensor in host memory: a torch factory call
/// (`torch.tensor`, `torch.randint`, `torch.zeros`, ...) without a `device=`
/// argument, then only methods that keep the device (`.mean()`, `.sum()`;
/// not `.cuda()` or `.to(...)`), a name bound once to such an expression, a
/// batch of a loop over a torch DataLoader before it is rebound (`y` in
/// `for x, y in loader:` until `y = y.to(device)`), a subscript of one
/// (`batch["label"]`), or a comparison or arithmetic of such tensors and
/// numbers (`(y > 0)`). `.item()` on it is not a host-device sync.
bool host_tensor(const SemanticModel& model, TSNode expr);

/// For the value of one of `call`'s keyword arguments, the whole `name=value`
/// node; otherwise the node itself.
TSNode argument_node(const SemanticModel& model, const CallSite& call, TSNode value);

/// An edit adding the argument `text` (e.g. `pin_memory=True`) at the end of
/// `call`'s argument list, after its last argument (keeping a trailing comma,
/// comments and line breaks as they are). std::nullopt when the call has no
/// parenthesised argument list (a generator argument `f(x for x in y)`).
/// With `line_length` (RuleOptions::line_length; 0: never), a call whose
/// argument list sits on one line that the new argument would push past
/// `line_length` characters is rewritten one argument a line, indented four
/// spaces past the line's indentation, with a trailing comma (as Ruff's
/// formatter lays out a call that does not fit).
std::optional<Edit> append_argument(const SemanticModel& model, const CallSite& call, std::string_view text,
                                    std::uint32_t line_length = 0);

/// An edit deleting the argument `arg` (a `name=value` or positional node) from
/// `call` with the comma that separates it from its neighbour. std::nullopt
/// when a comment lies in the text that would go.
std::optional<Edit> remove_argument(const SemanticModel& model, const CallSite& call, TSNode arg);

/// The name this file gives the process's local rank, as visible at `at`: the
/// last name or attribute bound before `at` (in `at`'s function or at module
/// level) to a read of LOCAL_RANK (`int(os.environ["LOCAL_RANK"])`), or an
/// argparse/parameter/variable literally called `local_rank`. Empty if none.
std::string local_rank_name(const SemanticModel& model, TSNode at);

/// True if the file imports the module `os` under that name (`import os`).
bool imports_os(const SemanticModel& model);

/// ASCII lower case of `s`.
std::string lowercase(std::string_view s);

/// A name marking evaluation data: contains `val`, `test` or `eval` (any case).
bool evaluation_name(std::string_view name);

/// An evaluation loader, by the name it is assigned to (val_loader, test_dl,
/// eval_loader): its batch size does not set the training step's work.
bool evaluation_loader(const SemanticModel& model, const CallSite& call);

/// True when the DataLoader built by `call` certainly feeds no training: it is
/// assigned to a plain name, at least one `for` loop iterates that name
/// (directly or through tqdm/enumerate-like wrappers), no such loop runs a
/// backward or an optimizer step or sits in a training loop, and the name is
/// used nowhere else but in those loops' iterables and in
/// `name = accelerator.prepare(name)` or `len(name)`. Example: the prompt
/// loader a DreamBooth script iterates once to generate class images before
/// training. Any other use (passed to a function, stored) gives false.
/// Also true for a loader_for_evaluation().
bool loader_feeds_no_training(const SemanticModel& model, const CallSite& call);
/// True when the DataLoader built by `call` is named for an evaluation split
/// and nothing in its names says training: the dataset argument's names and
/// string keys (`self.datasets["validation"]`), the name it is assigned to
/// (`val_loader`) or the function that builds it (`_test_dataloader`), split
/// into words: val, valid, validation, eval, evaluation, test, testing,
/// predict, prediction, inference. (Lightning's own hooks are named
/// val_dataloader, test_dataloader and predict_dataloader.)
bool loader_for_evaluation(const SemanticModel& model, const CallSite& call);

/// Precision an autocast call selects on CUDA: "fp16", "bf16", or empty when
/// the call is not a CUDA autocast or its dtype cannot be resolved.
std::string autocast_precision(const SemanticModel& model, const CallSite& call);

/// Where the script selects this process's GPU: torch.cuda.set_device(...),
/// torch.cuda.device(...), init_process_group(device_id=...), a move to an
/// indexed device (.to(local_rank), .cuda(args.gpu), f"cuda:{rank}"), or
/// CUDA_VISIBLE_DEVICES set in code. Collected once per file.
struct Pins {
  bool anywhere = false;                                  ///< CUDA_VISIBLE_DEVICES: pinned for every wrap
  std::unordered_map<int, std::uint32_t> first_in_scope;  ///< scope -> earliest pin byte
  void add(const SemanticModel& model, TSNode pin);
  /// A pin in another function (order unknown) or before `node` in its own function.
  bool before(const SemanticModel& model, TSNode node) const;
  bool any() const { return anywhere || !first_in_scope.empty(); }
};
Pins collect_pins(const SemanticModel& model);

/// DDP203's condition: a distributed CUDA script that never selects a
/// per-process device (no pin, no DDP device_ids) yet moves work with
/// `.cuda()`, `.to("cuda")` or `torch.device("cuda")`. Returns the first such
/// move, or a null node; null too when process_group_started_elsewhere().
TSNode all_ranks_on_default_gpu(const SemanticModel& model, const Pins& pins);

/// A process group used here (a DDP wrap, another package's subclass of
/// DistributedDataParallel, a torch.distributed call) but never started here: a helper of another module starts it (dinov2's
/// distributed.enable(), DeiT's utils.init_distributed_mode()) and usually
/// picks this process's GPU there too. Where the device is chosen is then not
/// in this file, so DDP201 and DDP203 stay silent.
bool process_group_started_elsewhere(const SemanticModel& model);

/// True when `node` is inside a branch (within its loop) whose block ends the
/// run: a `raise`, or a call to sys.exit, os._exit, exit or quit. Such a
/// branch runs at most once, so nothing in it costs on every step.
bool in_run_ending_branch(const SemanticModel& model, TSNode node);


/// For each name or attribute path bound to a DistributedDataParallel/FSDP
/// call, the wrap calls (`model = DDP(net)` gives `model`); also returns, via
/// `wrapped_args`, the paths of the modules passed in (`net`).
struct DdpWrap {
  const CallSite* call = nullptr;
  std::string result;  ///< path the wrap is assigned to (may be empty)
  std::string module;  ///< path of the wrapped module argument (may be empty)
  int scope = 0;       ///< scope region of the wrap
};
std::vector<DdpWrap> ddp_wraps(const SemanticModel& model);

/// True if `later` runs after `wrap` on the same path: it comes later in the
/// text and lies inside the wrap's own region (the same branch, or nested in
/// it), so an `if` that wraps and an `else` that moves are not confused; nor
/// are the two arms of one conditional expression (`DDP(m) if not debug else
/// m.to(gpu)`).
bool runs_after(const SemanticModel& model, const DdpWrap& wrap, TSNode later);

/// True if `node` (in call `at`) acts on `path` after a wrap of that model in
/// the same function: `path` is the wrap's result or the module it wrapped.
bool after_wrap_of(const SemanticModel& model, const std::vector<DdpWrap>& wraps, const CallSite& at,
                   const std::string& path);

/// True if the expression is known to be a tensor: a `torch.*` function result
/// (not torch.cuda/distributed/device/dtype helpers), a call of a name bound to
/// a `torch.nn` module or DDP wrap (`criterion(out, y)`, `model(x)`), a tensor
/// method (`.sum()`, `.mean()`, `.detach()`, ...) on a tensor, arithmetic or
/// indexing with a tensor, or a name bound only to such values. Conservative:
/// false when unsure.
bool tensor_valued(const SemanticModel& model, TSNode expr, int depth = 0);

/// 1-based line of a node, for messages that point elsewhere.
std::uint32_t line_of(const SemanticModel& model, TSNode node);

/// True when region `inner` is region `outer` or nested inside it.
bool region_within(const SemanticModel& model, int inner, int outer);

/// True when `node` runs with autograd off: under `with torch.no_grad():` or
/// `torch.inference_mode()`, or in a function decorated with them.
bool under_no_grad(const SemanticModel& model, TSNode node);

/// True when `call` runs the object at `path` as a model: `path(...)` or
/// `path.forward(...)`.
bool calls_as_model(const SemanticModel& model, const CallSite& call, std::string_view path);

/// The parameter of this file's function `f` that argument `a` of a call binds:
/// its keyword, or the parameter at `position` (the argument's index among the
/// positional ones; SemanticModel::parameters_of leaves out `self`). Empty when
/// there is none.
std::string_view bound_parameter(const SemanticModel& model, int f, const Argument& a, int position);

/// The expressions a `with` statement enters, one per item (`torch.no_grad()`
/// and `autocast()` of `with torch.no_grad(), autocast():`; `ctx()` of
/// `with ctx() as x:`).
std::vector<TSNode> with_item_values(TSNode with_statement);

/// Byte ranges [start, end) of syntax nodes.
using ByteRanges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

/// The file's lambdas (one walk, only when the code has one): a call inside a
/// lambda runs when the lambda is called, not where it stands.
ByteRanges lambda_ranges(const SemanticModel& model);
/// True when `node` starts inside one of `lambdas`.
bool in_lambda(const ByteRanges& lambdas, TSNode node);

/// True when the branch condition `cond` needs a tensor's value on the host:
/// a tensor compared (`loss > 5`), or a tensor itself (`torch.isnan(loss)`),
/// through `not`, `and`/`or` and parentheses; `t is None` tests identity, not
/// the value.
bool tensor_condition(const SemanticModel& model, TSNode cond, int depth = 0);

/// The syncs of a step that wait for nothing (syncs_after_sync): the calls,
/// and the branch conditions on a tensor, keyed by their first byte.
struct DrainedSyncs {
  std::unordered_set<const CallSite*> calls;
  std::unordered_set<std::uint32_t> conditions;
  bool contains(const CallSite* c) const { return calls.contains(c); }
  bool contains_condition(TSNode cond) const { return conditions.contains(ts_node_start_byte(cond)); }
};

/// The host-device syncs (`.item()`, `.tolist()`, `.cpu()`,
/// torch.cuda.synchronize(), an `if` on a tensor such as
/// `if torch.isnan(loss): raise`) that follow an earlier sync of the same step
/// which always runs before them (its region holds theirs, within the step
/// loop), with no backward, optimizer step or model forward queued between:
/// the queue is already drained, so each is a small copy or a no-op, not a
/// stall of its own. One pass over the calls and the tensor conditions in
/// file order. `wraps`: the DDP wraps (ddp_wraps), whose calls are forwards;
/// `lambdas`: lambda_ranges.
DrainedSyncs syncs_after_sync(const SemanticModel& model, const std::vector<DdpWrap>& wraps, const ByteRanges& lambdas);

}  // namespace ddplint::rules
