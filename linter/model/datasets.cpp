// Loaders: what a DataLoader's batches cost to produce (SemanticModel::loader_data):
// an in-memory dataset, a collate_fn that puts the batch on a device, or unknown.
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace ddplint {

using namespace model_detail;

namespace {

// The most levels of functions, wrappers and names followed from a loader's
// argument to the code that runs per batch.
constexpr int kMaxLoaderDepth = 4;

// Calls that read what is already in memory: builtins, container and tensor
// methods that convert, view or copy, and building a tensor from a list.
bool in_memory_call(const SemanticModel& m, const CallSite& c) {
  static constexpr std::array<std::string_view, 18> builtins = {
      "len", "int", "float", "bool", "dict", "list", "tuple", "min", "max",
      "range", "zip", "enumerate", "isinstance", "sorted", "sum", "abs", "reversed", "slice"};
  static constexpr std::array<std::string_view, 22> methods = {
      "type", "long", "int", "float", "half", "bool", "double", "clone", "tolist", "numpy", "copy", "get",
      "keys", "values", "items", "unsqueeze", "squeeze", "view", "reshape", "contiguous", "detach", "append"};
  static constexpr std::array<std::string_view, 7> constructors = {
      "torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.LongTensor", "torch.FloatTensor",
      "torch.stack", "torch.cat"};
  const Kinds& k = kinds();
  if (node_symbol(c.callee) == k.identifier) {
    std::string_view name = m.text(c.callee);
    if (std::find(builtins.begin(), builtins.end(), name) != builtins.end())
      return m.bindings_of(name, c.region).empty();  // the builtin, not a function of the file
  }
  if (std::find(constructors.begin(), constructors.end(), c.canonical) != constructors.end()) {
    TSNode device = m.argument(c, "device");
    return node_is_null(device);  // (a device argument puts it on a GPU: not in memory's terms)
  }
  if (!node_is_null(c.receiver) && c.canonical.empty())
    return std::find(methods.begin(), methods.end(), c.method) != methods.end();
  return false;
}

// `torch.long`, `torch.float16`, `dtype`, `x.dtype`: a dtype, not a device.
bool dtype_argument(const SemanticModel& m, TSNode e) {
  std::string c = m.canonical_name(e);
  static constexpr std::array<std::string_view, 16> dtypes = {
      "torch.long", "torch.int", "torch.int64", "torch.int32", "torch.int16", "torch.int8", "torch.uint8",
      "torch.float", "torch.float32", "torch.float16", "torch.bfloat16", "torch.half", "torch.double",
      "torch.float64", "torch.bool", "torch.short"};
  if (std::find(dtypes.begin(), dtypes.end(), c) != dtypes.end()) return true;
  std::string name = lower(m.last_name(e));
  return contains(name, "dtype");
}

}  // namespace

namespace {
// A call that reads or decodes a file, or runs a transform, augmenter,
// tokenizer or processor the dataset holds (see SemanticModel::per_sample_work).
bool per_sample_call(const SemanticModel& m, const CallSite& c) {
  static constexpr std::array<std::string_view, 20> prefixes = {
      "PIL.",        "cv2.",          "imageio.",       "skimage.io.", "torchvision.io.", "torchvision.transforms",
      "torchaudio.", "soundfile.",    "librosa.",       "decord.",     "av.",             "h5py.",
      "pandas.read_", "numpy.load",   "torch.load",     "json.load",   "pickle.load",     "scipy.io.",
      "tifffile.",   "nibabel."};
  for (std::string_view p : prefixes)
    if (c.canonical.starts_with(p)) return true;
  const Kinds& k = kinds();
  if (!node_is_null(c.callee) && node_symbol(c.callee) == k.identifier && m.text(c.callee) == "open")
    return m.bindings_of("open", c.region).empty();
  // `self.transform(img)`, `self.tokenizer(text, ...)`, `self.aug.augment(x)`
  if (!node_is_null(c.callee) && node_symbol(c.callee) == k.attribute) {
    std::string path = lower(m.path_of(c.callee));
    if (!path.starts_with("self.")) return false;
    for (std::string_view w : {"transform", "tokeniz", "augment", "processor", "feature_extractor", "decode"})
      if (contains(path, w)) return true;
  }
  return false;
}
}  // namespace

bool SemanticModel::body_puts_on_device(TSNode body, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(body) || depth > kMaxLoaderDepth) return false;
  const std::uint32_t from = node_start_byte(body), to = node_end_byte(body);
  for (const CallSite& c : calls_) {
    std::uint32_t at = node_start_byte(c.node);
    if (at < from || at >= to) continue;
    // `x.cuda()`, `x.to(device)` (not `x.to(torch.long)` nor `x.to("cpu")`)
    if (!node_is_null(c.receiver) && c.canonical.empty() && c.method == "cuda") return true;
    if (!node_is_null(c.receiver) && c.canonical.empty() && c.method == "to") {
      TSNode target = argument(c, "device", 0);
      if (node_is_null(target) || dtype_argument(*this, target)) continue;
      Value v = value_of(target);
      if (v.kind == Value::Kind::Str && v.s.starts_with("cpu")) continue;
      return true;
    }
    // a tensor made on a GPU: `torch.tensor(ids, device="cuda")`
    if (c.canonical.starts_with("torch.")) {
      TSNode device = argument(c, "device");
      if (!node_is_null(device)) {
        Value v = value_of(device);
        if (!(v.kind == Value::Kind::Str && v.s.starts_with("cpu"))) return true;
      }
    }
    // a function of this file that the body calls: `collate(batch, device=args.device)`
    if (node_symbol(c.callee) == k.identifier)
      for (int f : resolve_local_function(c))
        if (body_puts_on_device(field(functions_[f].node, k.f_body), depth + 1)) return true;
  }
  return false;
}

