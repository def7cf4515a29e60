// End-to-end tests of what a Ruff user reaches for (issue 26): each test
// names the Ruff behaviour it matches, from Ruff's documentation
// (https://docs.astral.sh/ruff/configuration/#full-command-line-interface for
// the command line, https://docs.astral.sh/ruff/linter/ for noqa and fixes,
// https://docs.astral.sh/ruff/settings/ for the configuration keys).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
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

// A DataLoader without workers (DDP101, warning, unsafe fix) in a CUDA script
// without pin_memory (DDP102, opt-in, safe fix).
const std::string kLoader =
    "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\nloader = DataLoader(ds, batch_size=8)\n";

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST_CASE("ruff habits: `check` is the default command, --output-format is --format, concise is one short line") {
  // Ruff: `ruff check [OPTIONS] [FILES]...`; `--output-format` with `concise` and `full`
  TempDir d;
  d.write("t.py", kLoader);
  Run plain = ddplint({"--isolated", "--no-cache", "t.py"}, "", d.path);
  Run check = ddplint({"check", "--isolated", "--no-cache", "t.py"}, "", d.path);
  CHECK(check.rc == 1);
  CHECK(check.out == plain.out);
  CHECK(check.err.empty());
  Run concise = ddplint({"check", "--isolated", "--no-cache", "--output-format", "concise", "t.py"}, "", d.path);
  CHECK(concise.rc == 1);
  CHECK(contains(concise.out, "t.py:4:10: DDP101 [info] DataLoader without num_workers loads every batch in the training process\n"));
  // the long message is for text, full and --explain
  CHECK_FALSE(contains(concise.out, "the GPU waits"));
  CHECK(contains(plain.out, "the GPU waits"));
  // after `check`, a sub-command's name is a path (`ruff check rule` lints ./rule)
  d.write("rule/t.py", kLoader);
  Run folder = ddplint({"check", "--isolated", "--no-cache", "rule"}, "", d.path);
  CHECK(folder.rc == 1);
  CHECK(contains(folder.out, "rule/t.py:4:10: DDP101"));
}

TEST_CASE("ruff habits: severity and [*] in text and grouped output, and Ruff's fix hint") {
  // Ruff: `F401 [*] ...` marks a fix --fix applies, and the summary says
  // "[*] N fixable with the `--fix` option (M hidden fixes can be enabled with the `--unsafe-fixes` option)."
  TempDir d;
  d.write("t.py", kLoader);
  Run r = ddplint({"--isolated", "--no-cache", "--extend-select", "DDP102", "t.py"}, "", d.path);
  CHECK(contains(r.out, "t.py:4:10: DDP101 [info] "));
  CHECK(contains(r.out, "t.py:4:10: DDP102 [*] [warning] "));
  CHECK(contains(r.out, "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"));
  Run unsafe = ddplint({"--isolated", "--no-cache", "--extend-select", "DDP102", "--unsafe-fixes", "t.py"}, "", d.path);
  CHECK(contains(unsafe.out, "[*] 2 fixable with the `--fix` option.\n"));
  CHECK(contains(unsafe.out, "t.py:4:10: DDP101 [*] [info] "));  // applies under --unsafe-fixes, so marked
  // a file that does not parse gets no fixes: none marked, counted or diffed
  d.write("syn.py", kLoader + "def f(:\n    pass\n");
  Run syn = ddplint({"--isolated", "--no-cache", "--extend-select", "DDP102", "syn.py"}, "", d.path);
  CHECK(contains(syn.out, "DDP102 [warning]"));
  CHECK_FALSE(contains(syn.out, "[*]"));
  CHECK(ddplint({"--isolated", "--no-cache", "--extend-select", "DDP102", "--diff", "syn.py"}, "", d.path).out.empty());
  Run grouped = ddplint({"--isolated", "--no-cache", "--format", "grouped", "t.py"}, "", d.path);
  CHECK(contains(grouped.out, "  4:10 DDP101 [info] "));
}

