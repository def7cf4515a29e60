// DDP104 distributed-without-sampler: every rank trains on the whole dataset.
#include <cctype>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// The loader's name appears in a `prepare(...)` call (Accelerate shards it).
bool prepared(const SemanticModel& model, const std::string& path) {
  if (path.empty()) return false;
  for (const CallSite* c : model.calls_named("prepare")) {
    std::string_view args = model.text(field(c->node, kinds().f_arguments));
    for (std::size_t at = args.find(path); at != std::string_view::npos; at = args.find(path, at + 1)) {
      bool left = at == 0 || !(std::isalnum(static_cast<unsigned char>(args[at - 1])) || args[at - 1] == '_');
      std::size_t end = at + path.size();
      bool right = end >= args.size() || !(std::isalnum(static_cast<unsigned char>(args[end])) || args[end] == '_');
      if (left && right) return true;
    }
  }
  return false;
}

// The dataset shards itself: it is built with a rank argument
// (`ShardedDataset(path, rank=rank, world_size=ws)`), directly or through a name.
bool dataset_shards_by_rank(const SemanticModel& model, TSNode dataset) {
  TSNode v = node_symbol(dataset) == kinds().call ? dataset : model.single_assignment(dataset);
  if (node_is_null(v) || node_symbol(v) != kinds().call) return false;
  const CallSite* call = model.call_at(v);
  if (call == nullptr) return false;
  for (const Argument& a : model.arguments(*call)) {
    if (model.is_rank_value(a.value)) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  // ranks that cooperate: a process group or a DDP/FSDP wrap (reading LOCAL_RANK alone is not enough)
  if (!model.trains() || (!model.wraps_ddp() && model.calls_to("torch.distributed.init_process_group").empty()))
    return;
  // iterable datasets shard (or stream) by themselves; their loaders take no sampler
  for (std::string_view word : {"IterableDataset", "WebDataset", "webdataset", "streaming=True"})
    if (model.mentions_in_code(word)) return;
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    if (model.has_unpacked_arguments(*call)) continue;
    // DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
    if (!node_is_null(model.argument(*call, "sampler", 3)) ||
        !node_is_null(model.argument(*call, "batch_sampler", 4)))
      continue;
    if (evaluation_loader(model, *call)) continue;
    TSNode dataset = model.argument(*call, "dataset", 0);
    if (node_is_null(dataset) || dataset_shards_by_rank(model, dataset)) continue;
    if (prepared(model, model.path_of(model.assigned_to(call->node)))) continue;
    ctx.report(node_start_byte(call->callee), node_end_byte(call->callee),
               "DataLoader without a sampler in a distributed script: every rank iterates the whole dataset, so "
               "N GPUs do N times the work per epoch; pass sampler=DistributedSampler(dataset) (and call "
               "sampler.set_epoch(epoch))");
  }
}
}  // namespace

// needs: reports DataLoader calls in a file that trains (trains(): a backward() or .step() call)
extern const Rule kRuleDDP104{
    .info = {.code = "DDP104", .name = "distributed-without-sampler", .severity = Severity::Error,
             .summary = "A distributed script whose training DataLoader has no DistributedSampler: every rank sees all data",
             .url = "https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler",
             .needs = "torch;DataLoader;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
