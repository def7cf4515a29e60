// Training frameworks in DDP terms: the configuration objects of Accelerate,
// the Lightning Trainer, Fabric and the Hugging Face Trainer's arguments, the
// objects that hold them, and Lightning's per-step hooks. The rules read these
// facts to apply the same causes to framework code (a Lightning
// `training_step` is the body of a step loop; `strategy="dp"` in Fabric is
// DataParallel) and to stay silent where the framework does the job.
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>
#include <vector>
#include <string>
#include <string_view>

namespace ddplint {

using namespace model_detail;

namespace {

// The framework whose configuration a constructor's canonical name builds.
Framework config_framework(std::string_view canonical) {
  if (canonical == "accelerate.Accelerator" || canonical == "accelerate.accelerator.Accelerator")
    return Framework::Accelerate;
  for (std::string_view c : {"lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
                             "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer",
                             "pytorch_lightning.trainer.trainer.Trainer", "lightning.pytorch.trainer.trainer.Trainer"})
    if (canonical == c) return Framework::Lightning;
  for (std::string_view c : {"lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
                             "lightning.fabric.fabric.Fabric", "lightning_fabric.fabric.Fabric"})
    if (canonical == c) return Framework::Fabric;
  // TrainingArguments and the TRL configs that subclass it (trl/trainer/*_config.py)
  for (std::string_view c : {"transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments",
                             "transformers.training_args.TrainingArguments", "trl.SFTConfig", "trl.DPOConfig",
                             "trl.ORPOConfig", "trl.KTOConfig", "trl.CPOConfig", "trl.RewardConfig",
                             "trl.GRPOConfig", "trl.PPOConfig", "trl.RLOOConfig", "trl.OnlineDPOConfig"})
    if (canonical == c) return Framework::HfTrainer;
  return Framework::None;
}

FrameworkObject object_of(Framework f) {
  switch (f) {
    case Framework::Accelerate: return FrameworkObject::Accelerator;
    case Framework::Lightning: return FrameworkObject::LightningTrainer;
    case Framework::Fabric: return FrameworkObject::Fabric;
    case Framework::HfTrainer: return FrameworkObject::TrainingArguments;
    case Framework::None: break;
  }
  return FrameworkObject::None;
}

constexpr std::array<std::string_view, 4> kTrainingArguments = {
    "transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args.TrainingArguments", "trl.SFTConfig"};

constexpr std::array<std::string_view, 8> kLightningModules = {
    "lightning.LightningModule",         "lightning.pytorch.LightningModule",
    "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
    "lightning.pytorch.core.LightningModule", "pytorch_lightning.core.module.LightningModule",
    "lightning.pytorch.core.module.LightningModule",
    "pytorch_lightning.core.lightning.LightningModule"};  // (pytorch_lightning <= 1.6)
constexpr std::array<std::string_view, 8> kLightningCallbacks = {
    "lightning.Callback",          "lightning.pytorch.Callback",           "pytorch_lightning.Callback",
    "pytorch_lightning.callbacks.Callback", "lightning.pytorch.callbacks.Callback",
    "pytorch_lightning.callbacks.base.Callback", "pytorch_lightning.callbacks.callback.Callback",
    "lightning.pytorch.callbacks.callback.Callback"};

// Lightning's hooks that its training loop runs for every batch
// (lightning/pytorch/loops/training_epoch_loop.py, optimization/automatic.py).
bool per_step_hook_name(std::string_view name) {
  for (std::string_view h : {"training_step", "on_train_batch_start", "on_train_batch_end", "on_before_backward",
                             "on_after_backward", "on_before_optimizer_step", "on_before_zero_grad"})
    if (name == h) return true;
  return false;
}

// The class regions of the module-level classes of this file that the
// identifier `name` names (`class Base(...)` for `Base`), in binding order.
std::vector<int> local_class_regions(const SemanticModel& m, TSNode name) {
  const Kinds& k = kinds();
  std::vector<int> out;
  if (node_symbol(name) != k.identifier) return out;
  for (const Binding* d : m.bindings_of(m.text(name), 0)) {
    if (d->kind != Binding::Kind::Definition || node_symbol(d->value) != k.class_definition) continue;
    int cr = m.class_region(d->value);
    if (cr > 0) out.push_back(cr);
  }
  return out;
}

}  // namespace

void SemanticModel::find_frameworks() {
  const Kinds& k = kinds();
  std::string name;
  for (const CallSite& c : calls_) {
    if (c.canonical.empty()) continue;
    Framework f = config_framework(c.canonical);
    if (f != Framework::None) framework_configs_.push_back(FrameworkConfig{f, &c, -1, false});
    // HfArgumentParser((ModelArguments, TrainingArguments)): the classes whose
    // fields become command-line options (transformers/hf_argparser.py)
    if (c.canonical != "transformers.HfArgumentParser" && c.canonical != "transformers.hf_argparser.HfArgumentParser")
      continue;
    TSNode types = argument(c, "dataclass_types", 0);
    if (node_is_null(types)) continue;
    std::vector<TSNode> names;
    if (node_symbol(types) == k.identifier || node_symbol(types) == k.attribute) names.push_back(types);
    else
      for (TSNode e : children(types)) names.push_back(e);
    for (TSNode n : names) {
      if (node_symbol(n) != k.identifier && node_symbol(n) != k.attribute) continue;
      if (canonical_name_into(n, name)) {
        if (config_framework(name) == Framework::HfTrainer)
          framework_configs_.push_back(FrameworkConfig{Framework::HfTrainer, &c, -1, true});
        continue;
      }
      for (int cr : local_class_regions(*this, n))
        if (class_derives_from(cr, kTrainingArguments))
          framework_configs_.push_back(FrameworkConfig{Framework::HfTrainer, &c, cr, true});
    }
  }
  lightning_hook_.assign(functions_.size(), 0);
  for (std::size_t f = 0; f < functions_.size(); ++f) {
    if (!per_step_hook_name(functions_[f].name)) continue;
    int parent = regions_[functions_[f].region].parent;
    if (parent < 0 || regions_[parent].kind != Region::Kind::Class) continue;
    if (class_derives_from(parent, kLightningModules) ||
        (functions_[f].name != "training_step" && class_derives_from(parent, kLightningCallbacks)))
      lightning_hook_[f] = 1;
  }
}

bool SemanticModel::in_lightning_module(TSNode node) const {
  for (int r = region_of(node); r > 0; r = regions_[r].parent)
    if (regions_[r].kind == Region::Kind::Class) return class_derives_from(r, kLightningModules);
  return false;
}

bool SemanticModel::is_lightning_step_hook(int f) const {
  return f >= 0 && static_cast<std::size_t>(f) < lightning_hook_.size() && lightning_hook_[f] != 0;
}

bool SemanticModel::class_derives_from(int r, std::span<const std::string_view> bases) const {
  const Kinds& k = kinds();
  std::string name;
  // the class and the classes of this file it derives from (mixins included),
  // each looked at once (a cycle `class A(B)`, `class B(A)` ends)
  std::vector<int> work{r};
  for (std::size_t i = 0; i < work.size() && i < 64; ++i) {
    int c = work[i];
    if (c < 0 || regions_[c].kind != Region::Kind::Class) continue;
    TSNode supers = field(regions_[c].node, k.f_superclasses);
    if (node_is_null(supers)) continue;
    for (TSNode b : children(supers)) {
      if (node_symbol(b) != k.identifier && node_symbol(b) != k.attribute) continue;
      if (canonical_name_into(b, name)) {
        for (std::string_view base : bases)
          if (name == base) return true;
        continue;
      }
      for (int cr : local_class_regions(*this, b))
        if (std::find(work.begin(), work.end(), cr) == work.end()) work.push_back(cr);
    }
  }
  return false;
}

bool SemanticModel::starts_processes() const {
  for (const CallSite& c : calls()) {
    std::string_view n = c.canonical;
    if (n == "torch.multiprocessing.spawn" || n == "torch.multiprocessing.start_processes" ||
        n == "torch.multiprocessing.Process" || n == "multiprocessing.Process" ||
        n == "torch.distributed.launcher.api.elastic_launch" || n == "torch.distributed.launcher.elastic_launch")
      return true;
  }
  for (const FrameworkConfig& f : framework_configs())
    if (f.framework == Framework::Lightning || f.framework == Framework::Fabric) return true;
  return false;
}

FrameworkSetting SemanticModel::framework_setting(const FrameworkConfig& config, std::string_view key) const {
  FrameworkSetting out;
  if (config.call == nullptr) return out;
  if (config.parsed) {
    // a launch of this file that gives the option (HfArgumentParser adds `--a_b`
    // and `--a-b`), or may give it (`"$@"`, an abbreviation): not known here
    std::string under = "--" + std::string(key), dashed = under;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    // (`--no_x` too, which HfArgumentParser adds for a boolean field whose
    // default is True; a positional word may be a JSON or YAML file of settings)
    std::string no_under = "--no_" + std::string(key), no_dashed = "--no-" + dashed.substr(2);
    for (const LaunchOfScript& l : project().launched_by) {
      if (l.arguments_opaque || l.unread || l.positional_arguments) return out;
      for (const LaunchOfScript::Argument& a : l.arguments)
        if (a.written.size() > 2 && a.written.starts_with("--") &&
            (under.starts_with(a.written) || dashed.starts_with(a.written) || a.written == no_under ||
             a.written == no_dashed))
          return out;
    }
    // the field's default in this file's dataclass (or a dataclass it derives from here)
    const Kinds& k = kinds();
    for (int cr = config.dataclass, depth = 0; cr > 0 && depth < 8; ++depth) {
      TSNode body = field(regions_[cr].node, k.f_body);
      for (TSNode stmt : children(body)) {
        if (node_symbol(stmt) != k.expression_statement || ts_node_named_child_count(stmt) != 1) continue;
        TSNode a = ts_node_named_child(stmt, 0);
        if (node_symbol(a) != k.assignment || node_is_null(field(a, k.f_right))) continue;
        TSNode left = field(a, k.f_left);
        if (node_symbol(left) != k.identifier || text(left) != key) continue;
        TSNode v = field(a, k.f_right);
        if (node_symbol(v) == k.call) {  // field(default=..., metadata=...)
          const CallSite* f = call_at(v);
          if (f == nullptr || (f->canonical != "dataclasses.field" && f->method != "field")) return out;
          v = argument(*f, "default");
          if (node_is_null(v)) return out;  // default_factory, or none: unknown
        }
        out.state = FrameworkSetting::State::Written;
        out.value = v;
        return out;
      }
      // the next class of this file up the chain
      int next = -1;
      TSNode supers = field(regions_[cr].node, k.f_superclasses);
      for (TSNode b : children(supers))
        if (std::vector<int> classes = local_class_regions(*this, b); !classes.empty()) next = classes.back();
      cr = next;
    }
    out.state = FrameworkSetting::State::Default;
    return out;
  }
  TSNode v = argument(*config.call, key);
  if (!node_is_null(v)) {
    out.state = FrameworkSetting::State::Written;
    out.value = v;
    return out;
  }
  if (has_unpacked_arguments(*config.call)) return out;
  // Lightning's Trainer and Fabric take keyword arguments only; TrainingArguments
  // takes output_dir first; Accelerator's settings are all keywords in practice:
  // a positional argument there may be any of them
  int positional = positional_count(*config.call);
  if (config.framework == Framework::Accelerate && positional > 0) return out;
  if (config.framework == Framework::HfTrainer && positional > 1) return out;
  out.state = FrameworkSetting::State::Default;
  return out;
}

const FrameworkConfig* SemanticModel::framework_config_of(TSNode expr) const {
  if (node_is_null(expr)) return nullptr;
  const Kinds& k = kinds();
  TSNode value = expr;
  if (node_symbol(expr) == k.identifier || node_symbol(expr) == k.attribute) {
    std::string path = path_of(expr);
    if (path.empty()) return nullptr;
    BindingList bs = bindings_of(path, region_of(expr));
    if (bs.size() != 1 || bs.front()->kind != Binding::Kind::Assign) return nullptr;
    value = bs.front()->value;
  }
  if (node_is_null(value) || node_symbol(value) != k.call) return nullptr;
  for (const FrameworkConfig& c : framework_configs_)
    if (ts_node_eq(c.call->node, value)) return &c;
  return nullptr;
}

FrameworkObject SemanticModel::framework_object(TSNode expr) const {
  if (node_is_null(expr)) return FrameworkObject::None;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    return c == nullptr ? FrameworkObject::None : object_of(config_framework(c->canonical));
  }
  if (s != k.identifier && s != k.attribute) return FrameworkObject::None;
  std::string path = path_of(expr);
  if (path.empty()) return FrameworkObject::None;
  int region = region_of(expr);
  if (path == "self") {
    // `self` in a method of a LightningModule subclass
    for (int r = region; r > 0; r = regions_[r].parent) {
      if (regions_[r].kind != Region::Kind::Class) continue;
      return class_derives_from(r, kLightningModules) ? FrameworkObject::LightningModule : FrameworkObject::None;
    }
    return FrameworkObject::None;
  }
  BindingList bs = bindings_of(path, region);
  if (bs.empty()) return FrameworkObject::None;
  FrameworkObject found = FrameworkObject::None;
  std::string name;
  for (const Binding* b : bs) {
    FrameworkObject here = FrameworkObject::None;
    if (b->kind == Binding::Kind::Assign && !node_is_null(b->value) && node_symbol(b->value) == k.call) {
      const CallSite* c = call_at(b->value);
      if (c != nullptr) here = object_of(config_framework(c->canonical));
    } else if (b->kind == Binding::Kind::Parameter && !node_is_null(b->target)) {
      // `fabric: L.Fabric`, `accelerator: Accelerator = None`
      TSNode p = ts_node_parent(b->target);
      TSNode type = node_is_null(p) ? TSNode{} : ts_node_child_by_field_name(p, "type", 4);
      if (!node_is_null(type) && ts_node_named_child_count(type) == 1) {
        TSNode t = ts_node_named_child(type, 0);
        if ((node_symbol(t) == k.identifier || node_symbol(t) == k.attribute) && canonical_name_into(t, name))
          here = object_of(config_framework(name));
      }
    }
    if (here == FrameworkObject::None) return FrameworkObject::None;  // some binding holds something else
    if (found != FrameworkObject::None && found != here) return FrameworkObject::None;
    found = here;
  }
  return found;
}