TEST_CASE("ruff habits: rule names and lowercase codes, with did-you-mean hints") {
  // Ruff: `ruff rule F401`; selectors are codes or prefixes (ddplint also takes
  // names, which Ruff's `ruff rule` shows)
  TempDir d;
  d.write("t.py", kLoader);
  CHECK(ddplint({"--explain", "dataloader-without-workers"}).out == ddplint({"--explain", "DDP101"}).out);
  CHECK(ddplint({"rule", "ddp303"}).out == ddplint({"rule", "DDP303"}).out);
  Run by_name = ddplint({"--isolated", "--no-cache", "--select", "dataloader-without-workers", "t.py"}, "", d.path);
  Run by_code = ddplint({"--isolated", "--no-cache", "--select", "ddp101", "t.py"}, "", d.path);
  CHECK(by_name.rc == 1);
  CHECK(by_name.out == by_code.out);
  Run typo = ddplint({"--select", "DDP1O1", "t.py"}, "", d.path);
  CHECK(typo.rc == 2);
  CHECK(contains(typo.err, "did you mean 'DDP101'?"));
  // a mistyped option or value: the closest one as a hint
  Run option_typo = ddplint({"--output-formt", "json", "t.py"}, "", d.path);
  CHECK(option_typo.rc == 2);
  CHECK(contains(option_typo.err, "did you mean --output-format?"));
  Run value_typo = ddplint({"--format", "concis", "t.py"}, "", d.path);
  CHECK(value_typo.rc == 2);
  CHECK(contains(value_typo.err, "did you mean 'concise'?"));
  Run name_typo = ddplint({"--explain", "dataloader-witout-workers"});
  CHECK(name_typo.rc == 2);
  CHECK(contains(name_typo.err, "did you mean 'dataloader-without-workers'?"));
  // what is echoed back cannot recolour the terminal or split the line (hostile testing)
  Run escape = ddplint({"--explain", "DDP\x1b[31mX"});
  CHECK(contains(escape.err, "unknown rule 'DDP\\x1b[31mX'"));
  Run newline = ddplint({"rule", "a\nb"});
  CHECK(contains(newline.err, "unknown rule 'a\\x0ab'"));
  Run bell = ddplint({"--select", "DD\x07P", "x.py"});
  CHECK(contains(bell.err, "unknown rule code or prefix 'DD\\x07P'"));
}

TEST_CASE("ruff habits: --stdin-filename reads standard input") {
  // Ruff: "If the user provided a --stdin-filename, always read from standard input"
  TempDir d;
  d.write("other.py", kLoader);
  Run r = ddplint({"--isolated", "--no-cache", "--stdin-filename", "t.py"}, kLoader, d.path);
  CHECK(r.rc == 1);
  CHECK(contains(r.out, "t.py:4:10: DDP101"));
  CHECK_FALSE(contains(r.out, "other.py"));
  Run named = ddplint({"--isolated", "--no-cache", "--stdin-filename", "t.py", "other.py"}, kLoader, d.path);
  CHECK(contains(named.err, "ignoring other.py in favor of standard input"));
  CHECK_FALSE(contains(named.out, "other.py"));
}

TEST_CASE("ruff habits: --force-exclude holds for --stdin-filename") {
  // Ruff (astral-sh/ruff#1343, crates/ruff/src/commands/check_stdin.rs): with
  // --force-exclude, standard input named by an excluded --stdin-filename is not
  // linted, and --fix prints it back unchanged.
  TempDir d;
  d.write("pyproject.toml", "[tool.ddplint]\nexclude = [\"generated\", \"*_pb2.py\"]\n");
  Run plain = ddplint({"--no-cache", "--stdin-filename", "generated/t.py"}, kLoader, d.path);
  CHECK(plain.rc == 1);
  CHECK(contains(plain.out, "generated/t.py:4:10: DDP101"));
  for (const char* name : {"generated/t.py", "x_pb2.py"}) {
    Run r = ddplint({"--no-cache", "--force-exclude", "--stdin-filename", name}, kLoader, d.path);
    CHECK(r.rc == 0);
    CHECK_FALSE(contains(r.out, "DDP101"));
    CHECK(contains(r.err, std::string("standard input (") + name + ") is left out: --force-exclude"));
    Run fix = ddplint({"--no-cache", "--force-exclude", "--fix", "--unsafe-fixes", "--stdin-filename", name}, kLoader, d.path);
    CHECK(fix.rc == 0);
    CHECK(fix.out == kLoader);
  }
  Run kept = ddplint({"--no-cache", "--force-exclude", "--stdin-filename", "train.py"}, kLoader, d.path);
  CHECK(kept.rc == 1);
  CHECK(contains(kept.out, "train.py:4:10: DDP101"));
  Run fixed = ddplint({"--no-cache", "--force-exclude", "--fix", "--unsafe-fixes", "--stdin-filename", "train.py"}, kLoader, d.path);
  CHECK(contains(fixed.out, "num_workers="));
}

