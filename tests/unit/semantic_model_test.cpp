// Unit tests of the semantic model: aliases, bindings and values, loops, guards.
#include <filesystem>
#include <fstream>
#include <doctest/doctest.h>

#include <memory>

#include "linter/semantic_model.hpp"
#include "tests/unit/parsed_model.hpp"

using namespace ddplint;

using Model = ddplint::testing::ParsedModel;

TEST_CASE("imports and aliases resolve to canonical names") {
  Model m(R"(import torch
import torch.distributed as dist
import torch.nn.parallel as par
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader as DL
from torch.utils import data
from torch.nn.parallel.distributed import DistributedDataParallel
import os
a = dist.all_reduce(t)
b = par.DistributedDataParallel(m)
c = DDP(m)
d = DL(ds)
e = data.DataLoader(ds)
f = torch.utils.data.DataLoader(ds)
g = DistributedDataParallel(m)
h = torch.nn.DataParallel(m)
i = Unknown(x)
)");
  CHECK(m.call("dist.all_reduce").canonical == "torch.distributed.all_reduce");
  CHECK(m.call("par.").canonical == "torch.nn.parallel.DistributedDataParallel");
  CHECK(m.call("DDP(").canonical == "torch.nn.parallel.DistributedDataParallel");
  CHECK(m.call("DL(").canonical == "torch.utils.data.DataLoader");
  CHECK(m.call("data.").canonical == "torch.utils.data.DataLoader");
  CHECK(m.call("torch.utils").canonical == "torch.utils.data.DataLoader");
  CHECK(m.call("DistributedDataParallel(").canonical == "torch.nn.parallel.DistributedDataParallel");
  CHECK(m.call("torch.nn.DataParallel").canonical == "torch.nn.parallel.DataParallel");
  CHECK(m.call("Unknown").canonical.empty());
  CHECK(m.model.calls_to("torch.utils.data.DataLoader").size() == 3);
}

TEST_CASE("a name an import binds and a parameter, local or later def shadows is not the import") {
  Model m(R"(import torch.distributed as dist
from helpers import reduce_mean, gather_all, log_value, scale
try:
    from apex import amp
except ImportError:
    amp = None


def log_value(v):
    return v


def step(loss, reduce_mean=None, dist=None):
    a = reduce_mean(l1)
    b = dist.all_reduce(l2)
    gather_all = make_gatherer()
    c = gather_all(l3)
    d = log_value(l4)
    e = amp.initialize(l5)
    def scale(x):
        return x
    f = scale(l6)


def other(loss):
    g = reduce_mean(o1)
    h = dist.all_reduce(o2)
    i = gather_all(o3)
)");
  CHECK(m.call("reduce_mean(l1)").canonical.empty());     // a parameter
  CHECK(m.call("dist.all_reduce(l2)").canonical.empty());  // a parameter named like the module
  CHECK(m.call("gather_all(l3)").canonical.empty());       // a local
  CHECK(m.call("log_value(l4)").canonical.empty());        // the module-level def after the import
  CHECK(m.call("amp.initialize(l5)").canonical == "apex.amp.initialize");  // the except-branch fallback is the same import
  CHECK(m.call("scale(l6)").canonical.empty());            // a nested def
  CHECK(m.call("reduce_mean(o1)").canonical == "helpers.reduce_mean");
  CHECK(m.call("dist.all_reduce(o2)").canonical == "torch.distributed.all_reduce");
  CHECK(m.call("gather_all(o3)").canonical == "helpers.gather_all");
}

