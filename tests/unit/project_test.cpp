// The project index: roots, import resolution, facts across files, cycles and
// missing modules, and that a file's facts do not depend on what was named.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

#include "linter/lint.hpp"
#include "linter/project.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
namespace fs = std::filesystem;

namespace {

struct TempProject {
  fs::path root;
  TempProject() {
    root = fs::temp_directory_path() / ("ddplint_project_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(counter()++));
    fs::remove_all(root);
    fs::create_directories(root);
    write("pyproject.toml", "");
  }
  ~TempProject() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  void write(const std::string& relative, const std::string& text) const {
    fs::path p = root / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path path(const std::string& relative) const { return (root / relative).lexically_normal(); }
};

const char* kMain =
    "import torch\n"
    "import engine\n"
    "model = torch.nn.Linear(4, 4).cuda()\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for epoch in range(10):\n"
    "    engine.train_one_epoch(model, opt)\n";
const char* kEngine =
    "from util import helpers\n"
    "def train_one_epoch(model, opt):\n"
    "    for x in range(100):\n"
    "        loss = model(x).sum()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        helpers.norms(model)\n";
const char* kHelpers =
    "def norms(model):\n"
    "    return [p.grad.norm().item() for p in model.parameters()]\n";

}  // namespace

TEST_CASE("project root: the nearest folder with a marker, else the file's folder") {
  TempProject t;
  t.write("a/b/c.py", "");
  CHECK(project_root(t.path("a/b/c.py")) == t.root.lexically_normal());
  t.write("a/setup.cfg", "");
  CHECK(project_root(t.path("a/b/c.py")) == t.path("a"));
}

TEST_CASE("facts flow main -> engine -> helpers: training callees, CUDA, per-step entries") {
  TempProject t;
  t.write("main.py", kMain);
  t.write("engine.py", kEngine);
  t.write("util/__init__.py", "");
  t.write("util/helpers.py", kHelpers);
  Project p(t.root.lexically_normal());
  CHECK(p.file_count() == 4);
  const ProjectFacts* main_facts = p.facts_for(t.path("main.py"));
  REQUIRE(main_facts != nullptr);
  REQUIRE(main_facts->callees.count("engine.train_one_epoch") == 1);
  CHECK(main_facts->callees.at("engine.train_one_epoch") == ProjectFacts::Trains::InLoop);
  const ProjectFacts* engine_facts = p.facts_for(t.path("engine.py"));
  REQUIRE(engine_facts != nullptr);
  CHECK(engine_facts->cuda);
  CHECK(engine_facts->loop_entries.count("train_one_epoch") == 1);
  CHECK(engine_facts->step_entries.empty());  // called once per epoch, not per step
  const ProjectFacts* helper_facts = p.facts_for(t.path("util/helpers.py"));
  REQUIRE(helper_facts != nullptr);
  CHECK(helper_facts->cuda);  // through engine.py, which inherits it from main.py
  REQUIRE(helper_facts->step_entries.count("norms") == 1);
  // shown from the working folder, like the findings' own paths
  CHECK(helper_facts->step_entries.at("norms").path ==
        t.path("engine.py").lexically_relative(fs::current_path()).generic_string());
  CHECK(helper_facts->step_entries.at("norms").line == 7);
  CHECK(p.rounds() >= 2);
}

TEST_CASE("a helper's finding names the call that makes it per step, whatever file was named") {
  TempProject t;
  t.write("main.py", kMain);
  t.write("engine.py", kEngine);
  t.write("util/__init__.py", "");
  t.write("util/helpers.py", kHelpers);
  ProjectSet set;
  auto project = set.project_of(t.path("util/helpers.py"));
  REQUIRE(project);
  CHECK(set.project_of(t.path("main.py")) == project);  // one index per root
  SourceFile source(t.path("util/helpers.py").string(), kHelpers);
  RuleSelection selection({"DDP401"}, {});
  LintResult alone = lint(source, rules::all(), selection);
  CHECK(alone.diagnostics.empty());
  LintResult in_project =
      lint(source, rules::all(), selection, RuleOptions{}, true, project->facts_for(t.path("util/helpers.py")));
  REQUIRE(in_project.diagnostics.size() == 1);
  std::string shown = t.path("engine.py").lexically_relative(fs::current_path()).generic_string();
  std::string main = t.path("main.py").lexically_relative(fs::current_path()).generic_string();
  // the chain: main.py's epoch loop calls the engine, whose step loop calls the helper
  const Diagnostic& d = in_project.diagnostics[0];
  CHECK_MESSAGE(d.message.find("(every step through " + main + ":6 \u2192 " + shown + ":7)") != std::string::npos,
                d.message);
  REQUIRE(d.related.size() == 2);
  CHECK(d.related[0].path == main);
  CHECK(d.related[0].line == 6);
  CHECK(d.related[1].path == shown);
  CHECK(d.related[1].line == 7);
}

TEST_CASE("cycles, missing modules and a CPU-only caller add no facts that are not proven") {
  TempProject t;
  t.write("a.py", "import b\nimport missing_module\ndef f():\n    b.g()\n");
  t.write("b.py", "import a\ndef g():\n    a.f()\n");
  t.write("cpu.py",
          "import torch\nfrom helpers import norms\nmodel = torch.nn.Linear(2, 2)\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
          "for x in range(3):\n    model(x).sum().backward()\n    opt.step()\n    norms(model)\n");
  t.write("helpers.py", kHelpers);
  Project p(t.root.lexically_normal());
  // what is proven: the cycle's calls and their unused results; nothing trains, nothing is CUDA
  for (const char* name : {"a.py", "b.py", "helpers.py"}) {
    const ProjectFacts* f = p.facts_for(t.path(name));
    if (f == nullptr) continue;
    for (const auto& entry : f->callees)  // known, and training nothing
      CHECK_MESSAGE(entry.second == ProjectFacts::Trains::None, name << " " << entry.first);
    CHECK_MESSAGE(f->step_entries.empty(), name);  // helpers.py: per step only on the CPU
    CHECK_MESSAGE(f->loop_entries.empty(), name);
    CHECK_MESSAGE(!f->cuda, name);
  }
  const ProjectFacts* b = p.facts_for(t.path("b.py"));
  REQUIRE(b != nullptr);
  REQUIRE(b->result_uses.count("g") == 1);
  CHECK(b->result_uses.at("g").logging_only);  // `b.g()` as a statement: its result feeds nothing
  CHECK(p.rounds() <= Project::kMaxRounds);
}

TEST_CASE("relative imports and package re-exports resolve") {
  TempProject t;
  t.write("pkg/__init__.py", "from .step import train_step\n");
  t.write("pkg/step.py", "def train_step(model, opt):\n    model(1).sum().backward()\n    opt.step()\n");
  t.write("run.py",
          "import torch\nfrom pkg import train_step\nmodel = torch.nn.Linear(2, 2).cuda()\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(9):\n    train_step(model, opt)\n");
  Project p(t.root.lexically_normal());
  const ProjectFacts* run = p.facts_for(t.path("run.py"));
  REQUIRE(run != nullptr);
  REQUIRE(run->callees.count("pkg.train_step") == 1);
  CHECK(run->callees.at("pkg.train_step") == ProjectFacts::Trains::Direct);
}

#include "parsed_model.hpp"

TEST_CASE("certainly_host_value: literals, containers, .item(), builtins, every binding host; bounded") {
  ddplint::testing::ParsedModel p(
      "import torch\n"
      "last = 0.0\n"
      "last = loss.item()\n"
      "t = torch.zeros(3)\n"
      "x = 1\n" + [] {
        std::string s;
        for (int i = 0; i < 40; ++i) s += "x = x + x\n";
        return s;
      }() +
      "f(3, 'a', {'lr': 1e-3, 'n': [1, 2]}, last, len(q), t, x, float(t), (1, t))\n");
  const CallSite& c = p.call("f(3");
  auto host = [&](int i) { return p.model.certainly_host_value(p.model.argument(c, "", i)); };
  CHECK(host(0));
  CHECK(host(1));
  CHECK(host(2));
  CHECK(host(3));   // both bindings of `last` hold host values
  CHECK(host(4));
  CHECK_FALSE(host(5));  // a tensor
  CHECK_FALSE(host(6));  // past the budget: not proven (and it returns at once)
  CHECK(host(7));
  CHECK_FALSE(host(8));  // a tuple holding a tensor
}

TEST_CASE("certainly_host_value: a container bound empty holds what is put in it later") {
  ddplint::testing::ParsedModel p(
      "import torch\n"
      "def step(loss, lr):\n"
      "    logs = {}\n"
      "    logs['loss'] = loss\n"
      "    rates = []\n"
      "    rates.append(lr.item())\n"
      "    losses = []\n"
      "    losses.append(loss)\n"
      "    names = {}\n"
      "    names['a'] = 'b'\n"
      "    f(logs, rates, losses, names)\n");
  const CallSite& c = p.call("f(logs");
  auto host = [&](int i) { return p.model.certainly_host_value(p.model.argument(c, "", i)); };
  CHECK_FALSE(host(0));  // a tensor was stored in it
  CHECK(host(1));        // only .item() results
  CHECK_FALSE(host(2));
  CHECK(host(3));
}

TEST_CASE("resolution as Python imports: a package wins over a module; a package's module imports from the root") {
  TempProject t;
  const char* trains = "def run(model, opt):\n    model(1).sum().backward()\n    opt.step()\n";
  t.write("engine.py", "def run(model, opt):\n    pass\n");
  t.write("engine/__init__.py", trains);
  t.write("utils.py", trains);
  t.write("pkg/__init__.py", "");
  t.write("pkg/utils.py", "def run(model, opt):\n    pass\n");
  t.write("pkg/loop.py", "import utils\ndef go(model, opt):\n    for i in range(3):\n        utils.run(model, opt)\n");
  t.write("main.py",
          "import torch\nimport engine\nfrom pkg import loop\nmodel = torch.nn.Linear(2, 2).cuda()\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(9):\n    engine.run(model, opt)\n"
          "loop.go(model, opt)\n");
  Project p(t.root.lexically_normal());
  const ProjectFacts* main_facts = p.facts_for(t.path("main.py"));
  REQUIRE(main_facts != nullptr);
  REQUIRE(main_facts->callees.count("engine.run") == 1);  // engine/__init__.py, not engine.py
  CHECK(main_facts->callees.at("engine.run") == ProjectFacts::Trains::Direct);
  const ProjectFacts* loop = p.facts_for(t.path("pkg/loop.py"));
  REQUIRE(loop != nullptr);
  REQUIRE(loop->callees.count("utils.run") == 1);  // the root's utils.py, not pkg/utils.py
}

TEST_CASE("a function called once from a CUDA file does not make its file CUDA") {
  TempProject t;
  t.write("model_def.py",
          "import torch\ndef build():\n    return torch.nn.Linear(4, 4)\n"
          "if __name__ == '__main__':\n    m = build()\n    opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
          "    for i in range(3):\n        loss = m(torch.randn(2, 4)).sum()\n        loss.backward()\n"
          "        opt.step()\n        print(loss.item())\n");
  t.write("train.py",
          "import torch\nimport model_def\nmodel = model_def.build().cuda()\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(9):\n"
          "    model(torch.randn(2, 4, device='cuda')).sum().backward()\n    opt.step()\n");
  Project p(t.root.lexically_normal());
  const ProjectFacts* f = p.facts_for(t.path("model_def.py"));
  CHECK((f == nullptr || !f->cuda));
}

TEST_CASE("call chains across files: a per-step cycle converges, and no chain grows past kMaxChain") {
  TempProject t;
  t.write("main.py",
          "import torch\nimport a\nmodel = torch.nn.Linear(2, 2).cuda()\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(9):\n"
          "    model(i).sum().backward()\n    opt.step()\n    a.f(model)\n");
  t.write("a.py", "import b\nimport c\ndef f(m):\n    b.g(m)\ndef h(m):\n    c.k(m)\n    b.g(m)\n");
  t.write("b.py", "import a\ndef g(m):\n    a.h(m)\n");
  t.write("c.py", "def k(m):\n    return m.weight.norm().item()\n");
  Project p(t.root.lexically_normal());
  const ProjectFacts* c = p.facts_for(t.path("c.py"));
  REQUIRE(c != nullptr);
  REQUIRE(c->step_entries.count("k") == 1);
  const ProjectCaller& k = c->step_entries.at("k");
  CHECK(k.line == 6);  // a.py's call
  CHECK(k.before.size() <= ProjectFacts::kMaxChain);
  for (const CallLink& link : k.before) CHECK(link.path != k.path);  // a chain starts after its last visit to a.py
  CHECK(p.rounds() < Project::kMaxRounds);  // converged, not cut off
}

TEST_CASE("import edges: parenthesised and continued imports, `;`, one-liners, CR line breaks, a src/ layout") {
  const char* kStep = "def train_step(model, opt):\n    model(1).sum().backward()\n    opt.step()\n";
  auto trains = [&](const char* importer, const std::string& canonical, bool src_layout = false) {
    TempProject t;
    std::string dir = src_layout ? "src/" : "";
    t.write(dir + "pkg/__init__.py", "");
    t.write(dir + "pkg/steps.py", kStep);
    t.write("run.py", importer);
    Project p(t.root.lexically_normal());
    const ProjectFacts* run = p.facts_for(t.path("run.py"));
    return run != nullptr && run->callees.count(canonical) == 1 &&
           run->callees.at(canonical) == ProjectFacts::Trains::Direct;
  };
  const std::string loop = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
                           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(9):\n";
  CHECK(trains(("from pkg import (\n    other,\n    steps,  # the training step\n)\n" + loop +
                "    steps.train_step(model, opt)\n").c_str(),
               "pkg.steps.train_step"));
  CHECK(trains(("from pkg import other, \\\n    steps\n" + loop + "    steps.train_step(model, opt)\n").c_str(),
               "pkg.steps.train_step"));
  CHECK(trains(("import os; import pkg.steps as s\n" + loop + "    s.train_step(model, opt)\n").c_str(),
               "pkg.steps.train_step"));
  CHECK(trains(("try: from pkg import steps\nexcept ImportError: steps = None\n" + loop +
                "    steps.train_step(model, opt)\n").c_str(),
               "pkg.steps.train_step"));
  std::string cr = "from pkg import steps\n" + loop + "    steps.train_step(model, opt)\n";
  std::replace(cr.begin(), cr.end(), '\n', '\r');
  CHECK(trains(cr.c_str(), "pkg.steps.train_step"));
  CHECK(trains(("from pkg import steps\n" + loop + "    steps.train_step(model, opt)\n").c_str(),
               "pkg.steps.train_step", true));
  // a name in a comment or a string is not an import that adds facts
  CHECK_FALSE(trains(("# from pkg import steps\n" + loop + "    steps.train_step(model, opt)\n").c_str(),
                     "pkg.steps.train_step"));
}

TEST_CASE("the DDP model passed to another file's function: which parameters get it, and from where") {
  TempProject t;
  t.write("main.py",
          "import torch\n"
          "from torch.nn.parallel import DistributedDataParallel as DDP\n"
          "import engine\n"
          "net = torch.nn.Linear(4, 4).cuda()\n"
          "model = DDP(net, device_ids=[0])\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
          "for epoch in range(10):\n"
          "    engine.train_one_epoch(opt, model=model)\n"
          "    engine.probe(net, opt)\n");
  t.write("engine.py",
          "def train_one_epoch(opt, model):\n"
          "    pass\n"
          "def probe(net, opt):\n"
          "    pass\n");
  Project p(t.root.lexically_normal());
  const ProjectFacts* facts = p.facts_for(t.path("engine.py"));
  REQUIRE(facts != nullptr);
  REQUIRE(facts->ddp_parameters.count("train_one_epoch") == 1);
  CHECK(facts->ddp_parameters.at("train_one_epoch").parameters == std::set<std::string, std::less<>>{"model"});
  CHECK(facts->ddp_parameters.at("train_one_epoch").caller.line == 8);
  CHECK(facts->ddp_parameters.count("probe") == 0);  // the module before the wrap: `net` is never a DDP result
}

TEST_CASE("a launched script's command line passed to another file's function: its option values, as launched") {
  TempProject t;
  const char* main_py =
      "import argparse\n"
      "import engine\n"
      "parser = argparse.ArgumentParser()\n"
      "parser.add_argument('--accum_iter', type=int, default=1)\n"
      "parser.add_argument('--epochs', type=int, default=10)\n"
      "parser.add_argument('--lr', type=float, default=0.1)\n"
      "args = parser.parse_args()\n"
      "engine.train_one_epoch(None, args=args)\n"
      "engine.evaluate(args, 3)\n";
  t.write("main.py", main_py);
  t.write("engine.py",
          "def train_one_epoch(model, args=None):\n"
          "    return args.accum_iter\n"
          "def evaluate(args, n):\n"
          "    return args.epochs\n");
  t.write("run.sh", "#!/bin/bash\ntorchrun --nproc_per_node 8 main.py --epochs 3\n");
  {
    Project p(t.root.lexically_normal());
    const ProjectFacts* facts = p.facts_for(t.path("engine.py"));
    REQUIRE(facts != nullptr);
    REQUIRE(facts->command_line_parameters.count("train_one_epoch") == 1);
    const auto& values = facts->command_line_parameters.at("train_one_epoch").at("args");
    CHECK(values.at("accum_iter") == 1);   // the default: the launch does not give it
    CHECK(values.at("epochs") == 3);       // what the launch gives
    CHECK(values.count("lr") == 0);        // not an integer
    REQUIRE(facts->command_line_parameters.count("evaluate") == 1);  // by position
    CHECK(facts->command_line_parameters.at("evaluate").count("n") == 0);
  }
  // a second caller that passes something else: no agreed value
  t.write("other.py", "import engine\nengine.train_one_epoch(None, args=object())\n");
  {
    Project p(t.root.lexically_normal());
    const ProjectFacts* facts = p.facts_for(t.path("engine.py"));
    REQUIRE(facts != nullptr);
    CHECK(facts->command_line_parameters.count("train_one_epoch") == 0);
  }
  // a script no launch script starts: its defaults are not how it runs
  fs::remove(t.path("other.py"));
  fs::remove(t.path("run.sh"));
  {
    Project p(t.root.lexically_normal());
    const ProjectFacts* facts = p.facts_for(t.path("engine.py"));
    CHECK((facts == nullptr || facts->command_line_parameters.empty()));
  }
}

TEST_CASE("launch scripts: the script they start from their folder or any folder above it; scripts the project lacks") {
  TempProject t;
  t.write("recipe/main.py", "import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\n");
  t.write("pretrain.py", "import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\n");
  const std::string run =
      "#!/bin/bash\n"
      "torchrun --nproc_per_node 8 main.py --epochs 3\n"      // recipe/main.py, one folder up
      "torchrun --nproc_per_node 8 pretrain.py\n"             // the root's, two folders up
      "torchrun --nproc_per_node 8 tools/train.py cfg.py\n"   // no such file anywhere
      "torchrun --nproc_per_node 8 $SCRIPT\n";               // not a path: not known
  t.write("recipe/exps/run.sh", run);
  Project p(t.root.lexically_normal());
  const ProjectFacts* facts = p.launch_facts_for(t.path("recipe/exps/run.sh"), run);
  REQUIRE(facts != nullptr);
  REQUIRE(facts->launched_script("main.py") != nullptr);
  CHECK(facts->launched_script("main.py")->path == "recipe/main.py");
  REQUIRE(facts->launched_script("pretrain.py") != nullptr);
  CHECK(facts->launched_script("pretrain.py")->path == "pretrain.py");
  CHECK(facts->launched_script("tools/train.py") == nullptr);
  CHECK(facts->missing_scripts == std::set<std::string, std::less<>>{"tools/train.py"});
  // and the Python side: recipe/main.py is launched by the script one folder down
  const ProjectFacts* main_facts = p.facts_for(t.path("recipe/main.py"));
  REQUIRE(main_facts != nullptr);
  REQUIRE(main_facts->launched_by.size() == 1);
  CHECK(main_facts->launched_by[0].path == "recipe/exps/run.sh");
}

TEST_CASE("per-step calls only for the logs: the result and what is passed; another caller's use does not count") {
  TempProject t;
  t.write("train.py",
          "import torch\n"
          "import helpers\n"
          "model = torch.nn.Linear(4, 4).cuda()\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
          "for step in range(100):\n"
          "    loss = model(torch.ones(4, device='cuda')).sum()\n"
          "    loss.backward()\n"
          "    opt.step()\n"
          "    gathered = helpers.gather(model.weight.sum())\n"
          "    kept = helpers.keep([loss])\n"
          "    (loss * 0).backward()\n"
          "    a, b = helpers.reduce_all([loss.detach(), step * 2])\n"
          "    print(f'{a} {b} {gathered.mean()} {kept}')\n");
  t.write("evaluate.py",
          "import helpers\n"
          "def score(x):\n"
          "    if helpers.gather(x).sum() > 0:\n"
          "        return 1\n"
          "    return 0\n");
  t.write("helpers.py",
          "def reduce_all(values):\n    return values\n"
          "def gather(x):\n    return x\n"
          "def keep(values):\n    return values\n");
  Project p(t.root.lexically_normal());
  const ProjectFacts* facts = p.facts_for(t.path("helpers.py"));
  REQUIRE(facts != nullptr);
  // `a, b = ...` lands in names read only by the print; `loss.detach()` shares
  // loss's storage, and loss is not read again before the print
  REQUIRE(facts->logged_calls.count("reduce_all") == 1);
  CHECK(facts->logged_calls.at("reduce_all").line == 12);
  // evaluate.py computes with gather's result, but the per-step call decides
  REQUIRE(facts->result_uses.count("gather") == 1);
  CHECK(facts->result_uses.at("gather").logging_only);
  CHECK(facts->logged_calls.count("gather") == 1);
  // `[loss]` passes loss itself, which the step then computes with: not only for the logs
  CHECK(facts->logged_calls.count("keep") == 0);
}

TEST_CASE("absolute_normal: a normal absolute path as it is, any other made absolute and normal") {
  namespace fs = std::filesystem;
  CHECK(absolute_normal("/a/b/c.py") == fs::path("/a/b/c.py"));
  CHECK(absolute_normal("/") == fs::path("/"));
  CHECK(absolute_normal("/a/./b.py") == fs::path("/a/b.py"));
  CHECK(absolute_normal("/a/x/../b.py") == fs::path("/a/b.py"));
  CHECK(absolute_normal("/a//b.py") == fs::path("/a/b.py"));
  CHECK(absolute_normal("/a/b/") == fs::path("/a/b/"));
  CHECK(absolute_normal("/a/.hidden/b.py") == fs::path("/a/.hidden/b.py"));
  CHECK(absolute_normal("/a/..b/c.py") == fs::path("/a/..b/c.py"));
  CHECK(absolute_normal("rel/x.py") == (fs::current_path() / "rel/x.py").lexically_normal());
  CHECK(absolute_normal("./rel/../x.py") == (fs::current_path() / "x.py").lexically_normal());
}
