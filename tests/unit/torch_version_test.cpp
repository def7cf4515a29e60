// The torch releases a project declares (linter/torch_version.hpp): each
// declaration format, the ranges their specifiers give, the folder walk, and
// `target-torch`.
#include <doctest/doctest.h>

#include <fstream>

#include "linter/config.hpp"
#include "linter/torch_version.hpp"
#include "rules/registry.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ddplint;
namespace fs = std::filesystem;
using ddplint_test::TempDir;

namespace {
TorchVersion v(int a, int b, int c = 0) { return TorchVersion{a, b, c}; }
}  // namespace

TEST_CASE("torch versions: the release segment only") {
  CHECK(TorchVersion::parse("2.3.1") == v(2, 3, 1));
  CHECK(TorchVersion::parse("1.8.0+cu111") == v(1, 8, 0));
  CHECK(TorchVersion::parse("2.1.0a0") == v(2, 1, 0));
  CHECK(TorchVersion::parse("2") == v(2, 0, 0));
  CHECK_FALSE(TorchVersion::parse("latest").has_value());
  CHECK_FALSE(TorchVersion::parse("123456").has_value());
  CHECK(v(2, 3).to_string() == "2.3");
  CHECK(v(1, 13, 1).to_string() == "1.13.1");
}

TEST_CASE("torch requirements: PEP 508 specifiers give a range") {
  auto r = torch_requirement("torch>=1.7.0,!=1.12.0");
  REQUIRE(r);
  CHECK(r->lowest == v(1, 7, 0));
  CHECK_FALSE(r->below.has_value());
  r = torch_requirement("torch==2.1.1");
  REQUIRE(r);
  CHECK(r->lowest == v(2, 1, 1));
  CHECK(r->below == v(2, 1, 2));
  r = torch_requirement("torch~=2.1.0");
  REQUIRE(r);
  CHECK(r->below == v(2, 2, 0));
  r = torch_requirement("torch~=2.1");
  REQUIRE(r);
  CHECK(r->below == v(3, 0, 0));
  r = torch_requirement("torch==2.1.*");
  REQUIRE(r);
  CHECK(r->lowest == v(2, 1, 0));
  CHECK(r->below == v(2, 2, 0));
  r = torch_requirement("Torch[opt-einsum] >= 2.0, < 2.4 ; python_version >= '3.8'");
  REQUIRE(r);
  CHECK(r->lowest == v(2, 0, 0));
  CHECK(r->below == v(2, 4, 0));
  CHECK(r->written == "Torch[opt-einsum] >= 2.0, < 2.4");
  r = torch_requirement("torch @ https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp310-linux_x86_64.whl");
  REQUIRE(r);
  CHECK(r->lowest == v(2, 0, 1));
  r = torch_requirement("torch");  // no bound: pip installs the newest
  REQUIRE(r);
  CHECK_FALSE(r->bounded());
  CHECK_FALSE(torch_requirement("torchvision==0.16").has_value());
  CHECK_FALSE(torch_requirement("pytorch-lightning>=2").has_value());
  CHECK_FALSE(torch_requirement("pytorch==1.13").has_value());  // a conda name, not a pip one
}

TEST_CASE("torch requirements: conda match specs and Poetry constraints") {
  auto r = torch_requirement("pytorch=1.13.1=py3.9_cuda11.6_cudnn8.3.2_0", true);
  REQUIRE(r);
  CHECK(r->lowest == v(1, 13, 1));
  CHECK(r->below == v(1, 13, 2));
  r = torch_requirement("pytorch::pytorch=2.0", true);
  REQUIRE(r);
  CHECK(r->below == v(2, 1, 0));
  r = torch_requirement("pytorch 1.13.*", true);
  REQUIRE(r);
  CHECK(r->lowest == v(1, 13, 0));
  CHECK(r->below == v(1, 14, 0));
  r = poetry_constraint("^2.1");
  REQUIRE(r);
  CHECK(r->lowest == v(2, 1, 0));
  CHECK(r->below == v(3, 0, 0));
  r = poetry_constraint("~2.1");
  REQUIRE(r);
  CHECK(r->below == v(2, 2, 0));
  r = poetry_constraint("2.2.0");
  REQUIRE(r);
  CHECK(r->below == v(2, 2, 1));
}