TEST_CASE("normalize_canonical: every private module path PyTorch re-exports, and names it leaves alone") {
  CHECK(normalize_canonical("torch.nn.parallel.distributed.DistributedDataParallel") == "torch.nn.parallel.DistributedDataParallel");
  CHECK(normalize_canonical("torch.nn.parallel.data_parallel.DataParallel") == "torch.nn.parallel.DataParallel");
  CHECK(normalize_canonical("torch.nn.DistributedDataParallel") == "torch.nn.parallel.DistributedDataParallel");
  CHECK(normalize_canonical("torch.nn.DataParallel") == "torch.nn.parallel.DataParallel");
  CHECK(normalize_canonical("torch.utils.data.dataloader.DataLoader") == "torch.utils.data.DataLoader");
  CHECK(normalize_canonical("torch.utils.data.distributed.DistributedSampler") == "torch.utils.data.DistributedSampler");
  CHECK(normalize_canonical("torch.utils.data.dataset.Dataset") == "torch.utils.data.Dataset");
  CHECK(normalize_canonical("torch.utils.data.sampler.RandomSampler") == "torch.utils.data.RandomSampler");
  CHECK(normalize_canonical("torch.distributed.distributed_c10d.all_reduce") == "torch.distributed.all_reduce");
  CHECK(normalize_canonical("torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel") ==
        "torch.distributed.fsdp.FullyShardedDataParallel");
  CHECK(normalize_canonical("torch.cuda.amp.autocast_mode.autocast") == "torch.cuda.amp.autocast");
  CHECK(normalize_canonical("torch.cuda.amp.grad_scaler.GradScaler") == "torch.cuda.amp.GradScaler");
  CHECK(normalize_canonical("torch.amp.autocast_mode.autocast") == "torch.amp.autocast");
  CHECK(normalize_canonical("torch.amp.grad_scaler.GradScaler") == "torch.amp.GradScaler");
  // prefixes cut short, other modules, and names shorter than any rewrite stay as they are
  CHECK(normalize_canonical("torch.nn.DataParalle") == "torch.nn.DataParalle");
  CHECK(normalize_canonical("torch.nn.DataParallelX") == "torch.nn.parallel.DataParallelX");  // a prefix rewrite, as before
  CHECK(normalize_canonical("torch.nn.functional.relu") == "torch.nn.functional.relu");
  CHECK(normalize_canonical("torch.utils.data") == "torch.utils.data");
  CHECK(normalize_canonical("torch.cuda") == "torch.cuda");
  CHECK(normalize_canonical("numpy.nn.DataParallel") == "numpy.nn.DataParallel");
  CHECK(normalize_canonical("") == "");
}

TEST_CASE("the walk passes over the insides of imports and plain strings, but not comments or interpolated calls") {
  Model m("from torch.utils.data import (DataLoader,  # the loader\n    DistributedSampler)\nimport os  # env\n"
          "x = 'cuda'\ny = f\"{torch.cuda.device_count()} GPUs\"\nimport torch\n");
  std::vector<std::string_view> comments;
  for (TSNode c : m.model.comments()) comments.push_back(m.model.text(c));
  CHECK(comments == std::vector<std::string_view>{"# the loader", "# env"});
  CHECK(m.model.uses_cuda());
  CHECK(m.call("torch.cuda.device_count").canonical == "torch.cuda.device_count");
  CHECK(m.model.bindings().size() == 2);
}

TEST_CASE("the walk skips one-line nodes of leaves only, but not a comment inside a multi-line expression") {
  // `a.b`, `x + 1` and `(y)` are passed over whole (their children are leaves
  // on one line); the comments inside the multi-line expressions are kept
  Model m("import torch\nv = a.b + x + 1\nw = (a +  # inside\n     b)\nz = [1,\n  # alone\n  2]\n"
          "u = (y)\nt = torch.zeros(n, device=a.b)  # after\n");
  std::vector<std::string_view> comments;
  for (TSNode c : m.model.comments()) comments.push_back(m.model.text(c));
  CHECK(comments == std::vector<std::string_view>{"# inside", "# alone", "# after"});
  CHECK(m.model.bindings().size() == 5);  // v, w, z, u, t (imports are aliases)
  const CallSite& zeros = m.call("torch.zeros");
  CHECK(zeros.canonical == "torch.zeros");
  CHECK(m.model.text(m.model.argument(zeros, "device")) == "a.b");
}

TEST_CASE("import targets with whitespace inside dotted names, and chains whose root is not an import") {
  Model m("import torch . distributed as dist\nfrom torch . nn import parallel\nimport  os . path\n"
          "a = dist.barrier()\nb = parallel.DistributedDataParallel(x)\nc = os.path.join(p)\n"
          "d = dist().barrier()\ne = (dist).barrier()\nf = model.dist.barrier()\n");
  CHECK(m.call("dist.barrier").canonical == "torch.distributed.barrier");
  CHECK(m.call("parallel.").canonical == "torch.nn.parallel.DistributedDataParallel");
  CHECK(m.call("os.path.join").canonical == "os.path.join");
  CHECK(m.call("dist().barrier").canonical.empty());
  CHECK(m.call("(dist).barrier").canonical.empty());
  CHECK(m.call("model.dist").canonical.empty());
  CHECK(m.model.calls_to("torch.distributed.barrier").size() == 1);
  CHECK(m.model.calls_named("barrier").size() == 4);
}