bool SemanticModel::collate_puts_on_device(TSNode e, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(e) || depth > kMaxLoaderDepth) return false;
  TSSymbol s = node_symbol(e);
  if (s == k.lambda) return body_puts_on_device(field(e, k.f_body), depth + 1);
  if (s == k.call) {
    // `functools.partial(make_batch, tokenizer=tok, device="cuda:0")`
    const CallSite* c = call_at(e);
    if (c == nullptr || (c->canonical != "functools.partial" && c->method != "partial")) return false;
    std::span<const Argument> args = arguments(*c);
    if (args.empty()) return false;
    if (collate_puts_on_device(args[0].value, depth + 1)) return true;
    TSNode device = argument(*c, "device");
    if (node_is_null(device)) return false;
    Value v = value_of(device);
    return !(v.kind == Value::Kind::Str && v.s.starts_with("cpu")) && v.kind != Value::Kind::None;
  }
  if (s != k.identifier) return false;
  for (const Binding* b : bindings_of(text(e), region_of(e))) {
    if (b->kind == Binding::Kind::Definition && node_symbol(b->value) == k.function_definition) {
      if (body_puts_on_device(field(b->value, k.f_body), depth + 1)) return true;
    } else if (b->kind == Binding::Kind::Assign && !node_is_null(b->value)) {
      if (collate_puts_on_device(b->value, depth + 1)) return true;
    }
  }
  return false;
}

