// DDP801 nproc-exceeds-gpus: a launch starts more processes on a node than the node has GPUs.
#include <string>

#include "linter/launch_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// torchrun's --nproc-per-node (python -m torch.distributed.run/.launch too),
// accelerate launch's --num-processes on one machine, against the GPUs the
// node offers the launch (LaunchModel::gpus_per_node: CUDA_VISIBLE_DEVICES in
// its environment, or the #SBATCH header). Only integers on both sides:
// `gpu`/`auto` start one process per visible GPU, and an unknown count says nothing.
void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const Launch& l : model.launches()) {
    const LaunchOption* procs = nullptr;
    if (l.is_torch_launcher()) {
      procs = l.option("nproc-per-node");
    } else if (l.launcher == Launcher::Accelerate) {
      const LaunchOption* machines = l.option("num-machines");
      bool one_machine = machines == nullptr ||
                         (machines->value && machines->value->value && parse_count(*machines->value->value) == 1);
      if (one_machine) procs = l.option("num-processes");
    }
    if (procs == nullptr || !procs->value || !procs->value->value) continue;
    std::optional<std::int64_t> n = parse_count(*procs->value->value);
    if (!n) continue;
    std::optional<LaunchModel::Gpus> gpus = model.gpus_per_node(l);
    // no GPU at all (`CUDA_VISIBLE_DEVICES=` hides them): a CPU run on purpose
    if (!gpus || gpus->count == 0 || *n <= gpus->count) continue;
    std::string first_idle = std::to_string(gpus->count);
    ctx.report(procs->start, procs->end,
               procs->written + " " + std::to_string(*n) + " starts " + std::to_string(*n) +
                   " processes on a node that offers " + std::to_string(gpus->count) + " GPU" +
                   (gpus->count == 1 ? "" : "s") + " (" + gpus->because + "): local ranks " + first_idle +
                   " and up have no GPU of their own, so set_device fails or two ranks share a GPU, which NCCL "
                   "refuses by default");
  }
}
}  // namespace

// needs: none (launch scripts are not prefiltered)
extern const Rule kRuleDDP801{
    .info = {.code = "DDP801", .name = "nproc-exceeds-gpus", .severity = Severity::Error,
             .summary = "a launch starts more processes per node than the node's visible GPUs",
             .url = "https://pytorch.org/docs/stable/elastic/run.html"},
    .check_launch = &check_launch};

}  // namespace ddplint::rules
