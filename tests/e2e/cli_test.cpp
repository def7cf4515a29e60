// End-to-end tests of the ddplint executable: output formats, exit codes,
// stdin, suppressions, discovery and every kind of bad input.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "tests/support/cli_run.hpp"

namespace fs = std::filesystem;

namespace {

using ddplint_test::contains;
using ddplint_test::ddplint;
using ddplint_test::Run;
using ddplint_test::slurp;
using ddplint_test::TempDir;

const std::string kBadLoader =
    "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\n";

}  // namespace

TEST_CASE("--version and --help exit 0") {
  Run v = ddplint({"--version"});
  CHECK(v.rc == 0);
  CHECK(contains(v.out, "ddplint 0."));
  Run h = ddplint({"--help"});
  CHECK(h.rc == 0);
  CHECK(contains(h.out, "--select"));
  CHECK(contains(h.out, "--stdin-filename"));
}

TEST_CASE("text format, summary and exit codes") {
  TempDir d;
  d.write("bad.py", kBadLoader);
  d.write("good.py", "import torch\nx = 1\n");
  Run r = ddplint({"bad.py", "good.py"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(r.out == "bad.py:3:10: DDP101 [info] DataLoader without num_workers loads every batch in the training process: "
                 "whatever its dataset does per sample (reading files, decoding, augmenting) runs while the GPU "
                 "waits; workers would overlap it with the step\nFound 1 finding in 2 files.\n"
                 "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n");
  CHECK(r.err.empty());
  CHECK(ddplint({"good.py"}, "", d.path).rc == 0);
  CHECK(ddplint({"good.py"}, "", d.path).out == "Found 0 findings in 1 file.\n");
  CHECK(ddplint({"--exit-zero", "bad.py"}, "", d.path).rc == 0);
  Run q = ddplint({"--quiet", "bad.py"}, "", d.path);
  CHECK(q.rc == 1);
  CHECK_FALSE(contains(q.out, "Found"));
  // not a terminal: no colour codes
  CHECK_FALSE(contains(r.out, "\x1b["));
}

TEST_CASE("json format has exactly the documented fields") {
  TempDir d;
  d.write("bad.py", kBadLoader);
  Run r = ddplint({"--format", "json", "bad.py"}, "", d.path);
  CHECK(r.rc == 1);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 1);
  auto& f = j[0];
  std::vector<std::string> keys;
  for (auto it = f.begin(); it != f.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"code", "end_location", "filename", "fix", "location", "message", "name",
                                         "severity", "short_message", "url"});
  CHECK(f["code"] == "DDP101");
  CHECK(f["name"] == "dataloader-without-workers");
  CHECK(f["severity"] == "info");  // a dataset the file does not show: the cost depends on it
  CHECK(f["filename"] == "bad.py");
  CHECK(f["location"] == nlohmann::json{{"row", 3}, {"column", 10}});
  CHECK(f["end_location"] == nlohmann::json{{"row", 3}, {"column", 20}});
  // DDP101's fix: an unsafe edit adding num_workers after the last argument
  CHECK(f["fix"]["applicability"] == "unsafe");
  CHECK(f["fix"]["message"].get<std::string>().find("num_workers=4") != std::string::npos);
  REQUIRE(f["fix"]["edits"].size() == 1);
  CHECK(f["fix"]["edits"][0]["content"] == ", num_workers=4");
  CHECK(f["fix"]["edits"][0]["location"] == nlohmann::json{{"row", 3}, {"column", 40}});
  CHECK(f["fix"]["edits"][0]["end_location"] == nlohmann::json{{"row", 3}, {"column", 40}});
  CHECK(f["url"].is_string());
  d.write("good.py", "x = 1\n");
  Run empty = ddplint({"--format", "json", "good.py"}, "", d.path);
  CHECK(empty.rc == 0);
  CHECK(nlohmann::json::parse(empty.out) == nlohmann::json::array());
}

TEST_CASE("--select, --ignore and unknown codes") {
  TempDir d;
  d.write("bad.py", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\nx = torch.zeros(1).cuda()\n");
  Run all = ddplint({"-q", "bad.py"}, "", d.path);
  CHECK(contains(all.out, "DDP101"));
  CHECK_FALSE(contains(all.out, "DDP102"));  // opt-in: only its exact code enables it
  CHECK_FALSE(contains(ddplint({"-q", "--select", "ALL,DDP1", "bad.py"}, "", d.path).out, "DDP102"));
  Run ext = ddplint({"-q", "--extend-select", "DDP102", "bad.py"}, "", d.path);
  CHECK(contains(ext.out, "DDP101"));
  CHECK(contains(ext.out, "DDP102"));
  CHECK(ddplint({"-q", "--extend-select", "DDP9", "bad.py"}, "", d.path).rc == 2);
  Run sel = ddplint({"-q", "--select", "DDP102", "bad.py"}, "", d.path);
  CHECK_FALSE(contains(sel.out, "DDP101"));
  CHECK(contains(sel.out, "DDP102"));
  Run ign = ddplint({"-q", "--ignore", "DDP101,DDP102", "bad.py"}, "", d.path);
  CHECK(ign.rc == 0);
  Run bad = ddplint({"--select", "DDP999", "bad.py"}, "", d.path);
  CHECK(bad.rc == 2);
  CHECK(contains(bad.err, "DDP999"));
  CHECK(contains(bad.err, "--select"));
  Run badfmt = ddplint({"--format", "xml", "bad.py"}, "", d.path);
  CHECK(badfmt.rc == 2);
  CHECK(badfmt.err.rfind("ddplint: --format", 0) == 0);
  CHECK(std::count(badfmt.err.begin(), badfmt.err.end(), '\n') == 1);
  Run bogus = ddplint({"--bogus"}, "", d.path);
  CHECK(bogus.rc == 2);
  CHECK(contains(bogus.err, "ddplint: "));
  CHECK(contains(bogus.err, "--bogus"));
  // a repeated --select adds up; a space after the comma would start a path
  Run rep = ddplint({"-q", "--select", "DDP101", "--select", "DDP102", "bad.py"}, "", d.path);
  CHECK(contains(rep.out, "DDP101"));
  CHECK(contains(rep.out, "DDP102"));
}

TEST_CASE("--explain and --list-rules") {
  Run e = ddplint({"--explain", "DDP401"});
  CHECK(e.rc == 0);
  CHECK(contains(e.out, "item-in-training-loop"));
  CHECK(contains(e.out, "## What it does"));
  CHECK(contains(e.out, "pytorch.org"));
  // DDP206's torchrun paragraph once had a sentence pasted into itself ("...the
  // option's defaultlaunch: every rank gets the option's default."): it says it once, whole
  std::string legacy = ddplint({"--explain", "DDP206"}).out;
  CHECK_FALSE(contains(legacy, "defaultlaunch"));
  std::size_t said = legacy.find("every rank gets the option's default");
  REQUIRE(said != std::string::npos);
  CHECK(legacy.find("every rank gets the option's default", said + 1) == std::string::npos);
  CHECK(contains(legacy, "torchrun passes\nno such argument, so every rank gets the option's default, and the ranks\nshare one GPU"));
  Run u = ddplint({"--explain", "DDP999"});
  CHECK(u.rc == 2);
  CHECK(contains(u.err, "DDP999"));
  Run l = ddplint({"--list-rules"});
  CHECK(l.rc == 0);
  for (auto code : {"DDP001", "DDP101", "DDP102", "DDP201", "DDP301", "DDP302", "DDP401", "DDP601"})
    CHECK(contains(l.out, code));
}

TEST_CASE("standard input with --stdin-filename") {
  Run r = ddplint({"--stdin-filename", "train.py", "-"}, kBadLoader);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "train.py:3:10: DDP101"));
  Run anon = ddplint({"-"}, kBadLoader);
  CHECK(contains(anon.out, "-:3:10: DDP101"));
}

TEST_CASE("folders: recursion into *.py, skipped folders, sorted output, paths as reached") {
  TempDir d;
  d.write("proj/b.py", kBadLoader);
  d.write("proj/a/c.py", kBadLoader);
  d.write("proj/notes.txt", kBadLoader);
  for (auto skip : {".git", ".venv", "venv", "__pycache__", "build", "node_modules", "site-packages"})
    d.write(std::string("proj/") + skip + "/x.py", kBadLoader);
  Run r = ddplint({"-q", "proj"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(r.out == "proj/a/c.py:3:10: DDP101 [info] DataLoader without num_workers loads every batch in the training "
                 "process: whatever its dataset does per sample (reading files, decoding, augmenting) runs while "
                 "the GPU waits; workers would overlap it with the step\n"
                 "proj/b.py:3:10: DDP101 [info] DataLoader without num_workers loads every batch in the training "
                 "process: whatever its dataset does per sample (reading files, decoding, augmenting) runs while "
                 "the GPU waits; workers would overlap it with the step\n");
  // a symlink loop does not hang discovery
  fs::create_directory_symlink("..", d.path / "proj" / "loop");
  CHECK(ddplint({"-q", "proj"}, "", d.path).rc == 1);
}

TEST_CASE("folders: paths sorted one component at a time, as the walk streams them (-j 1 and -j 4 alike)") {
  TempDir d;
  // byte order of names in each folder: "m" < "m-x.py" < "m.py", so the folder
  // m's files come first (whole-string order would put them last: '/' > '.')
  d.write("proj/m.py", kBadLoader);
  d.write("proj/m-x.py", kBadLoader);
  d.write("proj/m/z.py", kBadLoader);
  d.write("proj/m/k/a.py", kBadLoader);
  d.write("proj/B.py", kBadLoader);
  for (const char* jobs : {"1", "4"}) {
    CAPTURE(jobs);
    Run r = ddplint({"-q", "-j", jobs, "--format", "json-lines", "proj"}, "", d.path);
    std::vector<std::string> order;
    for (std::size_t at = 0, end; (end = r.out.find('\n', at)) != std::string::npos; at = end + 1)
      order.push_back(nlohmann::json::parse(r.out.substr(at, end - at))["filename"]);
    CHECK(order == std::vector<std::string>{"proj/B.py", "proj/m/k/a.py", "proj/m/z.py", "proj/m-x.py", "proj/m.py"});
  }
}

TEST_CASE("missing and unreadable paths: exit 2 naming the path; other files still linted") {
  TempDir d;
  d.write("bad.py", kBadLoader);
  Run r = ddplint({"-q", "nope.py", "bad.py"}, "", d.path);
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "nope.py"));
  CHECK(contains(r.out, "bad.py:3:10: DDP101"));
  fs::create_symlink("missing-target.py", d.path / "dangling.py");
  Run dl = ddplint({"-q", "."}, "", d.path);
  CHECK(dl.rc == 2);
  CHECK(contains(dl.err, "dangling.py"));
  CHECK(contains(dl.out, "bad.py:3:10: DDP101"));
}

