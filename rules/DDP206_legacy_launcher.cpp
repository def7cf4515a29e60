// DDP206 legacy-launcher: --local_rank arguments or torch.distributed.launch.
#include "linter/launch_model.hpp"
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// The script also works with torchrun: it reads LOCAL_RANK from the
// environment, or never reads the parsed `.local_rank` at all (a leftover
// option kept so that old launch commands still parse).
bool torchrun_ready(const SemanticModel& model) {
  return !model.mentions_in_code(".local_rank") || model.reads_env_var("LOCAL_RANK");
}

// A script that starts its own worker processes (multiprocessing.Process,
// mp.spawn) and writes each one's local rank into the parsed options itself
// (`args.local_rank = rank` before starting it): `--local_rank` is its own
// option, which no launcher passes.
bool sets_local_rank_itself(const SemanticModel& model) {
  if (!model.starts_processes()) return false;
  for (const Binding& b : model.bindings()) {
    std::string_view path = b.path;
    if (b.kind == Binding::Kind::Assign && path.size() > 11 && path.substr(path.size() - 11) == ".local_rank") return true;
  }
  return false;
}

// A DeepSpeed program (it calls deepspeed.initialize or deepspeed.init_distributed):
// the `deepspeed` launcher starts it, and that launcher passes `--local_rank` to
// every process by design (deepspeed/launcher/launch.py, unless --no_local_rank),
// so the argument is DeepSpeed's convention, not a leftover of torch.distributed.launch.
bool deepspeed_program(const SemanticModel& model) {
  for (const CallSite& c : model.calls())
    if (c.canonical == "deepspeed.initialize" || c.canonical == "deepspeed.init_distributed") return true;
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  // parser.add_argument("--local_rank", ...) / ("--local-rank", ...)
  // A launch script of the project feeds this argument with the legacy
  // launcher: the finding is there (change the launcher), not here.
  bool fed_by_legacy_launch = false;
  for (const LaunchOfScript& l : model.project().launched_by) fed_by_legacy_launch |= l.passes_local_rank;
  bool ready = torchrun_ready(model) || deepspeed_program(model) || sets_local_rank_itself(model) || fed_by_legacy_launch;
  for (const CallSite* call : ready ? CallRange{} : model.calls_named("add_argument")) {
    for (int i = 0; i < 3; ++i) {
      TSNode opt = model.argument(*call, "", i);
      if (node_is_null(opt)) break;
      Value v = model.value_of(opt);
      if (v.kind != Value::Kind::Str) break;
      if (v.s == "--local_rank" || v.s == "--local-rank") {
        // the mechanical part: the default reads LOCAL_RANK, so torchrun (which passes no
        // --local_rank) works and the legacy launcher's argument still wins. Unsafe: the value
        // changes whenever LOCAL_RANK is set. Only for a default on one line (a lone \r
        // ends a line too).
        std::optional<Fix> fix;
        TSNode def = model.argument(*call, "default");
        if (!node_is_null(def) && imports_os(model) && model.text(def).find_first_of("\r\n") == std::string_view::npos)
          fix = Fix{Fix::Applicability::Unsafe, "Default to the LOCAL_RANK that torchrun sets",
                    {Edit{node_start_byte(def), node_end_byte(def),
                          "int(os.environ.get(\"LOCAL_RANK\", " + std::string(model.text(def)) + "))"}}};
        ctx.report(node_start_byte(opt), node_end_byte(opt),
                   "`" + v.s + "` is the argument of the deprecated torch.distributed.launch; launch with "
                   "torchrun and read the local rank from os.environ[\"LOCAL_RANK\"]",
                   std::move(fix));
        break;
      }
    }
  }
  // torch.distributed.launch run from code: python -m torch.distributed.launch in a command string
  for (const CallSite& call : model.calls()) {
    // torch.distributed.launch itself, not torch.distributed.launcher (torchrun's API)
    std::string_view c = call.canonical;
    if (c == "torch.distributed.launch" || c.rfind("torch.distributed.launch.", 0) == 0) {
      ctx.report(node_start_byte(call.callee), node_end_byte(call.callee),
                 "torch.distributed.launch is deprecated: use torchrun (torch.distributed.run)");
      continue;
    }
    if (call.canonical != "subprocess.run" && call.canonical != "subprocess.Popen" &&
        call.canonical != "subprocess.call" && call.canonical != "subprocess.check_call" &&
        call.canonical != "os.system")
      continue;
    std::string_view text = model.text(call.node);
    if (text.find("torch.distributed.launch") != std::string_view::npos) {
      auto [start, end] = first_line_range(model, call.node);
      ctx.report(start, end, "starts the deprecated torch.distributed.launch: use torchrun (torch.distributed.run)");
    }
  }
}

