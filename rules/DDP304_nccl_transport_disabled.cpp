// DDP304 nccl-transport-disabled: NCCL forced onto slower transports.
#include "linter/launch_model.hpp"
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// True when condition `cond` tests variable `name` itself (`os.getenv(name)
// is None`, `name not in os.environ`): a default that leaves the user's
// setting, no test of the machine.
bool tests_variable(const SemanticModel& model, TSNode cond, std::string_view name) {
  std::vector<TSNode> stack{cond};
  for (int budget = 256; !stack.empty() && budget > 0; --budget) {
    TSNode n = stack.back();
    stack.pop_back();
    if (model.env_var_read(n) == name) return true;
    if (node_symbol(n) == kinds().string) {
      Value v = model.value_of(n);
      if (v.kind == Value::Kind::Str && v.s == name) return true;
    }
    for (TSNode ch : children(n)) stack.push_back(ch);
  }
  return false;
}

// True when the write sits in a branch of its function that tests something
// other than the variable itself (`if not p2p_supported():`, `if
// gpu_is_consumer_card:`): a guarded workaround, as the shell rule below
// leaves alone.
bool conditional_write(const SemanticModel& model, const EnvWrite& w) {
  for (int r = model.region_of(w.at); r > 0; r = model.regions()[r].parent) {
    const Region& reg = model.regions()[r];
    if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) break;
    if (reg.kind != Region::Kind::Branch) continue;
    if (node_is_null(reg.condition) || !tests_variable(model, reg.condition, w.name)) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!spells_out_nccl(model)) return;  // the rule's `needs` below hold exactly
  for (const EnvWrite& w : model.env_writes()) {
    if (conditional_write(model, w)) continue;
    Value v = model.value_of(w.value);
    std::string what;
    if (w.name == "NCCL_IB_DISABLE" || w.name == "NCCL_P2P_DISABLE" || w.name == "NCCL_SHM_DISABLE") {
      bool disables = (v.kind == Value::Kind::Str && !v.s.empty() && v.s != "0") ||
                      ((v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) && v.i != 0);
      if (!disables) continue;  // "0", 0, or unknown
      what = w.name == "NCCL_IB_DISABLE"    ? "InfiniBand/RoCE, so inter-node traffic goes over TCP sockets"
             : w.name == "NCCL_P2P_DISABLE" ? "direct GPU-to-GPU (NVLink/PCIe peer) copies, so traffic is staged through host memory"
                                            : "shared-memory transport between processes, so intra-node traffic goes over the network";
      what = w.name + " disables " + what;
    } else if (w.name == "NCCL_NET" && v.kind == Value::Kind::Str && lowercase(v.s) == "socket") {
      what = "NCCL_NET=Socket forces TCP sockets even where InfiniBand or RoCE is available";
    } else {
      continue;
    }
    auto [start, end] = first_line_range(model, w.at);
    ctx.report(start, end, what + ": collectives get slower; set it only to work around a broken fabric");
  }
}

// A launch script's `export NCCL_P2P_DISABLE=1` or `NCCL_IB_DISABLE=1 torchrun ...`.
// A setting inside an `if`/`case` is a deliberate, guarded one (disabling P2P
// only on GPUs that lack it) and is left alone, and so is a plain shell
// variable that is never exported (it reaches NCCL only when the variable was
// already in the environment the script inherited: unknown here).
// True when NCCL_SOCKET_IFNAME reaches the same processes as setting `s`:
// set on the same command, or exported unconditionally before it. A script
// that disables InfiniBand (or forces sockets) and names the interface the
// sockets use configures a TCP-only fabric on purpose (DeepSpeed's 1-bit
// Adam scripts for Ethernet clusters), not a leftover.
bool socket_interface_chosen(const LaunchModel& model, const EnvSetting& s) {
  if (s.scope == EnvSetting::Scope::Command) {
    for (const Launch& l : model.launches())
      if (l.start <= s.start && s.end <= l.end)
        for (const EnvSetting& e : l.env)
          if (e.name == "NCCL_SOCKET_IFNAME") return true;
    for (const EnvSetting& e : model.env_settings())  // the same command, not a launch of Python
      if (e.name == "NCCL_SOCKET_IFNAME" && e.scope == EnvSetting::Scope::Command && e.start > s.start &&
          e.start - s.end < 256 && model.text(s.end, e.start).find('\n') == std::string_view::npos)
        return true;
  }
  for (const EnvSetting& e : model.env_settings())
    if (e.name == "NCCL_SOCKET_IFNAME" && e.scope == EnvSetting::Scope::Exported && !e.conditional && e.start < s.start)
      return true;
  return false;
}

void check_launch(const LaunchModel& model, RuleContext& ctx) {
  for (const EnvSetting& s : model.env_settings()) {
    if (s.conditional || s.scope == EnvSetting::Scope::Shell || !s.value.value) continue;
    const std::string& v = *s.value.value;
    std::string what;
    if (s.name == "NCCL_IB_DISABLE" || s.name == "NCCL_P2P_DISABLE" || s.name == "NCCL_SHM_DISABLE") {
      // NCCL reads these as integers: only a non-zero number disables (`false`, `no` read as 0)
      std::optional<std::int64_t> n = parse_count(v);
      if (!n || *n == 0) continue;
      if (s.name == "NCCL_IB_DISABLE" && socket_interface_chosen(model, s)) continue;
      what = s.name == "NCCL_IB_DISABLE"    ? "InfiniBand/RoCE, so inter-node traffic goes over TCP sockets"
             : s.name == "NCCL_P2P_DISABLE" ? "direct GPU-to-GPU (NVLink/PCIe peer) copies, so traffic is staged through host memory"
                                            : "shared-memory transport between processes, so intra-node traffic goes over the network";
      what = s.name + " disables " + what;
    } else if (s.name == "NCCL_NET" && lowercase(v) == "socket") {
      if (socket_interface_chosen(model, s)) continue;
      what = "NCCL_NET=Socket forces TCP sockets even where InfiniBand or RoCE is available";
    } else {
      continue;
    }
    ctx.report(s.start, s.end, what + ": collectives get slower; set it only to work around a broken fabric");
  }
}
}  // namespace

// needs: env writes (os.environ, putenv) without torch; `NCCL` written out (checked in check())
extern const Rule kRuleDDP304{
    .info = {.code = "DDP304", .name = "nccl-transport-disabled", .severity = Severity::Warning,
             .summary = "NCCL_IB_DISABLE / NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_NET=Socket set in code",
             .url = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
             .needs = "NCCL;environ|putenv"},
    .check = &check,
    .check_launch = &check_launch};

}  // namespace ddplint::rules