TEST_CASE("syntax errors: DDP001 at the first error, other rules still run") {
  TempDir d;
  d.write("broken.py", "import torch\nfrom torch.utils.data import DataLoader\ndef f(:\n    pass\nloader = DataLoader(ds, pin_memory=True)\n");
  Run r = ddplint({"-q", "broken.py"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "broken.py:3:"));
  CHECK(contains(r.out, "DDP001"));
  CHECK(contains(r.out, "broken.py:5:10: DDP101"));
}

TEST_CASE("non-UTF-8 and binary files: a clear error naming the file, the others still linted") {
  TempDir d;
  d.write("latin1.py", "x = 'caf\xe9'\n");
  d.write("blob.py", std::string("\x7f" "ELF\0\0\0", 7));
  d.write("bad.py", kBadLoader);
  Run r = ddplint({"-q", "latin1.py", "blob.py", "bad.py"}, "", d.path);
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "latin1.py: not valid UTF-8 (byte 0xe9 at line 1)"));
  CHECK(contains(r.err, "blob.py: binary file"));
  CHECK(contains(r.out, "bad.py:3:10: DDP101"));
}

TEST_CASE("empty, comment-only, CRLF, BOM, tabs and wide characters") {
  TempDir d;
  d.write("empty.py", "");
  d.write("comments.py", "# just a comment\n# another\n");
  CHECK(ddplint({"empty.py", "comments.py"}, "", d.path).rc == 0);
  d.write("crlf.py", "import torch\r\nfrom torch.utils.data import DataLoader\r\n\r\nloader = DataLoader(ds, pin_memory=True)\r\n");
  CHECK(contains(ddplint({"-q", "crlf.py"}, "", d.path).out, "crlf.py:4:10: DDP101"));
  d.write("bom.py", "\xEF\xBB\xBF" "from torch.utils.data import DataLoader; loader = DataLoader(ds, pin_memory=True)\n");
  CHECK(contains(ddplint({"-q", "bom.py"}, "", d.path).out, "bom.py:1:51: DDP101"));
  d.write("wide.py", "from torch.utils.data import DataLoader\nif True:\n\tx = '日本😀'; loader = DataLoader(ds, pin_memory=True)\n");
  // tab(1) x(2) ' '(3) =(4) ' '(5) '(6) 日(7) 本(8) 😀(9) '(10) ;(11) ' '(12) loader(13..18) ' '(19) =(20) ' '(21) D(22)
  CHECK(contains(ddplint({"-q", "wide.py"}, "", d.path).out, "wide.py:3:22: DDP101"));
}

TEST_CASE("huge and deeply nested files: no crash, no hang") {
  TempDir d;
  std::string big;
  while (big.size() < 10u * 1024 * 1024) big += "def f(x):\n    return [i * 2 for i in range(x) if i % 3]\n";
  big += kBadLoader;
  d.write("big.py", big);
  auto t0 = std::chrono::steady_clock::now();
  Run r = ddplint({"-q", "big.py"}, "", d.path);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "DDP101"));
  MESSAGE("10 MB file linted in " << secs << " s");
  std::string deep = "x = " + std::string(5000, '[') + std::string(5000, ']') + "\n" + kBadLoader;
  d.write("deep.py", deep);
  Run dr = ddplint({"-q", "deep.py"}, "", d.path);
  CHECK(dr.rc == 1);
  CHECK(contains(dr.out, "DDP101"));
  std::string deep_parens = "y = " + std::string(5000, '(') + "1" + std::string(5000, ')') + "\n";
  d.write("parens.py", deep_parens);
  CHECK(ddplint({"-q", "parens.py"}, "", d.path).rc == 0);
  std::string deep_calls;
  for (int i = 0; i < 5000; ++i) deep_calls += "f(";
  deep_calls += std::string(5000, ')') + "\n";
  d.write("calls.py", deep_calls);
  CHECK(ddplint({"-q", "calls.py"}, "", d.path).rc == 0);
}

TEST_CASE("indentation deeper than CPython allows: a clear error naming the file, the others still linted") {
  // tree-sitter-python crashed past about 512 levels; CPython refuses a 100th.
  TempDir d;
  auto nested = [](int levels, const std::string& body) {
    std::string text = "import torch\n";
    for (int i = 0; i < levels; ++i) text += std::string(static_cast<std::size_t>(i), ' ') + "if a:\n";
    return text + std::string(static_cast<std::size_t>(levels), ' ') + body + "\n";
  };
  d.write("deep_blocks.py", nested(520, "torch.save(m, 'x.pt')"));
  d.write("at_limit.py", nested(99, "torch.save(m, 'x.pt')") + kBadLoader);
  d.write("bad.py", kBadLoader);
  Run r = ddplint({"-q", "deep_blocks.py", "at_limit.py", "bad.py"}, "", d.path);
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "deep_blocks.py: too many levels of indentation"));
  CHECK_FALSE(contains(r.err, "at_limit.py"));
  CHECK(contains(r.out, "at_limit.py:"));
  CHECK(contains(r.out, "bad.py:3:10: DDP101"));
}

TEST_CASE("shapes that were once quadratic or exponential finish (no hang)") {
  TempDir d;
  // a 20,000-clause elif chain: every branch is a region
  std::string elif = "import torch\nif x:\n    pass\n";
  for (int i = 0; i < 20000; ++i) elif += "elif x == " + std::to_string(i) + ":\n    pass\n";
  d.write("elif.py", elif);
  // a chain of 20,000 functions, the last one training, called from a loop
  std::string chain = "import torch\n";
  for (int i = 0; i < 20000; ++i) chain += "def f" + std::to_string(i) + "():\n    f" + std::to_string(i + 1) + "()\n";
  chain += "def f20000():\n    loss.backward()\n    opt.step()\nx = torch.zeros(1).cuda()\nfor b in loader:\n    f0()\n    v = loss.item()\n";
  d.write("chain.py", chain);
  // a name reassigned thousands of times from itself, used as a world size divisor
  std::string rebind = "import torch.distributed as dist\nfrom torch.utils.data import DataLoader\ndist.init_process_group(\"nccl\")\nw = dist.get_world_size()\n";
  for (int i = 0; i < 3000; ++i) rebind += "w = w + w\n";
  rebind += "dl = DataLoader(ds, batch_size=256 // w, num_workers=4)\n";
  d.write("rebind.py", rebind);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(ddplint({"-q", "elif.py"}, "", d.path).rc == 0);
  Run c = ddplint({"-q", "chain.py"}, "", d.path);
  CHECK(c.rc == 1);
  CHECK(contains(c.out, "DDP401"));
  Run r = ddplint({"-q", "--select", "DDP601", "rebind.py"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "DDP601"));
  MESSAGE("pathological shapes linted in "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
}

TEST_CASE("colour only on a terminal, and never with NO_COLOR") {
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    MESSAGE("util-linux `script` not found: terminal colour not tested");
    return;
  }
  TempDir d;
  d.write("bad.py", kBadLoader);
  // `script` runs the command on a pseudo-terminal and copies what it printed
  std::string cmd = std::string("script -qec '") + DDPLINT_BIN + " bad.py' /dev/null";
  auto run_tty = [&](const std::string& env) {
    std::string full = "cd '" + d.path.string() + "' && " + env + " " + cmd + " > tty.out 2>&1";
    CHECK(std::system(full.c_str()) != -1);
    return slurp(d.path / "tty.out");
  };
  std::string colored = run_tty("env -u NO_COLOR");
  CHECK(contains(colored, "\x1b["));
  CHECK(contains(colored, "DDP101"));
  std::string plain = run_tty("NO_COLOR=1");
  CHECK_FALSE(contains(plain, "\x1b["));
  CHECK(contains(plain, "bad.py:3:10: DDP101"));
}

TEST_CASE("FIFOs and devices are refused, not read; stdin errors and write errors exit 2") {
  TempDir d;
  d.write("bad.py", kBadLoader);
  REQUIRE(::mkfifo((d.path / "pipe.py").c_str(), 0600) == 0);
  Run fifo = ddplint({"-q", "pipe.py", "bad.py"}, "", d.path);  // would block forever if opened
  CHECK(fifo.rc == 2);
  CHECK(contains(fifo.err, "pipe.py: not a regular file"));
  CHECK(contains(fifo.out, "bad.py:3:10: DDP101"));
  Run dev = ddplint({"-q", "/dev/zero"}, "", d.path);
  CHECK(dev.rc == 2);
  CHECK(contains(dev.err, "/dev/zero: not a regular file"));
  // standard input that is a directory cannot be read
  std::string cmd = std::string("cd '") + d.path.string() + "' && " + DDPLINT_BIN + " - < . > out.txt 2> err.txt";
  int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(contains(slurp(d.path / "err.txt"), "cannot read standard input"));
  // output that cannot be written
  std::string full = std::string("cd '") + d.path.string() + "' && " + DDPLINT_BIN + " bad.py > /dev/full 2> err2.txt";
  status = std::system(full.c_str());
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(contains(slurp(d.path / "err2.txt"), "cannot write the output"));
}