bool SemanticModel::in_memory_dataset(TSNode e, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(e) || depth > kMaxLoaderDepth) return false;
  TSSymbol s = node_symbol(e);
  if (s == k.identifier) {
    // every value the name is bound to (one per branch: `ds = Dataset(x, y)`)
    BindingList bound = bindings_of(text(e), region_of(e));
    if (bound.empty()) return false;
    // a parameter: what every call of its function in this file passes
    // (`get_loader(dataset)` called with in-memory datasets only)
    if (bound.size() == 1 && bound[0]->kind == Binding::Kind::Parameter) {
      const Region& scope = regions_[bound[0]->scope];
      if (scope.kind != Region::Kind::Function || scope.function < 0) return false;
      const int f = scope.function;
      if (static_cast<std::size_t>(f) >= callers_.size() || callers_[f].empty()) return false;
      if (project_ != nullptr && is_top_level_function(f)) {
        std::string_view fname = functions_[f].name;
        if (project_->step_entries.count(fname) != 0 || project_->loop_entries.count(fname) != 0) return false;
      }
      auto params = parameters_of(f);
      int position = -1;
      for (std::size_t i = 0; i < params.size(); ++i)
        if (params[i].first == text(e)) position = static_cast<int>(i);
      if (position < 0) return false;
      for (int ci : callers_[f]) {
        const CallSite& call = calls_[ci];
        if (has_unpacked_arguments(call)) return false;
        int at = position;  // `self.loader(ds)` passes `ds` first, to `def loader(self, ds)`
        if (!params.empty() && (params[0].first == "self" || params[0].first == "cls") &&
            node_symbol(call.callee) == kinds().attribute)
          --at;
        if (at < 0 || !in_memory_dataset(argument(call, text(e), at), depth + 1)) return false;
      }
      return true;
    }
    for (const Binding* b : bound) {
      if (b->kind != Binding::Kind::Assign) return false;
      TSNode value = b->value;
      if (node_is_null(value)) {
        // one of several targets: `train_ds, test_ds = random_split(full, [n, m])`
        TSNode assignment = ts_node_parent(b->target);
        if (!node_is_null(assignment) && node_symbol(assignment) != k.assignment) assignment = ts_node_parent(assignment);
        if (node_is_null(assignment) || node_symbol(assignment) != k.assignment) return false;
        const CallSite* split = call_at(field(assignment, k.f_right));
        if (split == nullptr || split->canonical != "torch.utils.data.random_split") return false;
        value = split->node;
      }
      if (!in_memory_dataset(value, depth + 1)) return false;
    }
    return true;
  }
  if (s != k.call) return false;
  const CallSite* c = call_at(e);
  if (c == nullptr) return false;
  if (c->canonical == "torch.utils.data.TensorDataset") return true;
  // a part of one: `Subset(ds, idx)`, `random_split(ds, [n, m])`
  if (c->canonical == "torch.utils.data.Subset" || c->canonical == "torch.utils.data.random_split") {
    std::span<const Argument> args = arguments(*c);
    return !args.empty() && in_memory_dataset(args[0].value, depth + 1);
  }
  // a Dataset class of another file whose __getitem__ only indexes what it holds
  if (project_ != nullptr && !c->canonical.empty()) {
    auto d = project_->datasets.find(c->canonical);
    if (d != project_->datasets.end()) return d->second.in_memory;
  }
  // a Dataset class of this module whose __getitem__ only indexes what it holds
  if (node_symbol(c->callee) != k.identifier) return false;
  bool any = false;
  for (const Binding* d : bindings_of(text(c->callee), 0)) {
    if (d->kind != Binding::Kind::Definition || node_symbol(d->value) != k.class_definition) return false;
    if (!dataset_class_cost(d->value).in_memory) return false;
    any = true;
  }
  return any;
}

SemanticModel::DatasetClassCost SemanticModel::dataset_class_cost(TSNode class_definition) const {
  const Kinds& k = kinds();
  DatasetClassCost cost;
  if (node_is_null(class_definition) || node_symbol(class_definition) != k.class_definition) return cost;
  int cr = class_region(class_definition);
  if (cr <= 0) return cost;
  const FunctionInfo* getitem = nullptr;
  for (const FunctionInfo& f : functions_)
    if (f.name == "__getitem__" && regions_[f.region].parent == cr) getitem = &f;
  if (getitem == nullptr) return cost;
  // __getitem__'s calls, and those of the methods of the class it calls on self (one level)
  std::vector<const FunctionInfo*> bodies{getitem};
  const std::uint32_t from = node_start_byte(getitem->node), to = node_end_byte(getitem->node);
  bool only_memory = true;
  for (const CallSite& call : calls_) {
    std::uint32_t at = node_start_byte(call.node);
    if (at < from || at >= to) continue;
    if (!in_memory_call(*this, call)) only_memory = false;
    if (node_is_null(call.callee) || node_symbol(call.callee) != k.attribute) continue;
    if (path_of(field(call.callee, k.f_object)) != "self") continue;
    for (const FunctionInfo& f : functions_)
      if (f.name == call.method && regions_[f.region].parent == cr && &f != getitem) bodies.push_back(&f);
  }
  for (const FunctionInfo* f : bodies) {
    const std::uint32_t b = node_start_byte(f->node), end = node_end_byte(f->node);
    for (const CallSite& call : calls_) {
      std::uint32_t at = node_start_byte(call.node);
      if (at >= b && at < end && per_sample_call(*this, call)) {
        cost.work = call.node;
        return cost;
      }
    }
  }
  if (!only_memory) return cost;
  // its own bases: a class of this file or torch's Dataset (a base of another
  // module may load in its own methods)
  TSNode supers = field(class_definition, k.f_superclasses);
  if (!node_is_null(supers)) {
    for (TSNode base : children(supers)) {
      std::string b = canonical_name(base);
      if (b != "torch.utils.data.Dataset" && b != "torch.utils.data.dataset.Dataset" && b != "object") return cost;
    }
  }
  cost.in_memory = true;
  return cost;
}