namespace {
ParallelWrapper wrapper_named(std::string_view canonical) {
  if (canonical == "torch.nn.parallel.DistributedDataParallel") return ParallelWrapper::Ddp;
  if (canonical == "torch.distributed.fsdp.FullyShardedDataParallel") return ParallelWrapper::Fsdp;
  return ParallelWrapper::Unknown;
}
}  // namespace

ParallelWrapper SemanticModel::parallel_wrapper_rec(TSNode expr, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(expr) || depth > 4) return ParallelWrapper::Unknown;
  TSSymbol s = node_symbol(expr);
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (c == nullptr) return ParallelWrapper::Unknown;
    if (ParallelWrapper w = wrapper_named(c->canonical); w != ParallelWrapper::Unknown) return w;
    auto targets = resolve_local_function(*c);
    if (targets.size() != 1) return ParallelWrapper::Unknown;
    TSNode def = functions_[targets[0]].node;
    // `def setup_fsdp(model) -> FSDP:`
    TSNode annotation = ts_node_child_by_field_name(def, "return_type", 11);
    if (!ts_node_is_null(annotation) && ts_node_named_child_count(annotation) == 1) {
      if (ParallelWrapper w = wrapper_named(canonical_name(ts_node_named_child(annotation, 0)));
          w != ParallelWrapper::Unknown)
        return w;
    }
    // every return of the function's own body returns one wrapper
    ParallelWrapper found = ParallelWrapper::Unknown;
    std::vector<TSNode> stack{field(def, k.f_body)};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      if (node_is_null(n)) continue;
      TSSymbol ns = node_symbol(n);
      if (ns == k.function_definition || ns == k.class_definition || ns == k.lambda) continue;
      if (ns == k.return_statement) {
        ParallelWrapper w = ts_node_named_child_count(n) == 1 ? parallel_wrapper_rec(ts_node_named_child(n, 0), depth + 1)
                                                              : ParallelWrapper::Unknown;
        if (w == ParallelWrapper::Unknown || (found != ParallelWrapper::Unknown && w != found))
          return ParallelWrapper::Unknown;
        found = w;
        continue;
      }
      for (TSNode ch : children(n)) stack.push_back(ch);
    }
    return found;
  }
  if (s != k.identifier && s != k.attribute) return ParallelWrapper::Unknown;
  std::string path = path_of(expr);
  if (path.empty()) return ParallelWrapper::Unknown;
  BindingList bound = bindings_of(path, region_of(expr));
  const Binding* last = nullptr;
  std::uint32_t at = node_start_byte(expr);
  for (const Binding* b : bound) {
    if (b->kind != Binding::Kind::Assign) return ParallelWrapper::Unknown;  // a parameter, a loop target: unknown
    if (node_start_byte(b->target) < at && (last == nullptr || node_start_byte(b->target) > node_start_byte(last->target)))
      last = b;
  }
  if (last == nullptr && bound.size() == 1) last = bound[0];
  if (last == nullptr || node_is_null(last->value)) return ParallelWrapper::Unknown;
  return parallel_wrapper_rec(last->value, depth + 1);
}

}  // namespace ddplint