TEST_CASE("torch support: which releases a claim needs") {
  TorchSupport pinned;
  pinned.lowest = v(2, 1, 1);
  pinned.below = v(2, 1, 2);
  CHECK_FALSE(pinned.reaches(v(2, 4)));
  CHECK_FALSE(pinned.all_at_least(v(2, 3)));
  TorchSupport from_old;
  from_old.lowest = v(1, 7);
  CHECK(from_old.reaches(v(2, 4)));
  CHECK_FALSE(from_old.all_at_least(v(2, 3)));
  TorchSupport none;  // nothing declared: the current release
  CHECK(none.reaches(v(2, 4)));
  CHECK(none.all_at_least(v(2, 4)));
  TorchSupport capped;  // an upper bound only admits old releases
  capped.below = v(2, 0);
  CHECK_FALSE(capped.all_at_least(v(1, 13)));
}

TEST_CASE("torch declarations: the files of one folder, united; comments and modules are no declaration") {
  TempDir s;
  s.write("a/requirements.txt", "# torch>=2.6\n-r base.txt\nnumpy\n");
  s.write("a/base.txt", "torch>=1.10 \\\n  ,<2.0  # pinned below 2\n");
  s.write("a/requirements-extra.txt", "torch==2.2.0\n");
  auto a = declared_torch_in(s.path / "a", s.path);
  REQUIRE(a);
  CHECK(a->lowest == v(1, 10, 0));  // the widest range over the files
  CHECK(a->below == v(2, 2, 1));
  CHECK(a->origin == "a/base.txt:1");
  s.write("b/setup.py", "# install_requires=['torch>=9']\nsetup(install_requires=['torch>=2.3'])\n");
  s.write("b/setup.cfg", "[metadata]\nname = x\n[options]\ninstall_requires =\n    numpy\n    torch>=2.2\n");
  auto b = declared_torch_in(s.path / "b", s.path);
  REQUIRE(b);
  CHECK(b->lowest == v(2, 2, 0));
  s.write("c/environment.yml", "dependencies:\n  - python=3.10\n  - pip:\n      - torch==2.0.1\n");
  auto c = declared_torch_in(s.path / "c", s.path);
  REQUIRE(c);
  CHECK(c->lowest == v(2, 0, 1));
  CHECK(c->origin == "c/environment.yml:4");
  s.write("d/pyproject.toml", "[project]\ndependencies = []\n[tool.poetry.dependencies]\ntorch = { version = \"^2.1\" }\n");
  auto d = declared_torch_in(s.path / "d", s.path);
  REQUIRE(d);
  CHECK(d->below == v(3, 0, 0));
  s.write("e/__init__.py", "");
  s.write("e/setup.py", "DEPS = ['torch==1.0']\n");  // a module of package e
  CHECK_FALSE(declared_torch_in(s.path / "e", s.path).has_value());
  s.write("f/environment.yml", "dependencies: [\n");  // malformed: adds nothing
  CHECK_FALSE(declared_torch_in(s.path / "f", s.path).has_value());
}

TEST_CASE("torch declarations: pip constraints narrow what is required, and constrain nothing alone") {
  TempDir s;
  s.write("a/requirements.txt", "torch\n-c constraints.txt\n");
  s.write("a/constraints.txt", "numpy==1.24.4\ntorch==1.13.0\n");
  auto a = declared_torch_in(s.path / "a", s.path);
  REQUIRE(a);
  CHECK(a->lowest == v(1, 13, 0));
  CHECK(a->below == v(1, 13, 1));
  CHECK(a->origin == "a/constraints.txt:2");
  s.write("b/requirements.txt", "torch>=1.10\n--constraint=pins.txt\n");
  s.write("b/pins.txt", "torch<2.0\n");
  auto b = declared_torch_in(s.path / "b", s.path);
  REQUIRE(b);
  CHECK(b->lowest == v(1, 10, 0));  // the requirement's bound stays where the constraint sets none
  CHECK(b->below == v(2, 0, 0));
  s.write("c/requirements.txt", "numpy\n-c constraints.txt\n");  // torch constrained, never required
  s.write("c/constraints.txt", "torch==1.13.0\n");
  CHECK_FALSE(declared_torch_in(s.path / "c", s.path).has_value());
}