TSNode SemanticModel::per_sample_work_rec(TSNode e, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(e) || depth > kMaxLoaderDepth) return {};
  TSSymbol s = node_symbol(e);
  if (s == k.identifier) {
    BindingList bound = bindings_of(text(e), region_of(e));
    if (bound.empty()) return {};
    TSNode first{};
    for (const Binding* b : bound) {
      if (b->kind != Binding::Kind::Assign || node_is_null(b->value)) return {};
      TSNode w = per_sample_work_rec(b->value, depth + 1);
      if (node_is_null(w)) return {};
      if (node_is_null(first)) first = w;
    }
    return first;
  }
  if (s != k.call) return {};
  const CallSite* c = call_at(e);
  if (c == nullptr || node_is_null(c->callee) || node_symbol(c->callee) != k.identifier) return {};
  std::vector<const Binding*> defs;
  for (const Binding* d : bindings_of(text(c->callee), 0)) defs.push_back(d);
  if (defs.size() != 1 || defs[0]->kind != Binding::Kind::Definition || node_symbol(defs[0]->value) != k.class_definition)
    return {};
  return dataset_class_cost(defs[0]->value).work;
}

const ProjectFacts::DatasetCost* SemanticModel::dataset_elsewhere_rec(TSNode e, int depth) const {
  const Kinds& k = kinds();
  if (project_ == nullptr || project_->datasets.empty() || node_is_null(e) || depth > kMaxLoaderDepth) return nullptr;
  TSSymbol s = node_symbol(e);
  if (s == k.identifier) {
    BindingList bound = bindings_of(text(e), region_of(e));
    if (bound.empty()) return nullptr;
    const ProjectFacts::DatasetCost* first = nullptr;
    for (const Binding* b : bound) {
      if (b->kind != Binding::Kind::Assign || node_is_null(b->value)) return nullptr;
      const ProjectFacts::DatasetCost* w = dataset_elsewhere_rec(b->value, depth + 1);
      if (w == nullptr) return nullptr;
      if (first == nullptr) first = w;
    }
    return first;
  }
  if (s != k.call) return nullptr;
  const CallSite* c = call_at(e);
  if (c == nullptr || c->canonical.empty()) return nullptr;
  auto d = project_->datasets.find(c->canonical);
  if (d == project_->datasets.end() || d->second.in_memory || d->second.work.empty()) return nullptr;
  return &d->second;
}

const ProjectFacts::DatasetCost* SemanticModel::dataset_work_elsewhere(const CallSite& loader) const {
  return dataset_elsewhere_rec(argument(loader, "dataset", 0), 0);
}

TSNode SemanticModel::per_sample_work(const CallSite& loader) const {
  return per_sample_work_rec(argument(loader, "dataset", 0), 0);
}

LoaderData SemanticModel::loader_data(const CallSite& loader) const {
  // DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, ...)
  if (collate_puts_on_device(argument(loader, "collate_fn", 6), 0)) return LoaderData::OnDevice;
  if (in_memory_dataset(argument(loader, "dataset", 0), 0)) return LoaderData::InMemory;
  return LoaderData::Unknown;
}

}  // namespace ddplint