TEST_CASE("a path given twice is linted once; an empty --explain is an error") {
  TempDir d;
  d.write("bad.py", kBadLoader);
  Run r = ddplint({"-q", "bad.py", "bad.py"}, "", d.path);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  CHECK(ddplint({"--explain", ""}, "", d.path).rc == 2);
}

TEST_CASE("-j N lints in parallel with output identical to -j 1, errors included") {
  TempDir d;
  for (int i = 0; i < 40; ++i) {
    std::string name = "proj/m" + std::to_string(i) + ".py";
    d.write(name, i % 7 == 3 ? std::string("x = '\xff'\n") : kBadLoader + std::string(i % 3, '\n') + "y = 1\n");
  }
  for (const char* fmt : {"text", "json"}) {
    CAPTURE(fmt);
    Run one = ddplint({"--format", fmt, "-j", "1", "proj"}, "", d.path);
    Run many = ddplint({"--format", fmt, "-j", "4", "proj"}, "", d.path);
    CHECK(one.rc == 2);
    CHECK(many.rc == one.rc);
    CHECK(many.out == one.out);
    CHECK(many.err == one.err);
    CHECK(contains(one.err, "m3.py: not valid UTF-8"));
  }
  CHECK(ddplint({"-j", "0", "proj"}, "", d.path).rc == 2);
}

TEST_CASE("configuration files: closest wins, --config, --isolated, per-file-ignores, errors exit 2") {
  TempDir d;
  const std::string script = "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds)\nmodel.cuda()\n";
  d.write("proj/pyproject.toml", "[tool.ddplint]\nextend-select = [\"DDP102\"]\nignore = [\"DDP101\"]\n\n[tool.ddplint.per-file-ignores]\n\"tests/*\" = [\"DDP102\"]\n");
  d.write("proj/train.py", script);
  d.write("proj/tests/test_train.py", script);
  d.write("proj/legacy/ddplint.toml", "select = [\"DDP101\"]\n");
  d.write("proj/legacy/old.py", script);
  Run r = ddplint({"-q", "proj"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(r.out == "proj/legacy/old.py:3:5: DDP101 [info] DataLoader without num_workers loads every batch in the training "
                 "process: whatever its dataset does per sample (reading files, decoding, augmenting) runs while "
                 "the GPU waits; workers would overlap it with the step\n"
                 "proj/train.py:3:5: DDP102 [*] [warning] DataLoader without pin_memory=True in a CUDA script: every batch is copied "
                 "to the GPU from pageable memory, which is slower and cannot overlap with compute\n");
  // the command line's --select replaces the file's select; --ignore adds to its ignore
  Run sel = ddplint({"-q", "--select", "DDP102", "proj/legacy/old.py"}, "", d.path);
  CHECK(sel.out.find("DDP102") != std::string::npos);
  CHECK(sel.out.find("DDP101") == std::string::npos);
  CHECK(ddplint({"-q", "--ignore", "DDP102", "proj/train.py"}, "", d.path).rc == 0);
  Run iso = ddplint({"-q", "--isolated", "proj/train.py"}, "", d.path);
  CHECK(iso.out.find("DDP101") != std::string::npos);
  CHECK(iso.out.find("DDP102") == std::string::npos);  // the configuration's extend-select is not read
  Run cfg = ddplint({"-q", "--config", "proj/legacy/ddplint.toml", "proj/train.py"}, "", d.path);
  CHECK(cfg.out.find("DDP101") != std::string::npos);
  CHECK(cfg.out.find("DDP102") == std::string::npos);
  // standard input uses the configuration of --stdin-filename's folder
  Run in = ddplint({"-q", "--stdin-filename", "proj/legacy/x.py", "-"}, script, d.path);
  CHECK(in.out.find("DDP102") == std::string::npos);
  CHECK(in.out.find("DDP101") != std::string::npos);
  // bad configuration: exit 2 naming file, line and what is wrong; nothing is linted
  d.write("proj/legacy/ddplint.toml", "select = [\"DDP101\"]\nignore = [\"DDP9\"]\n");
  Run bad = ddplint({"proj"}, "", d.path);
  CHECK(bad.rc == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err == "ddplint: " + (d.path / "proj/legacy/ddplint.toml").string() +
                       ":2:11: unknown rule code or prefix 'DDP9' (see --list-rules) in `ignore`\n");
  // ... also with standard input among the paths (read, not linted), and a
  // report file from an earlier run is left as it was
  Run bad_stdin = ddplint({"--format", "json", "-", "proj"}, script, d.path);
  CHECK(bad_stdin.rc == 2);
  CHECK(bad_stdin.out.empty());
  d.write("report.json", "earlier\n");
  CHECK(ddplint({"--format", "json", "-o", "report.json", "proj"}, "", d.path).rc == 2);
  CHECK(slurp(d.path / "report.json") == "earlier\n");
  Run missing = ddplint({"--config", "nope.toml", "proj/train.py"}, "", d.path);
  CHECK(missing.rc == 2);
  CHECK(missing.err == "ddplint: nope.toml: no such file\n");
  CHECK(ddplint({"--config", "x.toml", "--isolated", "proj/train.py"}, "", d.path).rc == 2);
  // a relative --config: its per-file-ignores folders still match
  d.write("alt.toml", "[per-file-ignores]\n\"proj/*\" = [\"DDP102\"]\n");
  Run rel = ddplint({"-q", "--config", "alt.toml", "proj/train.py"}, "", d.path);
  CHECK(rel.out.find("DDP102") == std::string::npos);
  CHECK(rel.out.find("DDP101") != std::string::npos);
  // `select = []` selects nothing
  d.write("none.toml", "select = []\n");
  CHECK(ddplint({"-q", "--config", "none.toml", "proj/train.py"}, "", d.path).rc == 0);
  // unknown codes in # noqa are not errors
  d.write("noqa.py", "x = 1  # noqa: XYZ123\n");
  CHECK(ddplint({"-q", "--isolated", "noqa.py"}, "", d.path).rc == 0);
}

TEST_CASE("--fix: writes safe fixes atomically, keeps the mode, is idempotent; --diff changes nothing") {
  TempDir d;
  const std::string before = "import torch\nfrom torch.utils.data import DataLoader\n"
                             "l = DataLoader(ds, num_workers=2)  # train loader\n"
                             "with torch.cuda.amp.autocast():\n    y = model(x)\n";
  const std::string after = "import torch\nfrom torch.utils.data import DataLoader\n"
                            "l = DataLoader(ds, num_workers=2, pin_memory=True)  # train loader\n"
                            "with torch.amp.autocast(\"cuda\"):\n    y = model(x)\n";
  fs::path f = d.write("train.py", before);
  ::chmod(f.c_str(), 0640);
  Run diff = ddplint({"--isolated", "--extend-select", "DDP102", "--diff", "train.py"}, "", d.path);
  CHECK(diff.rc == 1);
  CHECK(diff.out == "--- a/train.py\n+++ b/train.py\n@@ -1,5 +1,5 @@\n import torch\n from torch.utils.data import DataLoader\n"
                    "-l = DataLoader(ds, num_workers=2)  # train loader\n-with torch.cuda.amp.autocast():\n"
                    "+l = DataLoader(ds, num_workers=2, pin_memory=True)  # train loader\n"
                    "+with torch.amp.autocast(\"cuda\"):\n     y = model(x)\n");
  CHECK(contains(diff.err, "Would fix 2 findings."));
  CHECK(slurp(f) == before);
  Run fixed = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "--show-fixes", "train.py"}, "", d.path);
  CHECK(fixed.rc == 0);
  CHECK(slurp(f) == after);
  CHECK(contains(fixed.out, "Found 2 findings (2 fixed, 0 remaining) in 1 file."));
  CHECK(contains(fixed.out, "1 x DDP102 (dataloader-without-pin-memory)"));
  struct stat st {};
  ::stat(f.c_str(), &st);
  CHECK((st.st_mode & 0777) == 0640);
  Run again = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "train.py"}, "", d.path);
  CHECK(again.rc == 0);
  CHECK(slurp(f) == after);
  CHECK(ddplint({"--isolated", "--extend-select", "DDP102", "--diff", "train.py"}, "", d.path).rc == 0);
  // no temporary files left beside it
  std::size_t entries = 0;
  for (auto& e : fs::directory_iterator(d.path)) entries += e.path().filename() == "train.py" ? 0 : 1;
  CHECK(entries == 0);
}

TEST_CASE("--fix with -j: one file named several ways is fixed once") {
  TempDir d;
  const std::string script = "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=2)\nmodel.cuda()\n";
  for (int round = 0; round < 5; ++round) {
    d.write("a.py", script);
    Run r = ddplint({"--isolated", "--extend-select", "DDP102", "-j", "8", "--fix", "a.py", "./a.py", "././a.py", (d.path / "a.py").string()}, "", d.path);
    CHECK(r.rc == 0);
    CHECK(contains(r.out, "Found 1 finding (1 fixed, 0 remaining) in 1 file."));
    CHECK(r.err.empty());
  }
}

TEST_CASE("--fix: remaining findings reported, syntax errors get no fixes, stdin prints the fixed source") {
  TempDir d;
  const std::string broken = "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=2)\nmodel.cuda()\ndef f(:\n";
  fs::path b = d.write("broken.py", broken);
  Run r = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "broken.py"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(slurp(b) == broken);
  CHECK(contains(r.out, "DDP001"));
  CHECK(contains(r.out, "DDP102"));
  Run in = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "-"}, "from torch.utils.data import DataLoader\nl = DataLoader(ds)\nmodel.cuda()\n", d.path);
  CHECK(in.rc == 1);  // DDP101 is left (its fix is not safe)
  CHECK(in.out == "from torch.utils.data import DataLoader\nl = DataLoader(ds, pin_memory=True)\nmodel.cuda()\n");
  CHECK(contains(in.err, "DDP101"));
  CHECK(contains(in.err, "(1 fixed, 1 remaining)"));
  // a symbolic link is followed: the target changes, the link stays a link
  fs::path target = d.write("real.py", "from torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=1)\nmodel.cuda()\n");
  fs::create_symlink(target, d.path / "link.py");
  CHECK(ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "link.py"}, "", d.path).rc == 0);
  CHECK(fs::is_symlink(d.path / "link.py"));
  CHECK(contains(slurp(target), "pin_memory=True"));
}