TEST_CASE("ruff habits: --min-severity, JSON short messages, --statistics as JSON") {
  TempDir d;
  d.write("t.py", kLoader + "import torch.distributed as dist\ndist.init_process_group('nccl')\n");
  Run all = ddplint({"--isolated", "--no-cache", "--format", "concise", "t.py"}, "", d.path);
  CHECK(contains(all.out, "[error]"));
  CHECK(contains(all.out, "[info]"));  // DDP101: a dataset the file does not show
  Run errors = ddplint({"--isolated", "--no-cache", "--format", "concise", "--min-severity", "error", "t.py"}, "", d.path);
  CHECK(errors.rc == 1);
  CHECK(contains(errors.out, "[error]"));
  CHECK_FALSE(contains(errors.out, "[warning]"));
  CHECK_FALSE(contains(errors.out, "[info]"));
  // every finding of the examples has a short form of at most 100 bytes, a
  // clean clause (never cut with "...")
  Run examples = ddplint({"--isolated", "--no-cache", "--select", "ALL", "--format", "json", "examples"}, "",
                         DDPLINT_SOURCE_DIR);
  auto findings = nlohmann::json::parse(examples.out);
  REQUIRE(findings.size() > 10);
  for (const auto& f : findings) {
    std::string s = f["short_message"];
    CAPTURE(s);
    CHECK(!s.empty());
    CHECK(s.size() <= 100);
    CHECK_FALSE(contains(s, "..."));
    CHECK(std::string(f["message"]).rfind(s.substr(0, 10), 0) == 0);
  }
  // Ruff: `--statistics --output-format json` prints the statistics as JSON
  Run stats = ddplint({"--isolated", "--no-cache", "--statistics", "--format", "json", "t.py"}, "", d.path);
  auto table = nlohmann::json::parse(stats.out);
  REQUIRE(table.is_array());
  CHECK(table.size() >= 2);
  for (const auto& row : table)
    for (const char* key : {"code", "name", "count", "fixable", "fixable_count"}) CHECK_MESSAGE(row.contains(key), key);
}

TEST_CASE("ruff habits: --add-noqa writes the noqa comments, and a second run changes nothing") {
  // Ruff: "--add-noqa: Enable automatic additions of noqa directives to failing lines"
  TempDir d;
  d.write("t.py", "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\n"
                  "loader = DataLoader(ds, batch_size=8)  # noqa: F401\n");
  Run add = ddplint({"--isolated", "--no-cache", "--extend-select", "DDP102", "--add-noqa", "t.py"}, "", d.path);
  CHECK(add.rc == 0);
  CHECK(contains(add.out, "Added 1 noqa directive."));
  CHECK(contains(slurp(d.path / "t.py"), "loader = DataLoader(ds, batch_size=8)  # noqa: F401, DDP101, DDP102\n"));
  std::string once = slurp(d.path / "t.py");
  Run again = ddplint({"--isolated", "--no-cache", "--extend-select", "DDP102", "--add-noqa", "t.py"}, "", d.path);
  CHECK(contains(again.out, "Added 0 noqa directives."));
  CHECK(slurp(d.path / "t.py") == once);
  CHECK(ddplint({"--isolated", "--no-cache", "--extend-select", "DDP102", "t.py"}, "", d.path).rc == 0);
  CHECK(ddplint({"--add-noqa", "--fix", "t.py"}, "", d.path).rc == 2);
}

TEST_CASE("ruff habits: noqa where a comment can go: after a multi-line string or a `\\` continuation") {
  // Ruff places the noqa of a finding in a multi-line string or continued line at its last line
  TempDir d;
  d.write("t.py", "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\n"
                  "a = DataLoader(ds, \\\n    batch_size=8)\n"
                  "b = DataLoader(\"\"\"\nabc\"\"\", batch_size=8)\n");
  Run add = ddplint({"--isolated", "--no-cache", "--add-noqa", "t.py"}, "", d.path);
  CHECK(contains(add.out, "Added 2 noqa directives."));
  std::string text = slurp(d.path / "t.py");
  CHECK(contains(text, "    batch_size=8)  # noqa: DDP101\n"));
  CHECK(contains(text, "abc\"\"\", batch_size=8)  # noqa: DDP101\n"));
  CHECK(ddplint({"--isolated", "--no-cache", "t.py"}, "", d.path).rc == 0);
  // a file that does not parse gets none (a comment could land inside an unclosed string)
  d.write("bad.py", kLoader + "x = \"abc\n");
  CHECK(contains(ddplint({"--isolated", "--no-cache", "--add-noqa", "bad.py"}, "", d.path).out, "Added 0 noqa directives."));
}

