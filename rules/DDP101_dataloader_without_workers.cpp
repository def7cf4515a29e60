// DDP101 dataloader-without-workers: DataLoader loads batches in the training process.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// What the loading costs, as far as the file and the project facts show it: the
// dataset's per-sample work, in this file or in the file of its class (a
// warning: every step waits for it), or nothing seen (info: the fact is
// certain, its cost depends on the dataset, which may hold tensors in memory).
struct Cost {
  Severity severity = Severity::Info;
  std::string why;
};
Cost loading_cost(const SemanticModel& model, const CallSite& call) {
  TSNode work = model.per_sample_work(call);
  if (node_is_null(work)) {
    if (const ProjectFacts::DatasetCost* elsewhere = model.dataset_work_elsewhere(call))
      return {Severity::Warning, "the GPU waits while the dataset reads, decodes or transforms each sample (`" +
                                     elsewhere->work + "` at " + elsewhere->where + ")"};
    return {Severity::Info,
            "whatever its dataset does per sample (reading files, decoding, augmenting) runs while the GPU "
            "waits; workers would overlap it with the step"};
  }
  const CallSite* c = model.call_at(work);
  std::string name = c != nullptr && !node_is_null(c->callee) ? std::string(model.text(c->callee)) : "the dataset";
  if (name.size() > 40) name = name.substr(0, 40) + "...";
  return {Severity::Warning, "the GPU waits while the dataset reads, decodes or transforms each sample (`" + name +
                                 "` at line " + std::to_string(ts_node_start_point(work).row + 1) + ")"};
}

void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    // a loader only iterated by loops that train nothing (DreamBooth's prompt
    // loader for generating class images once): its loading slows no step
    if (loader_feeds_no_training(model, *call)) continue;
    // a loader built only where no multi-GPU CUDA run goes (the single-process
    // fallback of `if "linux" in sys.platform:`, a CPU-only branch): the
    // worker count the GPU runs use is the other branch's
    if (model.on_path_without_cuda(call->node)) continue;
    // its batches cost nothing to load (a TensorDataset, a Dataset that indexes
    // lists it holds), or its collate_fn puts them on the GPU, which a worker
    // process cannot do: num_workers=0 is right for it
    if (model.loader_data(*call) != LoaderData::Unknown) continue;
    // persistent_workers=True: PyTorch refuses it without workers (a ValueError
    // in DataLoader.__init__), so num_workers is above 0 whenever this runs
    if (Value persistent = model.value_of(model.argument(*call, "persistent_workers"));
        persistent.known() && persistent.truthy())
      continue;
    // DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, ...)
    TSNode workers = model.argument(*call, "num_workers", 5);
    if (node_is_null(workers)) {
      if (model.has_unpacked_arguments(*call)) continue;  // may come from **kwargs: unknown
      // unsafe: worker processes need a picklable dataset and change how random state is seeded
      std::optional<Fix> fix;
      if (std::optional<Edit> e = append_argument(model, *call, "num_workers=4", ctx.options().line_length))
        fix = Fix{Fix::Applicability::Unsafe, "Load in 4 worker processes (`num_workers=4`; tune it)", {std::move(*e)}};
      Cost cost = loading_cost(model, *call);
      ctx.report_at(cost.severity, node_start_byte(call->callee), node_end_byte(call->callee),
                    "DataLoader without num_workers loads every batch in the training process: " + cost.why,
                    std::move(fix));
      continue;
    }
    Value v = model.value_of(workers);
    if ((v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) && v.i == 0) {
      TSNode at = argument_node(model, *call, workers);
      std::string_view written = model.text(workers);
      std::string what = written == "0" ? "num_workers=0" : "num_workers=" + std::string(written.substr(0, 40)) + " (0)";
      if (const LaunchOfScript* l = model.launch_giving(workers))
        what = "num_workers=" + std::string(written.substr(0, 40)) + " (0, given by " + l->where() + ")";
      Cost cost = loading_cost(model, *call);
      // `num_workers=0` written in the call is the author's choice, and its
      // reason is mostly in the dataset: tensors it keeps on the GPU (which a
      // worker process cannot hold), attributes the training loop changes at
      // run time, a stream that is not sharded over workers. Without the
      // per-sample work that makes the choice cost every step, no claim.
      if (written == "0" && cost.severity == Severity::Info) continue;
      std::optional<Fix> fix;
      if (written == "0")
        fix = Fix{Fix::Applicability::Unsafe, "Load in 4 worker processes (`num_workers=4`; tune it)",
                  {Edit{node_start_byte(workers), node_end_byte(workers), "4"}}};
      ctx.report_at(cost.severity, node_start_byte(at), node_end_byte(at),
                    "DataLoader with " + what + " loads every batch in the training process: " + cost.why,
                    std::move(fix));
    }
  }
}
}  // namespace

// needs: reports DataLoader calls (canonical torch.utils.data.DataLoader: a torch import and the name written out)
extern const Rule kRuleDDP101{
    .info = {.code = "DDP101", .name = "dataloader-without-workers", .severity = Severity::Warning,
             .summary = "DataLoader with no num_workers or num_workers=0: the GPU waits for data",
             .url = "https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading", .fixable = true,
             .needs = "torch;DataLoader"},
    .check = &check};

}  // namespace ddplint::rules