TEST_CASE("--fix: a write that fails (full disk) leaves the original intact and exits 2") {
  TempDir d;
  std::string before = "from torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=1)\nmodel.cuda()\n";
  for (int i = 0; i < 50; ++i) before += "x" + std::to_string(i) + " = 1\n";
  fs::path f = d.write("train.py", before);
  Run r = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "train.py"}, "", d.path, {"RLIMIT_FSIZE=64"});
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "ddplint: train.py: fixes not written: cannot write:"));
  CHECK(slurp(f) == before);
  std::size_t entries = 0;
  for (auto& e : fs::directory_iterator(d.path)) entries += 1;
  CHECK(entries == 1);  // the temporary file was removed
}

TEST_CASE("--fix killed at any moment leaves either the original or the whole fixed file, never a mix") {
  TempDir d;
  std::string before = "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\n";
  for (int i = 0; i < 20000; ++i) before += "l" + std::to_string(i) + " = DataLoader(ds, num_workers=1)\n";
  d.write("reference.py", before);
  Run full = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "reference.py"}, "", d.path);
  REQUIRE(full.rc <= 1);
  const std::string fixed = slurp(d.path / "reference.py");
  REQUIRE(fixed != before);
  for (int delay_ms : {0, 20, 60, 150, 400}) {
    CAPTURE(delay_ms);
    fs::path f = d.write("train.py", before);
    pid_t pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 1);
      ::dup2(null, 2);
      if (::chdir(d.path.c_str()) != 0) ::_exit(127);
      ::execl(DDPLINT_BIN, DDPLINT_BIN, "--isolated", "--extend-select", "DDP102", "--fix", "train.py", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::string now = slurp(f);
    CHECK((now == before || now == fixed));
    // a temporary file may remain beside it (a killed process cannot remove it), but never in its place
    for (auto& e : fs::directory_iterator(d.path)) {
      std::string name = e.path().filename().string();
      if (name.rfind(".train.py.ddplint-", 0) == 0) fs::remove(e.path());
    }
  }
}

TEST_CASE("--fix: a read-only file is not replaced; exit 2 with the reason") {
  TempDir d;
  std::string before = "from torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=1)\nmodel.cuda()\n";
  fs::path f = d.write("train.py", before);
  fs::permissions(f, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  Run r = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "train.py"}, "", d.path);
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "ddplint: train.py: fixes not written: the file is read-only"));
  CHECK(slurp(f) == before);
  CHECK((fs::status(f).permissions() & fs::perms::owner_write) == fs::perms::none);
  std::size_t entries = 0;
  for (auto& e : fs::directory_iterator(d.path)) entries += 1;
  CHECK(entries == 1);
}

TEST_CASE("--fix keeps owner, group and extended attributes, and refuses hard-linked files") {
  TempDir d;
  const std::string before = "from torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=1)\nmodel.cuda()\n";
  fs::path f = d.write("owned.py", before);
  const bool root = ::getuid() == 0;
  if (root) REQUIRE(::chown(f.c_str(), 65534, 65534) == 0);  // another user's file, fixed by root (a CI job)
  bool has_xattr = ::setxattr(f.c_str(), "user.ddplint-test", "kept", 4, 0) == 0;
  struct stat st_before {};
  REQUIRE(::stat(f.c_str(), &st_before) == 0);
  Run r = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "owned.py"}, "", d.path);
  CHECK(r.rc == 0);
  CHECK(slurp(f) != before);
  struct stat st_after {};
  REQUIRE(::stat(f.c_str(), &st_after) == 0);
  CHECK(st_after.st_uid == st_before.st_uid);
  CHECK(st_after.st_gid == st_before.st_gid);
  CHECK(st_after.st_mode == st_before.st_mode);
  if (has_xattr) {
    char value[16] = {};
    CHECK(::getxattr(f.c_str(), "user.ddplint-test", value, sizeof value) == 4);
    CHECK(std::string(value, 4) == "kept");
  }
  // a hard-linked file: replacing one name would split it from the other
  fs::path a = d.write("a.py", before);
  fs::create_hard_link(a, d.path / "b.py");
  Run h = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "a.py"}, "", d.path);
  CHECK(h.rc == 2);
  CHECK(contains(h.err, "ddplint: a.py: fixes not written: the file has 2 hard links"));
  CHECK(slurp(a) == before);
  CHECK(slurp(d.path / "b.py") == before);
}

TEST_CASE("paths: names with spaces, newlines and non-UTF-8 bytes are linted and reported") {
  TempDir d;
  for (const char* name : {"a b.py", "new\nline.py", "caf\xE9.py"}) d.write(name, kBadLoader);
  Run text = ddplint({"--isolated", "."}, "", d.path);
  CHECK(text.rc == 1);
  CHECK(contains(text.out, "Found 3 findings in 3 files."));
  for (const char* format : {"json", "sarif"}) {
    Run r = ddplint({"--isolated", "--format", format, "."}, "", d.path);
    CHECK(r.rc == 1);
    auto doc = nlohmann::json::parse(r.out);  // valid JSON: a non-UTF-8 name is replaced, not passed through
    CHECK((std::string(format) == "json" ? doc.size() : doc["runs"][0]["results"].size()) == 3);
  }
  CHECK(contains(text.out, "new\\x0aline.py:3:10: DDP101"));  // one line per finding: the newline is escaped
  d.write("esc\x1b[31m.py", kBadLoader);
  Run esc = ddplint({"--isolated", "--format", "grouped", "esc\x1b[31m.py"}, "", d.path);
  CHECK(contains(esc.out, "esc\\x1b[31m.py:"));
  CHECK(esc.out.find('\x1b') == std::string::npos);  // no escape sequence reaches the terminal
  Run named = ddplint({"--isolated", "new\nline.py", "caf\xE9.py"}, "", d.path);
  CHECK(named.rc == 1);
  CHECK(contains(named.out, "Found 2 findings in 2 files."));
}

TEST_CASE("paths: an unreadable folder is reported, the rest linted (also when run as root)") {
  TempDir d;
  fs::permissions(d.path, fs::perms::all);  // the unprivileged child must reach it
  d.write("ok.py", kBadLoader);
  fs::create_directory(d.path / "locked");
  fs::path inner = d.write("locked/inner.py", kBadLoader);
  fs::permissions(inner, fs::perms::all);
  fs::permissions(d.path / "ok.py", fs::perms::all);
  fs::permissions(d.path / "locked", fs::perms::none);
  Run r = ddplint({"--isolated", "."}, "", d.path, {"AS_NOBODY=1"});
  fs::permissions(d.path / "locked", fs::perms::owner_all);  // so that TempDir can remove it
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "locked"));
  CHECK(contains(r.out, "ok.py:3:10: DDP101"));
}