TEST_CASE("ruff habits: --fix on standard input prints the source even when it cannot be linted") {
  // Ruff's --fix on stdin writes the (fixed) source to stdout: an editor replaces its buffer with it
  Run r = ddplint({"--isolated", "--no-cache", "--fix", "--stdin-filename", "a.py"}, std::string("\xff\xfe x = 1\n"));
  CHECK(r.rc == 2);
  CHECK(r.out == std::string("\xff\xfe x = 1\n"));
  CHECK(contains(r.err, "a.py"));
}

TEST_CASE("ruff habits: --show-files, --show-settings, --exit-non-zero-on-fix") {
  TempDir d;
  d.write("pyproject.toml", "[tool.ddplint]\nextend-select = [\"DDP102\"]\n");
  d.write("a/t.py", kLoader);
  d.write("c/pyproject.toml",
          "[tool.ddplint]\nextend = \"../pyproject.toml\"\nunfixable = [\"DDP101\"]\nline-length = 88\n"
          "[tool.ddplint.per-file-ignores]\n\"t.py\" = [\"DDP201\"]\n");
  d.write("c/t.py", kLoader);
  d.write("b.py", "x = 1\n");
  Run files = ddplint({"--show-files", "."}, "", d.path);
  CHECK(files.rc == 0);
  CHECK(files.out == "a/t.py\nb.py\nc/t.py\n");  // as a folder run reaches them
  Run settings = ddplint({"--show-settings", "a/t.py"}, "", d.path);
  CHECK(settings.rc == 0);
  CHECK(contains(settings.out, "Resolved settings for: a/t.py\n"));
  CHECK(contains(settings.out, "Settings path: " + (d.path / "pyproject.toml").string() + "\n"));
  CHECK(contains(settings.out, "DDP102"));
  CHECK(contains(settings.out, "fixable: DDP101, DDP102,"));
  CHECK(contains(settings.out, "line-length: (none"));
  // Ruff's --show-settings shows the resolved per-file-ignores, fixable/unfixable and line-length
  Run nested = ddplint({"--show-settings", "c/t.py"}, "", d.path);
  CHECK(contains(nested.out, "Extends: " + (d.path / "pyproject.toml").string() + "\n"));
  CHECK(contains(nested.out, "DDP102"));
  CHECK_FALSE(contains(nested.out, "DDP201"));  // per-file-ignores
  CHECK(contains(nested.out, "fixable: DDP102,"));  // unfixable DDP101
  CHECK(contains(nested.out, "line-length: 88 (from " + (d.path / "c/pyproject.toml").string() + ")\n"));
  // the torch releases: what the project declares, and target-torch over it (Ruff's target-version)
  CHECK(contains(settings.out, "declared torch: (none: the current release is assumed)\n"));
  d.write("c/requirements.txt", "torch>=1.13,<2.2  # tested range\n");
  Run declared = ddplint({"--show-settings", "c/t.py"}, "", d.path);
  CHECK(contains(declared.out, "target-torch: (none: the project's declaration)\n"));
  CHECK(contains(declared.out, "declared torch: torch>=1.13,<2.2 (c/requirements.txt:1)\n"));
  d.write("c/pyproject.toml", "[tool.ddplint]\ntarget-torch = \"2.4\"\n");
  Run target = ddplint({"--show-settings", "c/t.py"}, "", d.path);
  CHECK(contains(target.out, "target-torch: 2.4 (from "));
  CHECK(contains(target.out, "declared torch: torch>=1.13,<2.2 (c/requirements.txt:1)\n"));
  // Ruff: "--exit-non-zero-on-fix: Exit with a non-zero status code if any files were modified via fix,
  // even if no lint violations remain"
  Run fixed = ddplint({"--no-cache", "--fix", "--ignore", "DDP101", "--exit-non-zero-on-fix", "a/t.py"}, "", d.path);
  CHECK(contains(fixed.out, "1 fixed, 0 remaining"));
  CHECK(fixed.rc == 1);
  Run nothing = ddplint({"--no-cache", "--fix", "--ignore", "DDP101", "--exit-non-zero-on-fix", "a/t.py"}, "", d.path);
  CHECK(nothing.rc == 0);
}