TEST_CASE("models alive together on one thread keep their own memory; a model larger than the thread's buffer") {
  // The first model alive on a thread takes the thread's arena buffer, the
  // others start on the heap: each must keep its names while the others come and go.
  auto a = std::make_unique<Model>("import torch.distributed as dist\ndist.all_reduce(t)\n");
  std::string big = "import torch\n";
  for (int i = 0; i < 20000; ++i) big += "torch.cuda.synchronize(); x" + std::to_string(i) + " = f" + std::to_string(i) + "(y)\n";
  {
    Model b(big);
    CHECK(b.model.calls_to("torch.cuda.synchronize").size() == 20000);
    CHECK(b.model.calls_named("f19999").size() == 1);
    CHECK(b.model.bindings().size() == 20000);
  }
  Model c("from torch.utils.data import DataLoader as DL\nDL(ds)\n");
  CHECK(a->call("dist.").canonical == "torch.distributed.all_reduce");
  CHECK(c.call("DL(").canonical == "torch.utils.data.DataLoader");
  a.reset();  // the thread's buffer is free again: the next model takes it
  Model d(big);
  CHECK(d.model.calls_to("torch.cuda.synchronize").size() == 20000);
  CHECK(c.call("DL(").canonical == "torch.utils.data.DataLoader");
  // a source above ModelArena::kPoolAboveBytes: its model lives in a pool
  REQUIRE(2 * big.size() > ModelArena::kPoolAboveBytes);
  Model e(big + big.substr(std::string("import torch\n").size()));
  CHECK(e.model.calls_to("torch.cuda.synchronize").size() == 40000);
  CHECK(e.model.calls_named("f19999").size() == 2);
  CHECK(d.model.calls_to("torch.cuda.synchronize").size() == 20000);
}