TEST_CASE("formats: full, grouped, github, json-lines, sarif; --statistics; --output-file") {
  TempDir d;
  d.write("a b.py", "import torch\nfrom torch.utils.data import DataLoader\nname = \"é\"; l = DataLoader(ds, num_workers=2)\nmodel.cuda()\n");
  Run full = ddplint({"--isolated", "--extend-select", "DDP102", "--format", "full", "a b.py"}, "", d.path);
  CHECK(full.rc == 1);
  CHECK(full.out == "a b.py:3:17: DDP102 [*] [warning] DataLoader without pin_memory=True in a CUDA script: every batch is copied to "
                    "the GPU from pageable memory, which is slower and cannot overlap with compute\n"
                    "  |\n"
                    "3 | name = \"é\"; l = DataLoader(ds, num_workers=2)\n"
                    "  |                 ^^^^^^^^^^\n"
                    "  |\n"
                    "  = help: Add `pin_memory=True`\n\n"
                    "Found 1 finding in 1 file.\n"
                    "[*] 1 fixable with the `--fix` option.\n");
  Run grouped = ddplint({"--isolated", "--extend-select", "DDP102", "--format", "grouped", "a b.py"}, "", d.path);
  CHECK(grouped.out.rfind("a b.py:\n  3:17 DDP102 [*] [warning] DataLoader without pin_memory=True", 0) == 0);
  Run gh = ddplint({"--isolated", "--extend-select", "DDP102", "--format", "github", "a b.py"}, "", d.path);
  CHECK(gh.out.rfind("::warning title=ddplint (DDP102),file=a b.py,line=3,col=17,endLine=3,endColumn=27::DDP102 ", 0) == 0);
  CHECK(std::count(gh.out.begin(), gh.out.end(), '\n') == 1);
  Run lines = ddplint({"--isolated", "--extend-select", "DDP102", "--format", "json-lines", "a b.py"}, "", d.path);
  auto one = nlohmann::json::parse(lines.out.substr(0, lines.out.find('\n')));
  CHECK(one["code"] == "DDP102");
  CHECK(one["fix"]["applicability"] == "safe");
  Run sarif = ddplint({"--isolated", "--extend-select", "DDP102", "--format", "sarif", "a b.py"}, "", d.path);
  auto log = nlohmann::json::parse(sarif.out);
  CHECK(log["version"] == "2.1.0");
  auto& run = log["runs"][0];
  CHECK(run["tool"]["driver"]["rules"].size() >= 42);
  auto& rule0 = run["tool"]["driver"]["rules"][0];
  for (const char* key : {"id", "name", "shortDescription", "fullDescription", "help", "helpUri", "defaultConfiguration"})
    CHECK_MESSAGE(rule0.contains(key), key);
  REQUIRE(run["results"].size() == 1);
  auto& res = run["results"][0];
  CHECK(res["ruleId"] == "DDP102");
  CHECK(res["level"] == "warning");
  CHECK(run["tool"]["driver"]["rules"][res["ruleIndex"].get<int>()]["id"] == "DDP102");
  auto& loc = res["locations"][0]["physicalLocation"];
  CHECK(loc["artifactLocation"]["uri"] == "a%20b.py");  // relative to the root, percent-encoded
  CHECK(loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%");
  CHECK(loc["region"] == nlohmann::json{{"startLine", 3}, {"startColumn", 17}, {"endLine", 3}, {"endColumn", 27}});
  CHECK(res["partialFingerprints"].size() == 1);
  CHECK(run["columnKind"] == "unicodeCodePoints");
  // --statistics: count, code, name, [*] when --fix would fix them all
  Run stats = ddplint({"--isolated", "--extend-select", "DDP102", "--statistics", "a b.py"}, "", d.path);
  CHECK(stats.out == "1  DDP102   dataloader-without-pin-memory  [*]\nFound 1 finding in 1 file.\n");
  // --output-file: the report goes to the file, nothing to stdout
  Run file = ddplint({"--isolated", "--extend-select", "DDP102", "--format", "json", "-o", "report.json", "a b.py"}, "", d.path);
  CHECK(file.rc == 1);
  CHECK(file.out.empty());
  CHECK(nlohmann::json::parse(slurp(d.path / "report.json"))[0]["code"] == "DDP102");
  // the report file must not be a file to lint: opening it would truncate the source (found by hostile testing)
  const std::string source_before = slurp(d.path / "a b.py");
  Run self = ddplint({"--isolated", "--extend-select", "DDP102", "--fix", "-o", "a b.py", "a b.py"}, "", d.path);
  CHECK(self.rc == 2);
  CHECK(contains(self.err, "the report file is one of the files to lint"));
  CHECK(slurp(d.path / "a b.py") == source_before);
  d.write("sub/report.py", "# old report\n");
  Run inside = ddplint({"--isolated", "--extend-select", "DDP102", "-o", "sub/report.py", "."}, "", d.path);
  CHECK(inside.rc == 2);
  CHECK(slurp(d.path / "sub" / "report.py") == "# old report\n");
  Run nowhere = ddplint({"--isolated", "--extend-select", "DDP102", "-o", "missing/dir/report.txt", "a b.py"}, "", d.path);
  CHECK(nowhere.rc == 2);
  CHECK(contains(nowhere.err, "missing/dir/report.txt"));
}

TEST_CASE("--format full shows a long line as a window around each finding (output linear, not quadratic)") {
  TempDir d;
  std::string nested = "x = ";
  for (int i = 0; i < 2000; ++i) nested += "DataLoader(";
  nested += "ds";
  for (int i = 0; i < 2000; ++i) nested += ")";
  d.write("long.py", "import torch\nfrom torch.utils.data import DataLoader\nmodel = model.cuda()\n" + nested + "\n");
  Run r = ddplint({"--isolated", "--format", "full", "long.py"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "4 | x = DataLoader(DataLoader("));
  CHECK(contains(r.out, "..."));
  // 4,000 findings of one 26 KB line: about 2 MB, where whole lines made it 141 MB (found by hostile testing)
  CHECK(r.out.size() < 4u * 1024u * 1024u);
}

TEST_CASE("github format escapes as the Actions toolkit does") {
  TempDir d;
  d.write("x,y:z%.py", "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=2)\nmodel.cuda()\n");
  Run gh = ddplint({"--isolated", "--extend-select", "DDP102", "--format", "github", "x,y:z%.py"}, "", d.path);
  CHECK(contains(gh.out, ",file=x%2Cy%3Az%25.py,"));
}

TEST_CASE("ddplint rule: one rule, --all as JSON, and docs/rules.md is current") {
  Run one = ddplint({"rule", "DDP102"});
  CHECK(one.rc == 0);
  CHECK(one.out == ddplint({"--explain", "DDP102"}).out);
  CHECK(contains(one.out, "## What it does"));
  Run all = ddplint({"rule", "--all", "--format", "json"});
  auto list = nlohmann::json::parse(all.out);
  CHECK(list.size() >= 42);
  for (const auto& r : list) {
    for (const char* key : {"code", "name", "summary", "severity", "fix", "explanation"}) CHECK_MESSAGE(r.contains(key), key);
  }
  CHECK(list[2]["code"] == "DDP101");
  CHECK(list[2]["fix"] == "sometimes");
  Run page = ddplint({"rule", "--all", "--format", "markdown"});
  CHECK_MESSAGE(page.out == slurp(fs::path(DDPLINT_SOURCE_DIR) / "docs/rules.md"),
                "docs/rules.md is stale: run `build/release/ddplint rule --all --format markdown > docs/rules.md`");
  CHECK(ddplint({"rule"}).rc == 2);
  CHECK(ddplint({"rule", "DDP999"}).rc == 2);
}

TEST_CASE("discovery: GIT_CEILING_DIRECTORIES stops the search for the repository, as in git") {
  TempDir d;
  REQUIRE(std::system(("git init -q " + (d.path / "outer").string()).c_str()) == 0);
  d.write("outer/.gitignore", "ignored.py\n");
  const std::string script = "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, batch_size=4)\n";
  d.write("outer/inner/sub/train.py", script);
  d.write("outer/inner/sub/ignored.py", script);
  auto files = [&](const std::vector<std::string>& env) {
    Run r = ddplint({"-q", "--select", "DDP101", "."}, "", d.path / "outer/inner/sub", env);
    std::set<std::string> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) out.insert(line.substr(0, line.find(':')));
    return out;
  };
  // git itself: inside the repository, unless a ceiling lies between
  auto git_sees_repo = [&](const std::string& ceiling) {
    std::string cmd = "cd " + (d.path / "outer/inner/sub").string() + " && GIT_CEILING_DIRECTORIES=" + ceiling +
                      " git rev-parse --show-toplevel >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  };
  const std::string inner = (d.path / "outer/inner").string(), outer = (d.path / "outer").string();
  CHECK(files({}) == std::set<std::string>{"train.py"});
  CHECK(!git_sees_repo(inner));
  CHECK(files({"GIT_CEILING_DIRECTORIES=" + inner}) == std::set<std::string>{"ignored.py", "train.py"});
  CHECK(files({"GIT_CEILING_DIRECTORIES=/nonexistent:" + inner}) == std::set<std::string>{"ignored.py", "train.py"});
  // a ceiling at the repository's own folder: git does not walk up into it either
  CHECK(!git_sees_repo(outer));
  CHECK(files({"GIT_CEILING_DIRECTORIES=" + outer}) == std::set<std::string>{"ignored.py", "train.py"});
  // ceilings elsewhere, relative or empty entries: no effect
  CHECK(git_sees_repo("relative/dir::/nonexistent"));
  CHECK(files({"GIT_CEILING_DIRECTORIES=relative/dir::/nonexistent"}) == std::set<std::string>{"train.py"});
}

TEST_CASE("discovery: .gitignore and .git/info/exclude, exclude patterns, --force-exclude, rule options") {
  TempDir d;
  const std::string script = "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n"
                             "dist.init_process_group(\"nccl\")\nl = DataLoader(ds, batch_size=4, num_workers=2)\nmodel.cuda()\n";
  REQUIRE(std::system(("git init -q " + d.path.string()).c_str()) == 0);
  d.write(".gitignore", "generated/\n*_pb2.py\n");
  d.write(".git/info/exclude", "scratch.py\n");
  d.write("src/train.py", script);
  d.write("src/model_pb2.py", script);
  d.write("generated/out.py", script);
  d.write("scratch.py", script);
  d.write("legacy/old.py", script);
  auto files_of = [](const std::string& out) {
    std::vector<std::string> files;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      std::string f = line.substr(0, line.find(':'));
      if (files.empty() || files.back() != f) files.push_back(f);
    }
    return files;
  };
  Run all = ddplint({"-q", "--select", "DDP102", "."}, "", d.path);
  CHECK(files_of(all.out) == std::vector<std::string>{"legacy/old.py", "src/train.py"});
  {  // the same through a symbolic link to the repository: .gitignore still applies
    fs::path link = d.path.string() + "_link";
    fs::create_directory_symlink(d.path, link);
    Run through = ddplint({"-q", "--select", "DDP102", link.string()}, "", d.path);
    fs::remove(link);
    CHECK(files_of(through.out) ==
          std::vector<std::string>{link.string() + "/legacy/old.py", link.string() + "/src/train.py"});
  }
  // a file named on the command line is linted even if ignored, unless --force-exclude
  CHECK(files_of(ddplint({"-q", "--select", "DDP102", "generated/out.py"}, "", d.path).out) ==
        std::vector<std::string>{"generated/out.py"});
  Run forced = ddplint({"-q", "--select", "DDP102", "--force-exclude", "generated/out.py", "src/train.py"}, "", d.path);
  CHECK(files_of(forced.out) == std::vector<std::string>{"src/train.py"});
  {  // a folder an exclude pattern names (or a default exclude) leaves out the files named under it
    d.write("ddplint.toml", "extend-exclude = [\"legacy\"]\n");
    d.write(".venv/lib/x.py", script);
    Run named = ddplint({"-q", "--select", "DDP102", "--force-exclude", "legacy/old.py", "./.venv/lib/x.py",
                         (d.path / "legacy/old.py").string(), "src/train.py"},
                        "", d.path);
    CHECK(files_of(named.out) == std::vector<std::string>{"src/train.py"});
    CHECK(files_of(ddplint({"-q", "--select", "DDP102", "legacy/old.py"}, "", d.path).out) ==
          std::vector<std::string>{"legacy/old.py"});  // without --force-exclude, a named file is linted
    fs::remove(d.path / "ddplint.toml");
    fs::remove_all(d.path / ".venv");
  }
  // configuration: extend-exclude, respect-gitignore = false, tiny-batch-threshold
  d.write("pyproject.toml", "[tool.ddplint]\nextend-exclude = [\"legacy\"]\nrespect-gitignore = false\n");
  Run configured = ddplint({"-q", "--select", "DDP102", "."}, "", d.path);
  CHECK(files_of(configured.out) ==
        std::vector<std::string>{"generated/out.py", "scratch.py", "src/model_pb2.py", "src/train.py"});
  // the command line overrides respect-gitignore either way
  CHECK(files_of(ddplint({"-q", "--select", "DDP102", "--respect-gitignore", "."}, "", d.path).out) ==
        std::vector<std::string>{"src/train.py"});
  d.write("pyproject.toml", "[tool.ddplint]\n");
  CHECK(files_of(ddplint({"-q", "--select", "DDP102", "--no-respect-gitignore", "."}, "", d.path).out) ==
        std::vector<std::string>{"generated/out.py", "legacy/old.py", "scratch.py", "src/model_pb2.py", "src/train.py"});
  d.write("pyproject.toml", "[tool.ddplint]\nexclude = [\"src/*\"]\n");
  CHECK(files_of(ddplint({"-q", "--select", "DDP102", "."}, "", d.path).out) == std::vector<std::string>{"legacy/old.py"});
  // DDP602's threshold: batch 4 is tiny by default (8), not with a threshold of 4
  d.write("pyproject.toml", "[tool.ddplint]\nselect = [\"DDP602\"]\n");
  CHECK(contains(ddplint({"-q", "src/train.py"}, "", d.path).out, "DDP602"));
  d.write("pyproject.toml", "[tool.ddplint]\nselect = [\"DDP602\"]\ntiny-batch-threshold = 4\n");
  CHECK(ddplint({"-q", "src/train.py"}, "", d.path).out.empty());
  d.write("pyproject.toml", "[tool.ddplint]\ntiny-batch-threshold = \"big\"\n");
  Run bad = ddplint({"-q", "src/train.py"}, "", d.path);
  CHECK(bad.rc == 2);
  CHECK(contains(bad.err, "pyproject.toml:2:24: `tiny-batch-threshold` must be an integer"));
}