TEST_CASE("ruff habits: a named folder git ignores gets a note") {
  TempDir d;
  d.write(".git/HEAD", "ref: refs/heads/main\n");
  REQUIRE(std::system(("git init -q " + d.path.string()).c_str()) == 0);
  d.write(".gitignore", "runs/\n");
  d.write("runs/t.py", kLoader);
  Run r = ddplint({"--no-cache", "runs"}, "", d.path);
  CHECK(r.rc == 0);
  CHECK(contains(r.err, "ddplint: note: runs is ignored by git (.gitignore), so nothing in it is linted; lint it with "
                        "--no-respect-gitignore"));
  CHECK(ddplint({"--no-cache", "--no-respect-gitignore", "runs"}, "", d.path).rc == 1);
}

TEST_CASE("ruff habits: noqa anywhere at file level, in any case; DDP002 reports unused ones and removes them") {
  // Ruff: "# ruff: noqa ... anywhere in the file"; RUF100 unused-noqa with a fix
  TempDir d;
  d.write("t.py", kLoader + "# ddplint: noqa: ddp101\n");
  CHECK(ddplint({"--isolated", "--no-cache", "t.py"}, "", d.path).rc == 0);
  d.write("u.py", kLoader + "x = 1  # noqa: DDP401, E501\n");
  Run unused = ddplint({"--isolated", "--no-cache", "--select", "DDP002,DDP401", "u.py"}, "", d.path);
  CHECK(unused.rc == 1);
  CHECK(contains(unused.out, "u.py:5:8: DDP002 [*] [info] `noqa` directive that silences nothing (unused: DDP401)"));
  Run fix = ddplint({"--isolated", "--no-cache", "--select", "DDP002,DDP401", "--fix", "u.py"}, "", d.path);
  CHECK(fix.rc == 0);
  CHECK(contains(slurp(d.path / "u.py"), "x = 1  # noqa: E501\n"));
  // a rule that did not run: unknown, so not reported
  d.write("v.py", kLoader + "x = 1  # noqa: DDP401\n");
  CHECK(ddplint({"--isolated", "--no-cache", "--select", "DDP002", "v.py"}, "", d.path).rc == 0);
}

TEST_CASE("ruff habits: extend, output-format and unfixable in the configuration") {
  // Ruff: `extend` ("a path to a local pyproject.toml file to merge into this configuration"),
  // `output-format`, `lint.unfixable`
  TempDir d;
  d.write("pyproject.toml", "[tool.ddplint]\nextend-select = [\"DDP102\"]\noutput-format = \"concise\"\n"
                            "unfixable = [\"DDP102\"]\n");
  d.write("sub/ddplint.toml", "extend = \"../pyproject.toml\"\nignore = [\"DDP101\"]\n");
  d.write("sub/t.py", kLoader);
  Run r = ddplint({"--no-cache", "sub/t.py"}, "", d.path);
  CHECK(r.rc == 1);
  // DDP102 from the extended file, DDP101 ignored by the nested one, concise from the root's output-format
  CHECK(contains(r.out, "sub/t.py:4:10: DDP102 [warning] DataLoader without pin_memory=True in a CUDA script\n"));
  CHECK_FALSE(contains(r.out, "DDP101"));
  CHECK_FALSE(contains(r.out, "[*]"));  // unfixable
  Run fix = ddplint({"--no-cache", "--fix", "sub/t.py"}, "", d.path);
  CHECK(contains(fix.out, "0 fixed"));
  Run chain = ddplint({"--show-settings", "sub/t.py"}, "", d.path);
  CHECK(contains(chain.out, "Extends: " + (d.path / "pyproject.toml").string()));
  d.write("sub2/ddplint.toml", "extend = \"../sub2/ddplint.toml\"\n");
  d.write("sub2/t.py", kLoader);
  Run cycle = ddplint({"--no-cache", "sub2/t.py"}, "", d.path);
  CHECK(cycle.rc == 2);
  CHECK(contains(cycle.err, "cycle"));
}

