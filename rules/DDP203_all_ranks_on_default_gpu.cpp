// DDP203 all-ranks-on-default-gpu: no per-process device is ever selected.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.is_distributed() || !model.uses_cuda()) return;
  // a helper module that other files call: the script that calls it may pin the device
  if (model.helper_module()) return;
  // a package's module that is no entry (no `__main__` block, no launch starts
  // it): it runs in the processes of whatever imports it, whose device choice
  // (a framework's, a script's set_device) is theirs
  const ProjectFacts& p = model.project();
  if (p.indexed && p.package_module && p.launched_by.empty() && !model.has_main_guard()) return;
  // a script that makes itself the only process (`os.environ["WORLD_SIZE"] = "1"`)
  if (model.declares_single_process()) return;
  // the project's launches of this script: when each starts one process per
  // node, every rank has its node's GPU 0 to itself
  // (a script that starts its own processes: the launch's count is not theirs)
  static const std::vector<LaunchOfScript> none;
  const std::vector<LaunchOfScript>& launches = model.starts_processes() ? none : model.project().launched_by;
  const LaunchOfScript* shared = nullptr;
  bool one_per_node = !launches.empty();
  for (const LaunchOfScript& l : launches) {
    one_per_node &= l.processes_per_node == 1;
    if (shared == nullptr && l.processes_per_node > 1) shared = &l;
  }
  if (one_per_node) return;
  TSNode move = all_ranks_on_default_gpu(model, collect_pins(model));
  if (node_is_null(move)) return;
  auto [start, end] = first_line_range(model, move);
  std::string where = shared == nullptr ? std::string("every rank's work land")
                                        : "the work of the " + std::to_string(shared->processes_per_node) +
                                              " processes per node that " + shared->where() + " starts land";
  ctx.report(start, end,
             "this distributed script never selects a GPU per process (no torch.cuda.set_device(local_rank), "
             "no indexed device, no device_ids), so this move and " + where + " on GPU 0; call "
             "torch.cuda.set_device(local_rank) first");
}
}  // namespace

// needs: fires without torch: "cuda"/"nccl"/.cuda(), and a RANK/WORLD_SIZE env read or an argparse --local_rank
extern const Rule kRuleDDP203{
    .info = {.code = "DDP203", .name = "all-ranks-on-default-gpu", .severity = Severity::Error,
             .summary = "A distributed CUDA script that never selects a per-process GPU: every rank uses GPU 0",
             .url = "https://pytorch.org/docs/stable/generated/torch.cuda.set_device.html",
             .needs = "torch|cuda|nccl;torch|environ|getenv|add_argument"},
    .check = &check};

}  // namespace ddplint::rules