TEST_CASE("ddplint verify: the plan, findings first, and the exits when ddplint-verify is missing or sees no GPU") {
  TempDir d;
  d.write("train.py", "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds)\nmodel.cuda()\n");
  Run plan = ddplint({"verify", "--plan-only", "--batch-bytes", "1048576", "train.py"}, "", d.path);
  CHECK(plan.rc == 0);
  auto p = nlohmann::json::parse(plan.out);
  CHECK(p["measurements"].size() == 2);  // cpu_cores (DDP101) and h2d_copy (DDP102)
  CHECK(p["measurements"][1]["bytes"] == nlohmann::json{{"value", 1048576}, {"source", "option"}});
  // ddplint-verify not built: the findings, then one line saying how to build it; exit 4
  Run missing = ddplint({"verify", "train.py"}, "", d.path, {"DDPLINT_VERIFY_BIN=/nonexistent/ddplint-verify"});
  CHECK(missing.rc == 4);
  CHECK(contains(missing.out, "train.py:3:5: DDP101"));
  CHECK(contains(missing.err, "ddplint-verify is not built: build it with"));
  CHECK(contains(missing.err, "(looked in: DDPLINT_VERIFY_BIN=/nonexistent/ddplint-verify)"));
  CHECK(contains(missing.out, "not measured: ddplint-verify did not run"));
  // a ddplint-verify that finds no CUDA device: the CPU measurement is reported, then the no-GPU line; exit 3
  d.write("fake-verify",
          "#!/bin/sh\ncat > \"$2\" <<'JSON'\n{\"version\":1,\"measurements\":["
          "{\"id\":\"cpu_cores\",\"status\":\"ok\",\"values\":{\"cores\":2,\"gpus\":0,\"advised_num_workers\":2}},"
          "{\"id\":\"h2d_copy\",\"status\":\"skipped\",\"reason\":\"no CUDA device visible\"}]}\nJSON\nexit 3\n");
  ::chmod((d.path / "fake-verify").c_str(), 0755);
  Run nogpu = ddplint({"verify", "train.py"}, "", d.path, {"DDPLINT_VERIFY_BIN=" + (d.path / "fake-verify").string()});
  CHECK(nogpu.rc == 3);
  CHECK(contains(nogpu.out, "measured: 2 CPU cores for 0 GPUs: num_workers up to 2 per rank"));
  CHECK(contains(nogpu.out, "not measured: no CUDA device visible"));
  CHECK(contains(nogpu.out, "no CUDA device visible: verification skipped"));
  Run json = ddplint({"verify", "--format", "json", "train.py"}, "", d.path, {"DDPLINT_VERIFY_BIN=" + (d.path / "fake-verify").string()});
  auto j = nlohmann::json::parse(json.out);
  CHECK(j["findings"].size() == 2);
  CHECK(j["results"]["measurements"][0]["id"] == "cpu_cores");
}

// `./build.sh test` builds build/release/ddplint and, with the verify preset,
// build/verify/ddplint-verify: `build/release/ddplint verify` finds the sibling
// tree's ddplint-verify by its own location (/proc/self/exe), without
// DDPLINT_VERIFY_BIN or PATH. A copy of ddplint in a scratch tree of that shape,
// with a fake ddplint-verify that leaves a mark.
TEST_CASE("ddplint verify: finds ../verify/ddplint-verify beside its own build tree, and says where it looked") {
  TempDir d;
  fs::create_directories(d.path / "release");
  fs::copy_file(DDPLINT_BIN, d.path / "release" / "ddplint");
  d.write("train.py", "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds)\nmodel.cuda()\n");
  // no DDPLINT_VERIFY_BIN, and a PATH without any ddplint-verify
  auto verify = [&]() {
    std::string cmd = "cd '" + d.path.string() + "' && env -u DDPLINT_VERIFY_BIN PATH=/usr/bin:/bin ./release/ddplint verify train.py"
                      " >out 2>err; echo $? >rc";
    REQUIRE(std::system(cmd.c_str()) == 0);
    return Run{std::stoi(slurp(d.path / "rc")), slurp(d.path / "out"), slurp(d.path / "err")};
  };
  Run missing = verify();
  CHECK(missing.rc == 4);
  CHECK(contains(missing.err, "ddplint-verify is not built"));
  CHECK(contains(missing.err, "(looked in: " + (d.path / "release" / "ddplint-verify").string() + ", " +
                                  (d.path / "verify" / "ddplint-verify").string() + ", PATH)"));
  d.write("verify/ddplint-verify",
          "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\ncat > \"$2\" <<'JSON'\n{\"version\":1,\"measurements\":["
          "{\"id\":\"cpu_cores\",\"status\":\"ok\",\"values\":{\"cores\":2,\"gpus\":0,\"advised_num_workers\":2}},"
          "{\"id\":\"h2d_copy\",\"status\":\"skipped\",\"reason\":\"no CUDA device visible\"}]}\nJSON\nexit 3\n");
  ::chmod((d.path / "verify" / "ddplint-verify").c_str(), 0755);
  Run found = verify();
  CHECK(fs::exists(d.path / "verify" / "ran"));
  CHECK(found.rc == 3);
  CHECK(contains(found.out, "measured: 2 CPU cores for 0 GPUs"));
  CHECK_FALSE(contains(found.err, "is not built"));
}

TEST_CASE("cache: warm runs equal --no-cache runs, across files, after edits and with a damaged pack") {
  TempDir d;
  fs::copy(fs::path(DDPLINT_SOURCE_DIR) / "fixtures/projects/engine_split", d.path / "p", fs::copy_options::recursive);
  const fs::path p = d.path / "p";
  fs::remove_all(p / ".ddplint_cache");  // the checkout's own, from earlier runs over fixtures/
  auto run = [&](std::vector<std::string> extra, const std::vector<std::string>& env = {}) {
    std::vector<std::string> args{"--format", "json", "--exit-zero"};
    args.insert(args.end(), extra.begin(), extra.end());
    return ddplint(args, "", p, env);
  };
  const Run uncached = run({"--no-cache", "."});
  REQUIRE(uncached.rc == 0);
  REQUIRE(contains(uncached.out, "util/misc.py"));  // the helper's sync, per step through engine.py
  CHECK(!fs::exists(p / ".ddplint_cache"));         // --no-cache writes nothing
  CHECK(run({"."}, {"DDPLINT_NO_CACHE=1"}).out == uncached.out);
  CHECK(!fs::exists(p / ".ddplint_cache"));
  const Run cold = run({"."});
  CHECK(cold.out == uncached.out);
  REQUIRE(fs::exists(p / ".ddplint_cache/.gitignore"));
  const Run warm = run({"."});
  CHECK(warm.out == uncached.out);
  CHECK(warm.err == uncached.err);
  // one file named: its project's facts, from the cache
  CHECK(run({"util/misc.py"}).out == run({"--no-cache", "util/misc.py"}).out);
  // engine.py now calls the helper every 100 steps: misc.py's finding goes, though misc.py did not change
  std::string engine = slurp(p / "engine.py");
  const std::string call = "        misc.clip_and_report(model)\n";
  REQUIRE(contains(engine, call));
  engine.replace(engine.find(call), call.size(), "        if step % 100 == 0:\n            misc.clip_and_report(model)\n");
  d.write("p/engine.py", engine);
  const Run edited = run({"."});
  CHECK(edited.out == run({"--no-cache", "."}).out);
  CHECK(edited.out != uncached.out);
  CHECK(!contains(edited.out, "util/misc.py"));
  // a damaged pack: recomputed, same output
  for (const auto& entry : fs::directory_iterator(p / ".ddplint_cache")) {
    if (!entry.path().filename().string().starts_with("pack-")) continue;
    std::string bytes = slurp(entry.path());
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << bytes;
  }
  CHECK(run({"."}).out == edited.out);
  // --cache-dir: one folder elsewhere
  const Run elsewhere = run({"--cache-dir", (d.path / "shared").string(), "."});
  CHECK(elsewhere.out == edited.out);
  CHECK(fs::exists(d.path / "shared/.gitignore"));
  CHECK(run({"."}, {"DDPLINT_CACHE_DIR=" + (d.path / "shared").string()}).out == edited.out);
  // fixing with a warm cache fixes what a cold run fixes
  fs::copy(p, d.path / "q", fs::copy_options::recursive);
  const Run fixed_warm = ddplint({"--fix", "--exit-zero", "."}, "", p);
  const Run fixed_cold = ddplint({"--fix", "--exit-zero", "--no-cache", "."}, "", d.path / "q");
  CHECK(fixed_warm.out == fixed_cold.out);
  CHECK(slurp(p / "main.py") == slurp(d.path / "q/main.py"));
}