TEST_CASE("torch declarations: the closest folder up to the project's root; target-torch wins") {
  TempDir s;
  s.write("outer/requirements.txt", "torch==1.4\n");  // above the project: not its declaration
  s.write("outer/proj/pyproject.toml", "[project]\nname = \"p\"\n");
  s.write("outer/proj/sub/environment.yml", "dependencies:\n  - pytorch=1.13.1\n");
  fs::path deep = s.write("outer/proj/sub/pkg/train.py", "");
  fs::path top = s.write("outer/proj/train.py", "");
  ConfigResolver resolver(rules::all());
  auto found = resolver.torch_declared_for(deep);
  REQUIRE(found);
  CHECK(found->lowest == v(1, 13, 1));
  CHECK(resolver.torch_declared_for(top) == nullptr);
  fs::path cfg = s.write("outer/proj/ddplint.toml", "target-torch = \"2.4\"\n");
  auto loaded = load_config(cfg, rules::all());
  REQUIRE(std::holds_alternative<std::optional<Config>>(loaded));
  const Config& config = *std::get<std::optional<Config>>(loaded);
  FileSettings settings = settings_for(&config, deep, {}, {}, {}, nullptr, found.get());
  CHECK(settings.options.torch.lowest == v(2, 4, 0));
  CHECK_FALSE(settings.options.torch.below.has_value());
  CHECK(settings.declared_torch.lowest == v(1, 13, 1));
  for (const char* bad : {"\"latest\"", "\"2.\"", "\"2..1\"", "2.1", "\"1.2.3.4\""}) {
    fs::path p = s.write("bad/ddplint.toml", std::string("target-torch = ") + bad + "\n");
    auto r = load_config(p, rules::all());
    REQUIRE(std::holds_alternative<ConfigError>(r));
    CHECK(std::get<ConfigError>(r).message.find("target-torch") != std::string::npos);
  }
}

TEST_CASE("torch declarations: the release a README's installation section states, where nothing bounds it") {
  TempDir s;
  // a list item of the requirements section: the oldest supported release
  s.write("a/README.md", "# Model\n\n## News\n- tested with PyTorch 2.4 on H100s\n\n## Requirements\n"
                         "* Python 3.9 and PyTorch 1.11.0 (older versions may work too)\n* torchvision 0.12\n");
  auto a = declared_torch_in(s.path / "a", s.path);
  REQUIRE(a);
  CHECK(a->lowest == v(1, 11, 0));
  CHECK_FALSE(a->below.has_value());
  CHECK(a->origin == "a/README.md:7");
  CHECK(a->written == "PyTorch 1.11.0");
  // a shell block's pip install in the setup section; an unbounded requirement gives way to it
  s.write("b/requirements.txt", "torch\nnumpy\n");
  s.write("b/README.md", "## Setup\n```bash\npip install torch==2.1.1 torchvision==0.16.1\n```\n");
  auto b = declared_torch_in(s.path / "b", s.path);
  REQUIRE(b);
  CHECK(b->lowest == v(2, 1, 1));
  CHECK(b->below == v(2, 1, 2));
  // a shell block's `pip install -r` of a nested requirements file, after its `cd`
  s.write("g/requirements.txt", "sentencepiece\n");
  s.write("g/vendor/requirements.txt", "--extra-index-url https://download.pytorch.org/whl/cu113\ntorch==1.13.0\n");
  s.write("g/README.md", "## Setup\n```bash\ncd vendor\npip install -r requirements.txt\ncd ..\npip install -r requirements.txt\n```\n");
  auto g = declared_torch_in(s.path / "g", s.path);
  REQUIRE(g);
  CHECK(g->lowest == v(1, 13, 0));
  CHECK(g->origin == "g/vendor/requirements.txt:2");
  // a bounded requirement wins over the README
  s.write("c/requirements.txt", "torch>=2.5\n");
  s.write("c/README.md", "## Installation\n- PyTorch >= 1.8\n");
  auto c = declared_torch_in(s.path / "c", s.path);
  REQUIRE(c);
  CHECK(c->lowest == v(2, 5, 0));
  // outside an installation section, in prose, in a code block of another section,
  // or naming another package: no statement
  s.write("d/README.md", "# X\nWe use PyTorch 2.0.\n## News\n- PyTorch 2.1 support\n## Usage\n```\npip install torch==1.0\n```\n"
                         "## Install\n- torchvision 0.15\n- see pytorch.org 2.0 notes\n");
  CHECK_FALSE(declared_torch_in(s.path / "d", s.path).has_value());
  // a sentence of the set-up section: the release the code was tested with
  s.write("e/README.md", "# X\n## 1. Setup\nInstall [PyTorch](https://pytorch.org) first.\n"
                         "The code has been tested with CUDA 11.3/cuDNN 8.2.0, PyTorch 1.10.0 and timm 0.5.0.\n");
  auto e = declared_torch_in(s.path / "e", s.path);
  REQUIRE(e);
  CHECK(e->lowest == v(1, 10, 0));
  CHECK_FALSE(e->below.has_value());
  CHECK(e->origin == "e/README.md:4");
}

