// DDP801 nproc-exceeds-gpus: a launch starts more processes on a node than the node has GPUs.
#include <string>

#include "linter/launch_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// Processes a launch starts on each node, against the GPUs the node offers it
// (LaunchModel::gpus_per_node: CUDA_VISIBLE_DEVICES in its environment, or
// the #SBATCH header): torchrun's --nproc-per-node (python -m
// torch.distributed.run/.launch too) or accelerate launch's --num-processes on
// one machine, times the tasks srun starts per node (each runs its own
// launcher); for plain Python under srun, the tasks. Only integers: `gpu` and
// `auto` start one process per visible GPU, and an unknown count says nothing.
void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const Launch& l : model.launches()) {
    if (l.opaque_options) continue;  // `$ARGS` may hold another count
    const LaunchOption* procs = nullptr;
    if (l.is_torch_launcher()) {
      procs = l.option("nproc-per-node");
    } else if (l.launcher == Launcher::Accelerate) {
      // --num_processes counts every machine's: one machine only when the
      // command says so or says nothing (a --config_file may name more); --cpu uses no GPU
      const LaunchOption* machines = l.option("num-machines");
      bool one_machine = machines == nullptr
                             ? l.option("config-file") == nullptr
                             : machines->value && machines->value->value && parse_count(*machines->value->value) == 1;
      if (one_machine && l.option("cpu") == nullptr) procs = l.option("num-processes");
    }
    const LaunchOption* tasks_option = nullptr;
    std::optional<std::int64_t> tasks = model.tasks_per_node(l, &tasks_option);
    if (!tasks || *tasks == 0) continue;
    std::optional<std::int64_t> n;
    if (procs != nullptr) {
      if (!procs->value || !procs->value->value) continue;
      n = parse_count(*procs->value->value);
    } else if (l.launcher == Launcher::Python && tasks_option != nullptr) {
      // srun starts the Python processes itself: a DDP script of the project
      // (srun runs CPU work in many tasks too)
      const LaunchedScript* script = model.launched_script(l);
      if (script != nullptr && script->distributed) n = 1;
    }
    if (!n) continue;
    std::int64_t total = *n * *tasks;
    std::optional<LaunchModel::Gpus> gpus = model.gpus_per_node(l);
    // no GPU at all (`CUDA_VISIBLE_DEVICES=` hides them): a CPU run on purpose
    if (!gpus || gpus->count == 0 || total <= gpus->count) continue;
    std::string what;
    std::string why = ": local ranks " + std::to_string(gpus->count) +
                      " and up have no GPU of their own, so set_device fails or two ranks share a GPU, which NCCL "
                      "refuses by default";
    std::uint32_t start = 0, end = 0;
    if (procs != nullptr && *tasks == 1) {
      what = procs->written + " " + std::to_string(*n) + " starts " + std::to_string(*n) + " processes";
      start = procs->start, end = procs->end;
    } else if (procs != nullptr) {
      what = "srun starts " + std::to_string(*tasks) + " tasks per node (" + tasks_option->written + " " +
             std::to_string(*tasks) + "), each running its own " +
             std::string(model.text(l.launcher_start, l.launcher_end)) + " with " + procs->written + " " +
             std::to_string(*n) + ": " + std::to_string(total) + " processes";
      why = ": every launcher numbers its workers from local rank 0, so the tasks' workers share the first GPUs, "
            "which NCCL refuses by default; run one launcher per node (--ntasks-per-node=1)";
      start = l.launcher_start, end = l.launcher_end;
    } else {
      what = "srun starts " + std::to_string(*tasks) + " Python processes (" + tasks_option->written + " " +
             std::to_string(*tasks) + ")";
      start = l.launcher_start, end = l.launcher_end;
    }
    ctx.report(start, end,
               what + " on a node that offers " + std::to_string(gpus->count) + " GPU" +
                   (gpus->count == 1 ? "" : "s") + " (" + gpus->because + ")" + why);
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