TEST_CASE("project findings: the chain of calls in the message and as SARIF relatedLocations") {
  const fs::path p = fs::path(DDPLINT_SOURCE_DIR) / "fixtures/projects/engine_split";
  Run text = ddplint({"--no-cache", "--exit-zero", "util/misc.py"}, "", p);
  CHECK(contains(text.out, "(every step through main.py:30 \u2192 engine.py:17)"));
  Run sarif = ddplint({"--no-cache", "--exit-zero", "--format", "sarif", "util/misc.py"}, "", p);
  auto log = nlohmann::json::parse(sarif.out);
  const auto& results = log["runs"][0]["results"];
  REQUIRE(results.size() == 1);
  const auto& related = results[0]["relatedLocations"];
  REQUIRE(related.size() == 2);
  // relative to %SRCROOT%, as the result's own uri is
  std::string own = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
  REQUIRE(own.ends_with("util/misc.py"));
  std::string base = own.substr(0, own.size() - std::string("util/misc.py").size());
  CHECK(related[0]["physicalLocation"]["artifactLocation"]["uri"] == base + "main.py");
  CHECK(related[0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%");
  CHECK(related[0]["physicalLocation"]["region"]["startLine"] == 30);
  CHECK(related[1]["physicalLocation"]["artifactLocation"]["uri"] == base + "engine.py");
  CHECK(related[1]["physicalLocation"]["region"]["startLine"] == 17);
  CHECK(related[1]["id"] == 1);
}

// Launch scripts: a folder run finds them by extension and by shebang (and
// not other extensionless files), each is linted as shell with its project's
// Python scripts, JSON and SARIF carry them, `# noqa` in a shell comment
// works, standard input is shell with a shell --stdin-filename, and the fix
// to torchrun is applied (safe: the script reads LOCAL_RANK).
TEST_CASE("launch scripts: discovery, project link, formats, noqa, stdin and --fix") {
  TempDir d;
  d.write("pyproject.toml", "[project]\nname = \"p\"\n");
  d.write("train.py",
          "import os\nimport torch\nimport torch.distributed as dist\ndist.init_process_group(\"nccl\")\n"
          "torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n");
  d.write("scripts/run.slurm",
          "#!/bin/bash\n#SBATCH --gpus-per-node=4\npython train.py\n"
          "python -m torch.distributed.launch --nproc_per_node 4 train.py\n");
  d.write("scripts/launch", "#!/usr/bin/env bash\nexport NCCL_P2P_DISABLE=1\nexport NCCL_DEBUG=INFO  # noqa: DDP306\n");
  d.write("scripts/README", "#!/usr/bin/env python3\nexport NCCL_P2P_DISABLE=1\n");  // not a shell shebang: not found
  Run r = ddplint({"-q", "."}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "scripts/launch:2:8: DDP304"));
  CHECK_FALSE(contains(r.out, "DDP306"));
  CHECK_FALSE(contains(r.out, "README"));
  // the launch script resolves train.py from the project root
  CHECK(contains(r.out, "scripts/run.slurm:3:1: DDP804"));
  CHECK(contains(r.out, "scripts/run.slurm:4:1: DDP206"));
  // alone, the launch knows nothing of train.py
  CHECK_FALSE(contains(ddplint({"-q", "--no-project", "scripts/run.slurm"}, "", d.path).out, "DDP804"));
  Run j = ddplint({"--format", "json", "scripts/launch"}, "", d.path);
  auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc.size() == 1);
  CHECK(doc[0]["code"] == "DDP304");
  CHECK(doc[0]["location"]["row"] == 2);
  Run sarif = ddplint({"--format", "sarif", "scripts/launch"}, "", d.path);
  auto sarif_doc = nlohmann::json::parse(sarif.out);
  CHECK(sarif_doc["runs"][0]["results"][0]["ruleId"] == "DDP304");
  // standard input named as a shell script
  Run in = ddplint({"-q", "--stdin-filename", "run.sh", "-"}, "torchrun --standalone --nnodes 2 t.py\n", d.path);
  CHECK(contains(in.out, "run.sh:1:10: DDP802"));
  // the safe fix (train.py reads LOCAL_RANK): torchrun's module in place of the legacy launcher
  Run fix = ddplint({"-q", "--fix", "scripts/run.slurm"}, "", d.path);
  CHECK(slurp((d.path / "scripts/run.slurm").string()).find("python -m torch.distributed.run --nproc_per_node 4 train.py\n") != std::string::npos);
  CHECK_FALSE(contains(fix.out, "DDP206"));
}

TEST_CASE("Markdown: the shell blocks of a README, named or selected by extend-include; launches feed the Python side") {
  TempDir d;
  d.write("pyproject.toml", "[project]\nname = \"p\"\n");
  d.write("train.py",
          "import argparse, os\nimport torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n"
          "p = argparse.ArgumentParser()\np.add_argument(\"--workers\", type=int, default=0)\nargs = p.parse_args()\n"
          "dist.init_process_group(\"nccl\")\ntorch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n"
          "loader = DataLoader(range(8), num_workers=args.workers, pin_memory=True)\n");
  d.write("docs/usage.md",
          "# Usage\n\nNot a command: `python -m torch.distributed.launch train.py`.\n\n"
          "```bash\n$ python -m torch.distributed.launch --nproc_per_node 4 train.py\n```\n\n"
          "```python\nimport os\nos.environ[\"NCCL_P2P_DISABLE\"] = \"1\"\n```\n\n"
          "```console\n$ export NCCL_P2P_DISABLE=1  # noqa: DDP304\nexport NCCL_IB_DISABLE=1 (output, not a command)\n```\n");
  // not found by a folder run unless the configuration includes it
  Run plain = ddplint({"-q", "."}, "", d.path);
  CHECK_FALSE(contains(plain.out, "usage.md"));
  CHECK(contains(plain.out, "train.py:10:31: DDP101"));
  // named: linted
  Run named = ddplint({"-q", "docs/usage.md"}, "", d.path);
  CHECK(named.rc == 1);
  CHECK(contains(named.out, "docs/usage.md:6:3: DDP206"));
  CHECK_FALSE(contains(named.out, "usage.md:3:"));  // prose
  CHECK_FALSE(contains(named.out, "DDP304"));  // python block, suppressed line, output line
  d.write("pyproject.toml", "[project]\nname = \"p\"\n[tool.ddplint]\nextend-include = [\"*.md\"]\n");
  Run included = ddplint({"-q", "."}, "", d.path);
  CHECK(contains(included.out, "docs/usage.md:6:3: DDP206"));
  // the fix edits the block in place
  ddplint({"-q", "--fix", "docs/usage.md"}, "", d.path);
  CHECK(contains(slurp((d.path / "docs/usage.md").string()), "$ python -m torch.distributed.run --nproc_per_node 4 train.py\n"));
  // `include` replaces the default list: only what it names
  d.write("pyproject.toml", "[project]\nname = \"p\"\n[tool.ddplint]\ninclude = [\"docs/*.md\"]\n");
  d.write("docs/usage.md", "```sh\ntorchrun --standalone --nnodes=2 train.py\n```\n");
  Run only = ddplint({"-q", "."}, "", d.path);
  CHECK(contains(only.out, "docs/usage.md:2:10: DDP802"));
  CHECK_FALSE(contains(only.out, "train.py:"));
  // a launch script of the project gives train.py its --workers: no DDP101 at the default 0
  d.write("pyproject.toml", "[project]\nname = \"p\"\n");
  d.write("run.sh", "#!/bin/bash\ntorchrun --nproc_per_node=4 train.py --workers 8\n");
  CHECK_FALSE(contains(ddplint({"-q", "--no-cache", "train.py"}, "", d.path).out, "DDP101"));
  d.write("run.sh", "#!/bin/bash\ntorchrun --nproc_per_node=4 train.py --workers=0\n");
  CHECK(contains(ddplint({"-q", "--no-cache", "train.py"}, "", d.path).out, "(0, given by run.sh:2)"));
}


namespace {
// A notebook of `cells` (JSON), written as Jupyter writes it: indent 1, a final newline.
std::string notebook_json(const nlohmann::ordered_json& cells) {
  nlohmann::ordered_json nb = {{"cells", cells},
                               {"metadata", {{"kernelspec", {{"display_name", "Python 3"}, {"name", "python3"}}}}},
                               {"nbformat", 4},
                               {"nbformat_minor", 5}};
  return nb.dump(1, ' ', false) + "\n";
}
nlohmann::ordered_json nb_code(const nlohmann::ordered_json& source, int count = 1,
                               nlohmann::ordered_json outputs = nlohmann::ordered_json::array()) {
  return {{"cell_type", "code"}, {"execution_count", count}, {"metadata", nlohmann::ordered_json::object()},
          {"outputs", std::move(outputs)}, {"source", source}};
}
nlohmann::ordered_json nb_markdown(const std::string& text) {
  return {{"cell_type", "markdown"}, {"metadata", nlohmann::ordered_json::object()}, {"source", text}};
}
// Cells of a DDP notebook: a Markdown title (cell 1), imports with a magic (2),
// a loader without pin_memory (3: DDP102 at row 2, column 10).
nlohmann::ordered_json ddp_cells() {
  using J = nlohmann::ordered_json;
  J outputs = J::array({{{"name", "stdout"}, {"output_type", "stream"}, {"text", J::array({"GPU 0: µ\n"})}}});
  return J::array({nb_markdown("# Training — notes"),
                   nb_code(J::array({"%matplotlib inline\n", "!nvidia-smi -L\n", "import torch\n",
                                     "from torch.utils.data import DataLoader\n"}),
                           1, outputs),
                   nb_code(J::array({"model = torch.nn.Linear(4, 4).cuda()\n",
                                     "loader = DataLoader(ds, num_workers=2)  # train\n",
                                     "for x in loader:\n", "    !echo step\n", "    model(x).sum().backward()"}),
                           2)});
}
}  // namespace

