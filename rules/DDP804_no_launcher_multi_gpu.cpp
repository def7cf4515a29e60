// DDP804 no-launcher-multi-gpu: a DDP script started as one plain Python process on a multi-GPU node.
#include <string>

#include "linter/launch_model.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// `python train.py` (one process per node) where the node offers the launch
// more than one GPU and train.py, a script of the project, sets up DDP
// without starting its own processes (no mp.spawn, no Lightning Trainer or
// Fabric): it trains on one GPU, or stops at init_process_group for want of
// RANK and WORLD_SIZE. Needs the project: a launch script linted alone, or a
// script outside the project, says nothing.
void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const Launch& l : model.launches()) {
    // a launch under a guard (the `else` of a GPU-count check) is the one-GPU path
    if (l.launcher != Launcher::Python || l.module || l.conditional) continue;
    const LaunchedScript* script = model.launched_script(l);
    if (script == nullptr || !script->ddp_always || script->spawns) continue;
    // ranks started by hand: `RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 python train.py &`
    if (model.env_value(l, "RANK") || model.env_value(l, "WORLD_SIZE") || model.env_value(l, "LOCAL_RANK")) continue;
    bool sets_rank = false;
    for (const EnvSetting& s : l.env) sets_rank = sets_rank || s.name == "RANK" || s.name == "WORLD_SIZE";
    if (sets_rank) continue;
    std::optional<LaunchModel::Gpus> gpus = model.gpus_per_node(l);
    if (!gpus || gpus->count < 2 || model.tasks_per_node(l) != std::optional<std::int64_t>(1)) continue;
    ctx.report(l.launcher_start, l.script->end,
               "`" + std::string(model.text(l.launcher_start, l.script->end)) + "` starts one process on a node with " +
                   std::to_string(gpus->count) + " GPUs (" + gpus->because + "), and " + script->path +
                   " sets up DDP without starting its own processes: it trains on one GPU or stops for want of "
                   "RANK and WORLD_SIZE; start it with torchrun --nproc-per-node=" + std::to_string(gpus->count));
  }
}
}  // namespace

// needs: none (launch scripts are not prefiltered)
extern const Rule kRuleDDP804{
    .info = {.code = "DDP804", .name = "no-launcher-multi-gpu", .severity = Severity::Warning,
             .summary = "a DDP script started as one plain Python process on a node with several GPUs",
             .url = "https://pytorch.org/docs/stable/elastic/run.html"},
    .check_launch = &check_launch};

}  // namespace ddplint::rules