TEST_CASE("ruff habits: fixed lines keep to [tool.ruff] line-length by wrapping the argument list") {
  // Ruff's formatter splits a call that does not fit into one argument a line with a magic trailing comma
  TempDir d;
  d.write("pyproject.toml", "[tool.ddplint]\nextend-select = [\"DDP102\"]\n\n[tool.ruff]\nline-length = 60\n");
  d.write("t.py", "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\nif True:\n"
                  "    loader = DataLoader(train_set, batch_size=8, shuffle=False)\n");
  Run fix = ddplint({"--no-cache", "--fix", "--unsafe-fixes", "t.py"}, "", d.path);
  CHECK(fix.rc == 0);
  std::string fixed = slurp(d.path / "t.py");
  CHECK(contains(fixed, "    loader = DataLoader(\n        train_set,\n        batch_size=8,\n        shuffle=False,\n"));
  CHECK(contains(fixed, "        pin_memory=True,"));
  CHECK(contains(fixed, "        num_workers=4,"));
  for (std::size_t at = 0, next; at < fixed.size(); at = next + 1) {
    next = fixed.find('\n', at);
    if (next == std::string::npos) break;
    CHECK(next - at <= 60);
  }
  CHECK(ddplint({"--no-cache", "t.py"}, "", d.path).rc == 0);
  // without a line length (no ddplint `line-length`, no Ruff configuration) nothing is wrapped
  TempDir e;
  e.write("pyproject.toml", "[tool.ddplint]\nextend-select = [\"DDP102\"]\n");
  e.write("t.py", "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\n"
                  "loader = DataLoader(train_set, batch_size=8, num_workers=2)\n");
  CHECK(ddplint({"--no-cache", "--fix", "t.py"}, "", e.path).rc == 0);
  CHECK(contains(slurp(e.path / "t.py"), "loader = DataLoader(train_set, batch_size=8, num_workers=2, pin_memory=True)\n"));
}