TEST_CASE("torch declarations: the install commands a README runs, and environments kept in a folder") {
  TempDir s;
  // `conda env create -f` of an environment file in a subfolder; a prompt before the command
  s.write("a/env/gpu.yml", "name: x\ndependencies:\n  - python=3.9\n  - pytorch=1.12.1\n");
  s.write("a/README.md", "## Installation\n```\n$ conda env create -f env/gpu.yml\n```\n");
  auto a = declared_torch_in(s.path / "a", s.path);
  REQUIRE(a);
  CHECK(a->lowest == v(1, 12, 1));
  CHECK(a->origin == "a/env/gpu.yml:4");
  // a README without headings runs a project script in inline code; the script's pip takes options before `install`
  s.write("b/tools/setup.sh", "#!/bin/sh\npython3 -m venv v\n. v/bin/activate\npip --require-virtualenv install -r tools/req.txt\n");
  s.write("b/tools/req.txt", "numpy\ntorch==1.13.1\n");
  s.write("b/README.md", "Models.\n\nTo set up, run `./tools/setup.sh` (Linux only).\n");
  auto b = declared_torch_in(s.path / "b", s.path);
  REQUIRE(b);
  CHECK(b->lowest == v(1, 13, 1));
  CHECK(b->below == v(1, 13, 2));
  CHECK(b->origin == "b/tools/req.txt:2");
  // a script run outside the install section of a README with headings: not read
  s.write("c/tools/setup.sh", "pip install torch==1.13.1\n");
  s.write("c/README.md", "# Models\n## Training\nRun `bash tools/setup.sh` first.\n");
  CHECK_FALSE(declared_torch_in(s.path / "c", s.path).has_value());
  // nothing at the root bounds it: the environments kept in env/ (an unbounded root declaration gives way)
  s.write("d/requirements.txt", "torch\n");
  s.write("d/env/cu118.yml", "dependencies:\n  - pytorch=2.0.1\n");
  s.write("d/env/cu117.yml", "dependencies:\n  - pytorch=1.13.1\n");
  auto d = declared_torch_in(s.path / "d", s.path);
  REQUIRE(d);
  CHECK(d->lowest == v(1, 13, 1));
  CHECK(d->below == v(2, 0, 2));
  // a bounded root declaration wins over them
  s.write("f/requirements.txt", "torch>=2.2\n");
  s.write("f/env/old.yml", "dependencies:\n  - pytorch=1.8.0\n");
  auto f = declared_torch_in(s.path / "f", s.path);
  REQUIRE(f);
  CHECK(f->lowest == v(2, 2, 0));
  // setup.py: an extra's name is a dictionary key, not a requirement
  s.write("g/setup.py", "from setuptools import setup\nsetup(name='g', install_requires=['numpy'],\n"
                        "      extras_require={'torch': ['torch==1.13.1'], 'faiss': ['faiss-cpu']})\n");
  auto g = declared_torch_in(s.path / "g", s.path);
  REQUIRE(g);
  CHECK(g->lowest == v(1, 13, 1));
  CHECK(g->written == "torch==1.13.1");
  // a README whose extension is upper case; a conda environment named for its variant; Cog's build packages
  s.write("h/README.MD", "## Installation\n```\npip install torch==1.12.0\n```\n");
  auto h = declared_torch_in(s.path / "h", s.path);
  REQUIRE(h);
  CHECK(h->lowest == v(1, 12, 0));
  CHECK(h->origin == "h/README.MD:3");
  s.write("i/tft2v_environment.yaml", "name: x\ndependencies:\n  - pip:\n    - torch==2.0.1+cu118\n");
  s.write("i/README.md", "## Installation\n```\npip install torch==1.12.0\n```\n");
  auto i = declared_torch_in(s.path / "i", s.path);
  REQUIRE(i);
  CHECK(i->lowest == v(2, 0, 1));
  CHECK(i->origin == "i/tft2v_environment.yaml:4");
  s.write("j/cog.yaml", "build:\n  gpu: true\n  python_packages:\n    - numpy==1.24\n    - torch==2.0.1\npredict: p.py:P\n");
  auto j = declared_torch_in(s.path / "j", s.path);
  REQUIRE(j);
  CHECK(j->lowest == v(2, 0, 1));
  CHECK(j->origin == "j/cog.yaml:5");
  s.write("k/cog.yaml", "build:\n  python_requirements: reqs/cog.txt\n");
  s.write("k/reqs/cog.txt", "torch>=2.1\n");
  auto kk = declared_torch_in(s.path / "k", s.path);
  REQUIRE(kk);
  CHECK(kk->lowest == v(2, 1, 0));
}