TEST_CASE("values: literals, names bound once, argparse defaults, arithmetic; unknown stays unknown") {
  Model m(R"(import os, argparse
p = argparse.ArgumentParser()
p.add_argument("--num-workers", type=int, default=4)
p.add_argument("--lr", default=0.1 * 2)
p.add_argument("--pin", action="store_true")
p.add_argument("-b", "--batch-size", dest="bs", default=32)
p.add_argument("--pin-mem", action="store_true")
p.add_argument("--no-pin-mem", action="store_false", dest="pin_mem")
p.add_argument("--amp", action="store_true")
p.add_argument("--no-amp", action="store_false", dest="amp")
p.set_defaults(amp=True)
args = p.parse_args()
W = 8
twice = 2
twice = 3
env = int(os.environ.get("NUM_WORKERS", 2))
def f(n=4):
    use(a=W * 2 + 1, b=twice, c=args.num_workers, d=args.lr, e=args.pin, g=args.bs, h=n, i=env,
        j=W // 3, k=-W, r=args.pin_mem, s=args.amp, l="cu" "da", m=max(1, W), n=args.missing, o=None, p=int("7"), q=7 if x else 7)
)");
  auto v = [&](const char* kw) { return m.model.value_of(m.arg("use(", kw)); };
  CHECK(v("a").kind == Value::Kind::Int);
  CHECK(v("a").i == 17);
  CHECK_FALSE(v("b").known());  // bound twice
  CHECK(v("c").i == 4);
  CHECK(v("d").f == doctest::Approx(0.2));
  CHECK(v("e").kind == Value::Kind::Bool);
  CHECK(v("e").i == 0);
  CHECK(v("g").i == 32);
  CHECK_FALSE(v("h").known());  // a parameter
  CHECK_FALSE(v("i").known());  // the environment
  CHECK(v("j").i == 2);
  CHECK(v("k").i == -8);
  CHECK(v("l").s == "cuda");
  CHECK(v("m").i == 8);
  CHECK_FALSE(v("n").known());
  CHECK(v("o").kind == Value::Kind::None);
  CHECK(v("p").i == 7);
  CHECK(v("q").i == 7);
  CHECK_FALSE(v("r").known());  // two options disagree on the default
  CHECK(v("s").kind == Value::Kind::Bool);  // set_defaults wins
  CHECK(v("s").i == 1);
}

TEST_CASE("integer overflow past 64 bits is Unknown, never undefined behaviour") {
  Model m(R"(big = 9223372036854775807
use(a=big + 1, b=-(-big - 1), c=big * 2, d=(-big - 1) // -1, e=int("99999999999999999999"), f=int(1e300),
    g=99999999999999999999999, h=big - 1)
)");
  auto v = [&](const char* kw) { return m.model.value_of(m.arg("use(", kw)); };
  for (const char* kw : {"a", "b", "c", "d", "e", "f", "g"}) {
    CAPTURE(kw);
    CHECK_FALSE(v(kw).known());
  }
  CHECK(v("h").i == 9223372036854775806);
}

TEST_CASE("scopes: a function's own binding hides the module's") {
  Model m(R"(workers = 0
def a():
    workers = 4
    use(x=workers)
def b():
    use(y=workers)
)");
  CHECK(m.model.value_of(m.arg("use(x", "x")).i == 4);
  CHECK(m.model.value_of(m.arg("use(y", "y")).i == 0);
}

TEST_CASE("training loops: step loops, epoch loops, functions called from the loop") {
  Model m(R"(import torch
def train_step(model, batch, optimizer):
    loss = model(batch)
    loss.backward()
    optimizer.step()
    helper(loss)
    return loss
def helper(loss):
    a = loss.item()
def train(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        for batch in loader:
            loss = train_step(model, batch, optimizer)
            b = loss.item()
            for p in model.parameters():
                c = p.grad.norm().item()
        d = loss.item()
    e = loss.item()
def validate(model, loader):
    for batch in loader:
        f = model(batch).item()
def recursive(n):
    g = n.item()
    recursive(n)
)");
  auto every = [&](const char* prefix) { return m.model.runs_every_step(m.call(prefix).node, 0); };
  CHECK(every("loss.item()"));           // a (in helper called per step)
  CHECK(every("loss.item()"));
  CHECK(every("p.grad.norm().item()"));  // c: nested non-training loop inside the step loop
  CHECK(every("model(batch).item") == false);  // f: validation loop
  CHECK(every("n.item()") == false);     // g: recursion, never called from a loop
  // b is per-step, d per-epoch, e after the loops
  std::vector<bool> per_step;
  for (const CallSite* c : m.model.calls_named("item")) per_step.push_back(m.model.runs_every_step(c->node, 0));
  CHECK(per_step == std::vector<bool>{true, true, true, false, false, false, false});
  CHECK(m.model.in_training_loop(m.call("model(batch).item").node) == false);
}

TEST_CASE("guards: periodic, final step, main process, rank-dependent") {
  Model m(R"(import torch.distributed as dist
DEBUG_SYNC = False
def train(loader, model, opt, args, rank):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            a()
        if (step + 1) % args.accum != 0:
            b()
        else:
            c()
        if rank == 0:
            d()
        if dist.get_rank() == 0 and step % 100 == 0:
            e()
        if args.local_rank in (-1, 0):
            f()
        if is_main_process():
            g()
        if not args.distributed or rank == 0:
            h()
        if step == len(loader) - 1:
            i()
        if rank == 1:
            j()
        if step % 10:
            k()
        if loss > 0:
            l()
        if master_process:
            n()
        if step % args.log_interval == 0 or last_batch:
            o()
        if step % 10 == 0 or loss > 3:
            p()
        if DEBUG_SYNC:
            q()
        if not args.multiprocessing_distributed or args.rank % ngpus_per_node == 0:
            t()
        if not DEBUG_SYNC:
            r()
)");
  auto guard = [&](const char* call) { return m.model.enclosing_guards(m.call(call).node); };
  CHECK(guard("a()") == kGuardPeriodic);
  CHECK(guard("b()") == 0);
  CHECK(guard("c()") == kGuardPeriodic);
  CHECK((guard("d()") & kGuardMainProcess));
  CHECK((guard("e()") & kGuardMainProcess));
  CHECK((guard("e()") & kGuardPeriodic));
  CHECK((guard("f()") & kGuardMainProcess));
  CHECK((guard("g()") & kGuardMainProcess));
  CHECK((guard("h()") & kGuardMainProcess));
  CHECK(guard("i()") == kGuardFinalStep);
  CHECK(guard("j()") == kGuardRankDependent);
  CHECK(guard("k()") == 0);
  CHECK(guard("l()") == 0);
  CHECK((guard("n()") & kGuardMainProcess));
  CHECK(guard("o()") == (kGuardPeriodic | kGuardFinalStep));
  CHECK(guard("p()") == 0);  // one side runs whenever the loss is high
  CHECK(guard("q()") == kGuardOffByDefault);
  CHECK((guard("t()") & kGuardMainProcess));
  CHECK_FALSE((guard("t()") & kGuardPeriodic));
  CHECK(guard("r()") == 0);
  CHECK(m.model.runs_every_step(m.call("a()").node, kGuardPeriodic) == false);
  CHECK(m.model.runs_every_step(m.call("b()").node, kGuardPeriodic) == true);
  CHECK(m.model.runs_every_step(m.call("j()").node, kGuardMainProcess) == true);
}

TEST_CASE("rank, world size, division and device values") {
  Model m(R"(import os, torch
import torch.distributed as dist
local_rank = int(os.environ["LOCAL_RANK"])
ws = dist.get_world_size()
n = torch.cuda.device_count()
per_gpu = args.batch_size // ws
dev = torch.device(f"cuda:{local_rank}")
plain = torch.device("cuda")
use(a=local_rank, b=dist.get_rank(), c=ws, d=n, e=per_gpu, f=args.batch_size // 2, g=dev, h=plain,
    i="cuda", j=3, k=torch.float16, l=some_param_device, m=int(os.environ.get("WORLD_SIZE", 1)))
)");
  auto a = [&](const char* kw) { return m.arg("use(", kw); };
  CHECK(m.model.is_rank_value(a("a")));
  CHECK(m.model.is_rank_value(a("b")));
  CHECK_FALSE(m.model.is_rank_value(a("c")));
  CHECK(m.model.is_world_size_value(a("c")));
  CHECK(m.model.is_world_size_value(a("d")));
  CHECK(m.model.is_world_size_value(a("m")));
  CHECK(m.model.divides_by_world_size(a("e")));
  CHECK_FALSE(m.model.divides_by_world_size(a("f")));
  CHECK(m.model.may_be_indexed_device(a("g")));
  CHECK_FALSE(m.model.may_be_indexed_device(a("h")));
  CHECK_FALSE(m.model.may_be_indexed_device(a("i")));
  CHECK(m.model.may_be_indexed_device(a("j")));
  CHECK_FALSE(m.model.may_be_indexed_device(a("k")));
  CHECK(m.model.may_be_indexed_device(a("l")));  // unknown: cannot rule it out
  CHECK(m.model.env_var_read(a("m")) == "WORLD_SIZE");
}

TEST_CASE("file facts: distributed and CUDA") {
  CHECK(Model("import torch.distributed as dist\ndist.init_process_group('nccl')\n").model.is_distributed());
  CHECK(Model("import os\nr = os.environ['LOCAL_RANK']\n").model.is_distributed());
  CHECK_FALSE(Model("import torch\nx = torch.zeros(3)\n").model.is_distributed());
  CHECK(Model("import torch\nx = torch.zeros(3).cuda()\n").model.uses_cuda());
  CHECK(Model("device = 'cuda' if ok else 'cpu'\n").model.uses_cuda());
  CHECK_FALSE(Model("import torch\nok = torch.cuda.is_available()\nx = torch.zeros(3)\n").model.uses_cuda());
  CHECK(Model("import torch.distributed as dist\ndist.init_process_group(backend='gloo')\n").model.gloo_backend());
}

TEST_CASE("syntax errors are located and the rest is still modelled") {
  Model m("import torch\ndef f(:\n    pass\nx = torch.zeros(1).cuda()\n");
  REQUIRE(m.model.first_syntax_error());
  CHECK(m.source.lines().position(ts_node_start_byte(m.model.first_syntax_error()->node)).row == 2);
  CHECK(m.model.uses_cuda());
}

TEST_CASE("errors tree-sitter accepts: indentation, tabs, Python 2 statements, reserved words") {
  auto msg = [](std::string src) {
    Model m(std::move(src));
    return m.model.first_syntax_error() ? m.model.first_syntax_error()->message : std::string();
  };
  CHECK(msg("for x in y:\n    a()\n        b()\n") == "unexpected indent");
  CHECK(msg("for x in y:\n        a()\n    b()\n").find("unindent") != std::string::npos);
  CHECK(msg("  x = 1\n") == "unexpected indent");
  CHECK(msg("if x:\n\ta()\n        b()\n") == "inconsistent use of tabs and spaces in indentation");
  CHECK(msg("print 'hi'\n").find("Python 2 print") != std::string::npos);
  CHECK(msg("x.cuda(async=True)\n") == "`async` is a reserved keyword");
  CHECK(msg("if x:\n\ta()\n\tb()\nasync def f():\n    await g()\n") == "");
  CHECK(msg("x = (1,\n        2)\ny = 3; z = 4\nif a: b()\nclass C:\n    # c\n  # d\n    pass\n") == "");
}

TEST_CASE("a BOM is skipped by the parser and offsets stay absolute") {
  Model m("\xEF\xBB\xBFimport torch\nx = torch.zeros(1).cuda()\n");
  CHECK_FALSE(m.model.first_syntax_error());
  CHECK(m.model.text(m.call("torch.zeros").node).substr(0, 5) == "torch");
}

// The walk fills in each call's callee, receiver and method and each keyword
// argument's name and value from the order of their children; they must be
// what tree-sitter's field lookups give, on every fixture and example (with
// and without syntax errors) and on comment-laden calls.
namespace {
void check_parts_match_fields(const std::string& text, const std::string& name) {
  ddplint::testing::ParsedModel pm(text);
  const Kinds& k = kinds();
  const SemanticModel& m = pm.model;
  for (const CallSite& c : m.calls()) {
    CAPTURE(name);
    CAPTURE(std::string(m.text(c.node)).substr(0, 80));
    TSNode callee = ts_node_child_by_field_id(c.node, k.f_function);
    REQUIRE(ts_node_eq(c.callee, callee));
    TSNode receiver{}, method{};
    if (!ts_node_is_null(callee) && ts_node_symbol(callee) == k.attribute) {
      receiver = ts_node_child_by_field_id(callee, k.f_object);
      method = ts_node_child_by_field_id(callee, k.f_attribute);
    } else if (!ts_node_is_null(callee) && ts_node_symbol(callee) == k.identifier) {
      method = callee;
    }
    CHECK(ts_node_eq(c.receiver, receiver));
    CHECK(c.method == (ts_node_is_null(method) ? std::string_view{} : m.text(method)));
    for (const Argument& a : m.arguments(c)) {
      if (a.kind != Argument::Kind::Keyword) continue;
      CHECK(ts_node_eq(a.value, ts_node_child_by_field_id(a.node, k.f_value)));
      CHECK(a.keyword == m.text(ts_node_child_by_field_id(a.node, k.f_name)));
    }
  }
}
}  // namespace

TEST_CASE("calls' and keyword arguments' parts from the walk equal field lookups") {
  std::size_t files = 0;
  for (const char* dir : {"fixtures", "examples"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(DDPLINT_SOURCE_DIR) / dir)) {
      if (e.path().extension() != ".py") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      check_parts_match_fields(text, e.path().string());
      ++files;
    }
  }
  CHECK(files > 50);
  check_parts_match_fields("f(  # c\n  a=1,  # d\n  b  # e\n  =  # f\n  g(x).h(y=2))\n", "comments");
  check_parts_match_fields("(obj  # c\n  .  # d\n  meth)(k=v)\nf()()\nx.y.z(w=u.v())\n", "attributes");
  check_parts_match_fields("f(a=1, b=\n", "broken");
}

TEST_CASE("mentions_in_code: names, attributes and strings used as values count; comments and docstrings do not") {
  testing::ParsedModel in_comment("\"\"\"Set CUDA_VISIBLE_DEVICES first.\"\"\"\n# CUDA_VISIBLE_DEVICES=0,1\nx = 1\n");
  CHECK_FALSE(in_comment.model.mentions_in_code("CUDA_VISIBLE_DEVICES"));
  testing::ParsedModel in_value("import os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"  # CUDA_VISIBLE_DEVICES\n");
  CHECK(in_value.model.mentions_in_code("CUDA_VISIBLE_DEVICES"));
  testing::ParsedModel in_function_docstring("def f():\n    \"\"\"uses no_sync\"\"\"\n    return 1\n");
  CHECK_FALSE(in_function_docstring.model.mentions_in_code("no_sync"));
  testing::ParsedModel attribute("import torch\nscaler = torch.amp.GradScaler(\"cuda\")\n");
  CHECK(attribute.model.mentions_in_code("GradScaler"));
  CHECK(attribute.model.mentions_in_code(".amp.Grad"));  // spans several tokens of one expression
  CHECK_FALSE(attribute.model.mentions_in_code("autocast"));
  CHECK_FALSE(attribute.model.mentions_in_code(""));
}

TEST_CASE("values: the project's launches give argparse options and the world size") {
  const std::string src = R"(import os, argparse
import torch.distributed as dist
p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=0)
p.add_argument("-b", "--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--lr-decay", type=float, default=0.5)
p.add_argument("--pin", action="store_true")
p.add_argument("--name", default="run")
p.add_argument("--steps", type=parse_steps, default=10)
p.add_argument("--sizes", type=int, nargs="+", default=[1])
args = p.parse_args()
use(a=args.workers, b=args.batch_size, c=args.lr, d=args.lr_decay, e=args.pin, f=args.name, g=args.steps,
    h=args.sizes, w=dist.get_world_size(), x=int(os.environ["WORLD_SIZE"]), y=os.environ.get("WORLD_SIZE"),
    z=dist.get_world_size(group))
)";
  using Arg = LaunchOfScript::Argument;
  auto values = [&](std::vector<LaunchOfScript> launches) {
    ProjectFacts facts;
    facts.launched_by = std::move(launches);
    SourceFile source("train.py", src);
    SyntaxTree tree = parse_python(source);
    SemanticModel model(source, tree, &facts);
    std::map<std::string, Value> out;
    const CallSite* use = nullptr;
    for (const CallSite& c : model.calls())
      if (c.method == "use") use = &c;
    REQUIRE(use != nullptr);
    for (const char* kw : {"a", "b", "c", "d", "e", "f", "g", "h", "w", "x", "y", "z"})
      out[kw] = model.value_of(model.argument(*use, kw));
    return out;
  };
  LaunchOfScript torchrun{.path = "run.sh", .line = 2, .torchrun = true, .processes_per_node = 8, .world_size = 16};
  torchrun.arguments = {Arg{"--workers", "8", true}, Arg{"-b", "64", true}, Arg{"--lr", "0.4", true},
                        Arg{"--pin", std::nullopt, false}, Arg{"--name", "x", true}, Arg{"--steps", "5", true},
                        Arg{"--sizes", "2", true}};
  auto v = values({torchrun});
  CHECK(v["a"].i == 8);
  CHECK(v["b"].i == 64);
  CHECK(v["c"].f == doctest::Approx(0.4));
  CHECK(v["d"].f == doctest::Approx(0.5));  // `--lr` is an option of its own, not an abbreviation of --lr-decay
  CHECK(v["e"].kind == Value::Kind::Bool);
  CHECK(v["e"].i == 1);
  CHECK(v["f"].s == "x");
  CHECK_FALSE(v["g"].known());  // the script's own converter
  CHECK_FALSE(v["h"].known());  // nargs
  CHECK(v["w"].i == 16);
  CHECK(v["x"].i == 16);
  CHECK(v["y"].s == "16");
  CHECK_FALSE(v["z"].known());  // a group's size

  // no launch: the defaults, and no world size
  v = values({});
  CHECK(v["a"].i == 0);
  CHECK_FALSE(v["w"].known());

  // a launch that gives nothing keeps the default; an abbreviation or "$@" may give anything
  LaunchOfScript plain{.path = "a.sh", .line = 1, .world_size = 16};
  v = values({plain});
  CHECK(v["a"].i == 0);
  CHECK(v["w"].i == 16);
  LaunchOfScript abbreviated = plain;
  abbreviated.arguments = {Arg{"--work", "4", true}, Arg{"-b8", std::nullopt, false}};
  v = values({abbreviated});
  CHECK_FALSE(v["a"].known());
  CHECK_FALSE(v["b"].known());
  LaunchOfScript opaque = plain;
  opaque.arguments_opaque = true;
  CHECK_FALSE(values({opaque})["a"].known());

  // launches that disagree: unknown; that agree: the value
  LaunchOfScript other = torchrun;
  other.world_size = 8;
  other.arguments = {Arg{"--workers", "2", true}};
  v = values({torchrun, other});
  CHECK_FALSE(v["a"].known());
  CHECK_FALSE(v["w"].known());
  CHECK(v["d"].f == doctest::Approx(0.5));  // neither gives it: the default
  other.arguments = {Arg{"--workers=8", std::nullopt, false}, Arg{"--workers", "8", true}};
  other.world_size = 16;
  v = values({torchrun, other});
  CHECK(v["a"].i == 8);
  CHECK(v["w"].i == 16);
}
