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

// A class of this file that defines `__getitem__` and no `__iter__`, on no
// iterable base: a map-style dataset.
bool local_map_style_class(const SemanticModel& model, TSNode callee) {
  const Kinds& k = kinds();
  if (node_is_null(callee) || node_symbol(callee) != k.identifier) return false;
  for (const Binding* b : model.bindings_of(model.text(callee), 0)) {
    if (b->kind != Binding::Kind::Definition) continue;
    TSNode cls = ts_node_parent(b->target);
    if (node_is_null(cls) || node_symbol(cls) != k.class_definition) continue;
    std::string_view bases = model.text(field(cls, k.f_superclasses));
    if (bases.find("Iterable") != std::string_view::npos || bases.find("IterDataPipe") != std::string_view::npos)
      return false;
    bool getitem = false;
    for (TSNode stmt : children(field(cls, k.f_body))) {
      TSNode def = node_symbol(stmt) == k.decorated_definition ? field(stmt, k.f_definition) : stmt;
      if (node_symbol(def) != k.function_definition) continue;
      std::string_view name = model.text(field(def, k.f_name));
      if (name == "__iter__") return false;
      getitem = getitem || name == "__getitem__";
    }
    return getitem;
  }
  return false;
}

// The loader's dataset is known to be map-style (indexed, what a
// DistributedSampler shards): the loader shuffles (PyTorch refuses
// shuffle=True for an IterableDataset, torch/utils/data/dataloader.py), or the
// dataset is built, directly or through names, by torch.utils.data's TensorDataset/Subset/ConcatDataset/
// random_split, a torchvision or torchaudio dataset, or a map-style class of
// this file. Anything else (a project function's result, a datapipe, a
// streaming dataset) may shard itself: no claim.
bool map_style_dataset(const SemanticModel& model, TSNode dataset, int depth) {
  const Kinds& k = kinds();
  if (node_is_null(dataset) || depth > 4) return false;
  TSSymbol s = node_symbol(dataset);
  if (s == k.identifier) {
    TSNode bound = model.single_assignment(dataset);
    if (!node_is_null(bound)) return map_style_dataset(model, bound, depth + 1);
    // an unpacked result: `train_ds, val_ds = random_split(full, [...])`
    for (const Binding* b : model.bindings_of(model.text(dataset), model.region_of(dataset))) {
      if (b->kind != Binding::Kind::Assign || !node_is_null(b->value)) continue;
      TSNode assignment = b->target;
      while (!node_is_null(assignment) && node_symbol(assignment) != k.assignment) assignment = ts_node_parent(assignment);
      if (!node_is_null(assignment)) return map_style_dataset(model, field(assignment, k.f_right), depth + 1);
    }
    return false;
  }
  if (s != k.call) return false;
  const CallSite* c = model.call_at(dataset);
  if (c == nullptr) return false;
  std::string_view n = c->canonical;
  if (n == "torch.utils.data.TensorDataset" || n == "torch.utils.data.Subset" || n == "torch.utils.data.ConcatDataset" ||
      n == "torch.utils.data.random_split" || n.starts_with("torchvision.datasets.") || n.starts_with("torchaudio.datasets."))
    return true;
  return local_map_style_class(model, c->callee);
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
    // certain only for a map-style dataset: an iterable one shards or streams by itself
    Value shuffle = model.value_of(model.argument(*call, "shuffle", 2));
    if (!(shuffle.known() && shuffle.truthy()) && !map_style_dataset(model, dataset, 0)) continue;
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