// Ruff lints notebooks cell by cell and names the cell in its text output as
// `path:cell N:row:col` (https://github.com/astral-sh/ruff/issues/6673, made
// 1-based and consistent in https://github.com/astral-sh/ruff/pull/7662), and
// its JSON gives a `cell` with rows counted in the cell
// (https://github.com/astral-sh/ruff/pull/7664).
TEST_CASE("notebooks: findings as path:cell N:row:col, JSON `cell`, SARIF properties; magics are not Python") {
  TempDir d;
  d.write("train.ipynb", notebook_json(ddp_cells()));
  Run r = ddplint({"--isolated", "--select", "DDP102", "train.ipynb"}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "train.ipynb:cell 3:2:10: DDP102 "));
  CHECK_FALSE(contains(r.out, "DDP001"));  // %matplotlib, !nvidia-smi and the indented !echo parse
  CHECK(r.err.empty());
  Run grouped = ddplint({"--isolated", "--select", "DDP102", "--format", "grouped", "train.ipynb"}, "", d.path);
  CHECK(contains(grouped.out, "  cell 3:2:10 DDP102 "));
  Run full = ddplint({"--isolated", "--select", "DDP102", "--format", "full", "train.ipynb"}, "", d.path);
  CHECK(contains(full.out, "train.ipynb:cell 3:2:10: DDP102 [*] "));
  CHECK(contains(full.out, "2 | loader = DataLoader(ds, num_workers=2)  # train\n"));
  Run j = ddplint({"--isolated", "--select", "DDP102", "--format", "json", "train.ipynb"}, "", d.path);
  auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc.size() == 1);
  CHECK(doc[0]["cell"] == 3);
  CHECK(doc[0]["filename"] == "train.ipynb");
  CHECK(doc[0]["location"] == nlohmann::json{{"row", 2}, {"column", 10}});
  CHECK(doc[0]["fix"]["edits"][0]["location"]["row"] == 2);
  // a Python file's record has no `cell`
  d.write("t.py", kBadLoader);
  CHECK_FALSE(nlohmann::json::parse(ddplint({"--format", "json", "t.py"}, "", d.path).out)[0].contains("cell"));
  Run sarif = ddplint({"--isolated", "--select", "DDP102", "--format", "sarif", "train.ipynb"}, "", d.path);
  auto result = nlohmann::json::parse(sarif.out)["runs"][0]["results"][0];
  CHECK(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.ipynb");
  // the region: the line of the notebook file where the row is written (GitHub needs a startLine)
  std::string text = notebook_json(ddp_cells());
  auto file_line = std::count(text.begin(), text.begin() + static_cast<long>(text.find("\"loader = ")), '\n') + 1;
  CHECK(result["locations"][0]["physicalLocation"]["region"]["startLine"] == file_line);
  CHECK(result["properties"]["cell"] == 3);
  CHECK(result["properties"]["cellRegion"]["startLine"] == 2);
  Run gh = ddplint({"--isolated", "--select", "DDP102", "--format", "github", "train.ipynb"}, "", d.path);
  CHECK(contains(gh.out, "file=train.ipynb,line=" + std::to_string(file_line) + "::cell 3:2:10: DDP102 "));
  CHECK_FALSE(contains(gh.out, "col="));
  // `# noqa` on the cell's line
  auto cells = ddp_cells();
  cells[2]["source"][1] = "loader = DataLoader(ds, num_workers=2)  # noqa: DDP102\n";
  d.write("quiet.ipynb", notebook_json(cells));
  CHECK(ddplint({"--isolated", "--select", "DDP102", "quiet.ipynb"}, "", d.path).rc == 0);
  // a cell magic's cell is not read
  cells = ddp_cells();
  cells[2]["source"].insert(cells[2]["source"].begin(), "%%time\n");
  d.write("timed.ipynb", notebook_json(cells));
  CHECK(ddplint({"--isolated", "--select", "DDP102", "timed.ipynb"}, "", d.path).rc == 0);
}

// Ruff's --fix edits the cells and writes the notebook back, leaving outputs
// and metadata alone; its --diff shows each changed cell as `path:cell N`
// (https://github.com/astral-sh/ruff/pull/7662).
TEST_CASE("notebooks: --fix edits the cells and keeps everything else; --diff per cell; stdin") {
  TempDir d;
  const std::string before = notebook_json(ddp_cells());
  fs::path f = d.write("train.ipynb", before);
  Run diff = ddplint({"--isolated", "--select", "DDP102", "--diff", "train.ipynb"}, "", d.path);
  CHECK(diff.rc == 1);
  CHECK(contains(diff.out, "--- a/train.ipynb:cell 3\n+++ b/train.ipynb:cell 3\n"));
  CHECK(contains(diff.out, "+loader = DataLoader(ds, num_workers=2, pin_memory=True)  # train\n"));
  CHECK(slurp(f) == before);
  Run fixed = ddplint({"--isolated", "--select", "DDP102", "--fix", "train.ipynb"}, "", d.path);
  CHECK(fixed.rc == 0);
  std::string after = slurp(f);
  auto expected = ddp_cells();
  expected[2]["source"][1] = "loader = DataLoader(ds, num_workers=2, pin_memory=True)  # train\n";
  // byte for byte what Jupyter would write: outputs (non-ASCII kept), metadata,
  // execution counts, the magics and the other cells as they were; the source
  // still a list of lines, the last without a line end
  CHECK(after == notebook_json(expected));
  CHECK(ddplint({"--isolated", "--select", "DDP102", "--fix", "train.ipynb"}, "", d.path).rc == 0);
  CHECK(slurp(f) == after);
  // a notebook on standard input: --fix prints the notebook
  Run in = ddplint({"--isolated", "--select", "DDP102", "--fix", "--stdin-filename", "x.ipynb", "-"}, before, d.path);
  CHECK(in.out == notebook_json(expected));
  // --add-noqa writes its comments into the cells too, the notebook kept whole
  f = d.write("noqa.ipynb", before);
  Run noqa = ddplint({"--isolated", "--select", "DDP102", "--add-noqa", "noqa.ipynb"}, "", d.path);
  CHECK(noqa.rc == 0);
  auto with_noqa = ddp_cells();
  with_noqa[2]["source"][1] = "loader = DataLoader(ds, num_workers=2)  # train  # noqa: DDP102\n";
  CHECK(slurp(f) == notebook_json(with_noqa));
  CHECK(ddplint({"--isolated", "--select", "DDP102", "noqa.ipynb"}, "", d.path).rc == 0);
}

TEST_CASE("notebooks: a malformed notebook is one error line and exit 2; the other files are still linted") {
  TempDir d;
  d.write("a_bad.ipynb", "{\"cells\": [");
  d.write("b_old.ipynb", "{\"cells\": [], \"metadata\": {}, \"nbformat\": 3, \"nbformat_minor\": 0}\n");
  d.write("c_shape.ipynb", "{\"cells\": [{\"cell_type\": \"code\", \"source\": 3}], \"nbformat\": 4}\n");
  d.write("d_nocells.ipynb", "{\"nbformat\": 4, \"nbformat_minor\": 5}\n");
  d.write("e_deep.ipynb", std::string(200000, '['));
  d.write("z.py", kBadLoader);
  Run r = ddplint({"-q", "a_bad.ipynb", "b_old.ipynb", "c_shape.ipynb", "d_nocells.ipynb", "e_deep.ipynb", "z.py"}, "",
                  d.path);
  CHECK(r.rc == 2);
  CHECK(contains(r.out, "z.py:3:10: DDP101"));
  CHECK(contains(r.err, "ddplint: a_bad.ipynb: not a notebook: not JSON ("));
  CHECK(contains(r.err, "ddplint: b_old.ipynb: not nbformat 4: `nbformat` is 3, only 4 is read\n"));
  CHECK(contains(r.err, "ddplint: c_shape.ipynb: cell 1: `source` is not a string or a list of strings\n"));
  CHECK(contains(r.err, "ddplint: d_nocells.ipynb: not a notebook: no `cells` list\n"));
  CHECK(contains(r.err, "ddplint: e_deep.ipynb: not a notebook: JSON nested more than"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 5);  // one line each
}

// Ruff lints notebooks found by a folder walk by default since 0.6.0
// (https://docs.astral.sh/ruff/configuration/#jupyter-notebook-discovery) and
// leaves `.ipynb_checkpoints` out by default (its default `exclude`).
TEST_CASE("notebooks: a folder walk finds *.ipynb and skips .ipynb_checkpoints") {
  TempDir d;
  d.write("nb/train.ipynb", notebook_json(ddp_cells()));
  d.write("nb/.ipynb_checkpoints/train-checkpoint.ipynb", notebook_json(ddp_cells()));
  d.write("nb/notes.txt", "loader = DataLoader(ds)\n");
  Run r = ddplint({"--isolated", "--select", "DDP102", "."}, "", d.path);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "nb/train.ipynb:cell 3:2:10: DDP102"));
  CHECK_FALSE(contains(r.out, "checkpoint"));
  CHECK(contains(r.out, "in 1 file"));
}