TEST_CASE("torch declarations: hostile set-ups are read once, inside the project, and only as install commands") {
  TempDir s;
  // a requirements file that names itself on every line: each file a line names is read once
  std::string self;
  for (int i = 0; i < 300; ++i) self += "-r requirements.txt\n";
  s.write("a/requirements.txt", self + "torch==1.10.2\n");
  auto a = declared_torch_in(s.path / "a", s.path);
  REQUIRE(a);
  CHECK(a->lowest == v(1, 10, 2));
  // a command that only prints an install, an uninstall, files and scripts outside the project, a negated sentence
  s.write("outside/req.txt", "torch==1.6.0\n");
  s.write("outside/evil.sh", "pip install torch==1.6.0\n");
  s.write("b/p/README.md", "## Installation\n```\necho pip install torch==1.6.0\npip uninstall torch==1.6.0\n"
                           "pip install -r ../../outside/req.txt\nbash ../../outside/evil.sh\n```\n"
                           "`pip install -r " + (s.path / "outside/req.txt").string() + "`\n\n"
                           "Note: PyTorch 1.6 is not supported.\n");
  CHECK_FALSE(declared_torch_in(s.path / "b/p", s.path).has_value());
  // a negation in the next sentence leaves the statement standing
  s.write("e/README.md", "## Requirements\nThis code was tested with PyTorch 1.8-2.0. This is not a strict requirement.\n");
  auto e = declared_torch_in(s.path / "e", s.path);
  REQUIRE(e);
  CHECK(e->lowest == v(1, 8, 0));
  // `python -m pip` and `sudo pip` are install commands
  s.write("c/README.md", "## Installation\n```\nsudo python3 -m pip install torch==2.2.1\n```\n");
  auto c = declared_torch_in(s.path / "c", s.path);
  REQUIRE(c);
  CHECK(c->lowest == v(2, 2, 1));
  // deeply nested dictionaries in setup.py: keys are no requirements, values are
  std::string nested = "from setuptools import setup\nsetup(extras_require=";
  for (int i = 0; i < 3000; ++i) nested += "{\"torch\": ";
  nested += "[\"torch==1.9.0\"]";
  for (int i = 0; i < 3000; ++i) nested += "}";
  s.write("d/setup.py", nested + ")\n");
  auto d = declared_torch_in(s.path / "d", s.path);
  REQUIRE(d);
  CHECK(d->lowest == v(1, 9, 0));
}