// A launch script's `python -m torch.distributed.launch ...` that passes the
// script `--local_rank` (no `--use_env`): on PyTorch 2 it passes
// `--local-rank`, which a script declaring only `--local_rank` rejects, and
// torchrun does not pass it at all. With `--use_env` the launch works on every
// PyTorch and changing it is cosmetic (found on real code): not reported. The
// fix starts the script with torchrun; it is safe when the project's script
// reads LOCAL_RANK from the environment or never reads its `.local_rank`,
// unsafe otherwise (a script that reads only the argument would break).
//
// And torchrun (or torch.distributed.run) starting a script of the project
// that reads its local rank only from `--local_rank`: torchrun passes no such
// argument, so every rank gets the option's default. Reported at the launch.
void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const Launch& l : model.launches()) {
    // a script the project does not hold (a vendored copy's instructions
    // naming its upstream's tools/train.py): the launch is not this project's to run
    if (model.starts_missing_script(l)) continue;
    const LaunchedScript* script = model.launched_script(l);
    if (l.launcher == Launcher::Torchrun || l.launcher == Launcher::TorchDistributedRun) {
      if (script != nullptr && script->reads_local_rank_argument && !script->reads_local_rank_env)
        ctx.report(l.launcher_start, l.launcher_end,
                   std::string(model.text(l.launcher_start, l.launcher_end)) + " starts " + script->path +
                       ", which reads its local rank only from --local_rank; torchrun passes no such argument, so "
                       "every rank gets the option's default (one GPU for all, or no DDP): read "
                       "os.environ[\"LOCAL_RANK\"] in the script");
      continue;
    }
    if (l.launcher != Launcher::TorchDistributedLaunch || l.option("use-env") != nullptr) continue;
    // the edit: the module's name only (`torch.distributed.run`, torchrun's
    // module), so the interpreter and its options stay as written
    std::string_view words = model.text(l.launcher_start, l.launcher_end);
    std::size_t module = words.rfind("torch.distributed.launch");
    if (module == std::string_view::npos) continue;
    std::uint32_t at = l.launcher_start + static_cast<std::uint32_t>(module);
    bool safe = script != nullptr && script->reads_local_rank_env;
    // no fix where the project's script is known to read only the argument:
    // under torchrun every rank would get its default
    bool breaks = script != nullptr && script->reads_local_rank_argument && !script->reads_local_rank_env;
    std::optional<Fix> fix;
    if (!breaks)
      fix = Fix{safe ? Fix::Applicability::Safe : Fix::Applicability::Unsafe,
                "Start it with torch.distributed.run (torchrun)",
                {Edit{at, at + static_cast<std::uint32_t>(std::string_view("torch.distributed.launch").size()),
                      "torch.distributed.run"}}};
    ctx.report(l.launcher_start, l.launcher_end,
               "torch.distributed.launch is deprecated and passes the script --local-rank (PyTorch 2 spells it "
               "with a hyphen, which a script declaring only --local_rank rejects): start it with torchrun and "
               "read LOCAL_RANK from the environment",
               std::move(fix));
  }
}
}  // namespace

// needs: --local_rank needs no torch: `.local_rank` in the text and an add_argument call; the launch checks need torch
extern const Rule kRuleDDP206{
    .info = {.code = "DDP206", .name = "legacy-launcher", .severity = Severity::Warning,
             .summary = "`--local_rank` argument or torch.distributed.launch: deprecated, use torchrun and LOCAL_RANK",
             .url = "https://pytorch.org/docs/stable/elastic/run.html", .fixable = true, .deprecated_api = true,
             .needs = "torch|.local_rank;torch|add_argument"},
    .check = &check,
    .check_launch = &check_launch};

}  // namespace ddplint::rules