TEST_CASE("ruff habits: the line length of Ruff's closest configuration holds without a ddplint configuration") {
  // Ruff's configuration discovery (https://docs.astral.sh/ruff/configuration/#config-file-discovery):
  // "Ruff can be configured through a pyproject.toml, ruff.toml, or .ruff.toml file"; each file uses
  // the closest one in the directory hierarchy, a pyproject.toml counting only with a [tool.ruff]
  // table, and in one folder .ruff.toml before ruff.toml before pyproject.toml. ddplint takes that
  // file's `line-length` when its own configuration sets none, even where there is no ddplint
  // configuration at all; `--isolated` reads no configuration file.
  const std::string long_call = "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\n"
                                "loader = DataLoader(dataset_with_a_long_name, batch_size=64, shuffle=True, drop_last=True)\n";
  auto longest = [](const std::string& text) {
    std::size_t most = 0;
    for (std::size_t at = 0, next; at < text.size(); at = next + 1) {
      next = text.find('\n', at);
      if (next == std::string::npos) next = text.size();
      most = std::max(most, next - at);
    }
    return most;
  };
  TempDir d;
  d.write("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.ruff]\nline-length = 80\n");
  d.write("t.py", long_call);
  Run diff = ddplint({"--no-cache", "--diff", "--select", "DDP102", "t.py"}, "", d.path);
  CHECK(diff.rc == 1);
  CHECK(contains(diff.out, "+loader = DataLoader(\n+    dataset_with_a_long_name,\n"));
  CHECK(contains(diff.out, "+    pin_memory=True,\n"));
  Run fix = ddplint({"--no-cache", "--fix", "--select", "DDP102", "t.py"}, "", d.path);
  CHECK(fix.rc == 0);
  CHECK(longest(slurp(d.path / "t.py")) <= 80);
  // the pyproject.toml is still no ddplint configuration: the defaults govern everything else
  Run settings = ddplint({"--show-settings", "t.py"}, "", d.path);
  CHECK(contains(settings.out, "Settings path: (none: the defaults)\n"));
  CHECK(contains(settings.out, "line-length: 80 (from " + (d.path / "pyproject.toml").string() + " [tool.ruff])\n"));
  // --isolated: no configuration file is read, Ruff's neither
  d.write("t.py", long_call);
  Run isolated = ddplint({"--isolated", "--no-cache", "--diff", "--select", "DDP102", "t.py"}, "", d.path);
  CHECK(contains(isolated.out, "+loader = DataLoader(dataset_with_a_long_name, batch_size=64, shuffle=True, drop_last=True, pin_memory=True)\n"));
  CHECK(contains(ddplint({"--isolated", "--show-settings", "t.py"}, "", d.path).out, "line-length: (none"));
  // the closest Ruff configuration: a ruff.toml (top-level keys), a .ruff.toml before it in the same folder
  d.write("a/ruff.toml", "line-length = 60\n");
  d.write("a/t.py", long_call);
  CHECK(contains(ddplint({"--show-settings", "a/t.py"}, "", d.path).out,
                 "line-length: 60 (from " + (d.path / "a/ruff.toml").string() + ")\n"));
  CHECK(ddplint({"--no-cache", "--fix", "--select", "DDP102", "a/t.py"}, "", d.path).rc == 0);
  CHECK(longest(slurp(d.path / "a/t.py")) <= 60);
  d.write("a/.ruff.toml", "line-length = 70\n");
  CHECK(contains(ddplint({"--show-settings", "a/t.py"}, "", d.path).out, "line-length: 70 (from "));
  // a pyproject.toml without [tool.ruff] is passed over, as Ruff passes it over
  d.write("b/pyproject.toml", "[project]\nname = \"b\"\n");
  d.write("b/t.py", long_call);
  CHECK(contains(ddplint({"--show-settings", "b/t.py"}, "", d.path).out, "line-length: 80 (from "));
  // the closest Ruff configuration sets none: none (ddplint does not assume Ruff's default)
  d.write("c/ruff.toml", "[lint]\nselect = [\"E\"]\n");
  d.write("c/t.py", long_call);
  CHECK(contains(ddplint({"--show-settings", "c/t.py"}, "", d.path).out, "line-length: (none"));
  // a ddplint `line-length` wins over Ruff's closer one
  d.write("e/ddplint.toml", "line-length = 100\n");
  d.write("e/sub/ruff.toml", "line-length = 60\n");
  d.write("e/sub/t.py", long_call);
  CHECK(contains(ddplint({"--show-settings", "e/sub/t.py"}, "", d.path).out,
                 "line-length: 100 (from " + (d.path / "e/ddplint.toml").string() + ")\n"));
  // a ddplint configuration without one takes Ruff's; its other settings still hold
  d.write("f/ddplint.toml", "ignore = [\"DDP101\"]\n");
  d.write("f/t.py", long_call);
  Run both = ddplint({"--show-settings", "f/t.py"}, "", d.path);
  CHECK(contains(both.out, "Settings path: " + (d.path / "f/ddplint.toml").string() + "\n"));
  CHECK(contains(both.out, "line-length: 80 (from " + (d.path / "pyproject.toml").string() + " [tool.ruff])\n"));
  // the cache knows: a warm run after the line length changes wraps anew
  d.write("g/t.py", long_call);
  Run cold = ddplint({"--diff", "--select", "DDP102", "g/t.py"}, "", d.path);
  d.write("g/ruff.toml", "line-length = 200\n");
  Run warm = ddplint({"--diff", "--select", "DDP102", "g/t.py"}, "", d.path);
  CHECK(contains(cold.out, "+    pin_memory=True,\n"));
  CHECK(contains(warm.out, "drop_last=True, pin_memory=True)\n"));
}

TEST_CASE("ruff habits: fixes chain and --fix converges") {
  // Ruff re-lints after fixing until no fix applies: a fix must not leave a finding its own rule set could fix
  TempDir d;
  d.write("t.py", "import torch\nfrom torch.utils.data import DataLoader\nmodel = torch.nn.Linear(2, 2).cuda()\n"
                  "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloader = DataLoader(ds, batch_size=8)\n"
                  "for epoch in range(3):\n    for x in loader:\n        x = x.cuda()\n"
                  "        with torch.autocast('cuda', dtype=torch.bfloat16):\n            loss = model(x).sum()\n"
                  "        loss.backward()\n        opt.step()\n");
  Run fix = ddplint({"--isolated", "--no-cache", "--select", "DDP101,DDP102,DDP103,DDP107", "--fix", "--unsafe-fixes",
                     "t.py"}, "", d.path);
  CHECK(fix.rc == 0);
  std::string fixed = slurp(d.path / "t.py");
  CHECK(contains(fixed, "DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True, persistent_workers=True)"));
  CHECK(contains(fixed, "x = x.cuda(non_blocking=True)"));
  Run after = ddplint({"--isolated", "--no-cache", "--select", "DDP101,DDP102,DDP103,DDP107", "t.py"}, "", d.path);
  CHECK(after.rc == 0);
}
