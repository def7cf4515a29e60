// lsp_latency: time from `didChange` to the `publishDiagnostics` of that
// version, for edits typed into a 2,000-line training script, through a real
// `ddplint server` process over pipes. Prints median and p95 over N edits,
// and the server's resident memory before and after M further edits.
//
// With --workspace F, the script is train.py in a project of F files on disk
// (pyproject.toml, a package of F - 1 helper modules that import each other
// in a cycle, and train.py, whose CUDA step loop calls ten of them), so the
// server lints each edit with the project facts of the file.
//
// Usage: lsp_latency [--edits N] [--memory-edits M] [--workspace F] DDPLINT_BIN SOURCE_DIR
//   (defaults 100, 1000 and no workspace; SOURCE_DIR holds examples/ and fixtures/)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "tests/support/lsp_client.hpp"

using ddplint::testing::json;
using ddplint::testing::LspClient;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// Whole files of examples/ then fixtures/ until the script has >= 2,000 lines.
std::string training_script(const fs::path& root) {
  std::vector<fs::path> files;
  for (const char* dir : {"examples", "fixtures"}) {
    std::vector<fs::path> part;
    for (const auto& e : fs::recursive_directory_iterator(root / dir))
      if (e.is_regular_file() && e.path().extension() == ".py") part.push_back(e.path());
    std::sort(part.begin(), part.end());
    files.insert(files.end(), part.begin(), part.end());
  }
  std::string out;
  for (const auto& f : files) {
    if (count_lines(out) >= 2000) break;
    std::string text = slurp(f);
    if (text.find("DDP001") != std::string::npos) continue;  // keep the script free of syntax errors
    out += text;
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  std::size_t i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

json at(std::uint32_t line, std::uint32_t character) { return {{"line", line}, {"character", character}}; }

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A project of `files` files under `root`; returns train.py's text: `script`
// with a CUDA step loop that calls ten helpers of the package appended.
std::string make_workspace(const fs::path& root, int files, const std::string& script) {
  fs::remove_all(root);
  write(root / "pyproject.toml", "# lsp_latency workspace\n");
  write(root / "helpers/__init__.py", "");
  const int modules = std::max(1, files - 3);  // pyproject.toml, __init__.py and train.py are the others
  for (int i = 0; i < modules; ++i) {
    int next = (i + 1) % modules;
    write(root / ("helpers/m" + std::to_string(i) + ".py"),
          "from helpers import m" + std::to_string(next) + "\n\n\ndef helper(x, depth=0):\n    if depth > 0:\n        m" +
              std::to_string(next) + ".helper(x, depth - 1)\n    return x.norm().item()\n\n\n"
          "def step(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n");
  }
  std::string text = "import torch\nfrom helpers import " + [&] {
    std::string names;
    for (int i = 0; i < std::min(10, modules); ++i) names += (i ? ", m" : "m") + std::to_string(i);
    return names;
  }() + "\n" + script;
  text += "\nmodel = torch.nn.Linear(8, 8).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
          "for i in range(100):\n    x = torch.randn(4, 8, device='cuda')\n    m0.step(model, opt, x)\n";
  for (int i = 0; i < std::min(10, modules); ++i) text += "    m" + std::to_string(i) + ".helper(x)\n";
  write(root / "train.py", text);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int edits = 100, memory_edits = 1000, workspace = 0;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--edits") == 0 && i + 1 < argc) edits = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--memory-edits") == 0 && i + 1 < argc) memory_edits = std::max(0, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--workspace") == 0 && i + 1 < argc) workspace = std::max(4, std::atoi(argv[++i]));
    else pos.emplace_back(argv[i]);
  }
  if (pos.size() != 2) {
    std::fprintf(stderr, "usage: lsp_latency [--edits N] [--memory-edits M] [--workspace F] DDPLINT_BIN SOURCE_DIR\n");
    return 2;
  }
  std::string text = training_script(pos[1]);
  const fs::path ws = fs::temp_directory_path() / ("ddplint_lsp_workspace_" + std::to_string(::getpid()));
  // the edit point: the middle of the script, at the start of an indented line inside a loop body
  std::uint32_t line = static_cast<std::uint32_t>(count_lines(text) / 2);
  {
    std::istringstream in(text);
    std::string l;
    std::vector<std::string> all;
    while (std::getline(in, l)) all.push_back(l);
    while (line < all.size() && all[line].rfind("        ", 0) != 0) ++line;
  }
  if (workspace > 0) {  // the same line of the script, below the imports the workspace adds in front
    std::string bare = text;
    text = make_workspace(ws, workspace, text);
    line += static_cast<std::uint32_t>(count_lines(text.substr(0, text.find(bare))));
  }
  std::size_t lines = count_lines(text);
  const std::string typed = "        value = loss.item()\n";  // typed one character per edit, then deleted

  LspClient c(pos[0]);
  auto init = c.request("initialize", {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", json::object()}});
  if (!init) {
    std::fprintf(stderr, "lsp_latency: no answer to initialize\n");
    return 1;
  }
  c.notify("initialized", json::object());
  const std::string uri = workspace > 0 ? "file://" + (ws / "train.py").string() : "file:///bench/train.py";
  c.notify("textDocument/didOpen", {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", text}}}});
  if (!c.wait_notification("textDocument/publishDiagnostics", std::chrono::seconds(30))) {
    std::fprintf(stderr, "lsp_latency: no diagnostics after didOpen\n");
    return 1;
  }
  int version = 1;
  std::size_t typed_so_far = 0;
  std::size_t findings = 0;
  // One keystroke: the next character of `typed` on line `line`; when the
  // statement is complete it is deleted again in one edit.
  auto keystroke = [&]() -> double {
    ++version;
    json change;
    if (typed_so_far < typed.size()) {
      auto col = static_cast<std::uint32_t>(typed_so_far);
      change = {{"range", {{"start", at(line, col)}, {"end", at(line, col)}}}, {"text", typed.substr(typed_so_far, 1)}};
      ++typed_so_far;
    } else {
      change = {{"range", {{"start", at(line, 0)}, {"end", at(line + 1, 0)}}}, {"text", ""}};
      typed_so_far = 0;
    }
    auto t0 = Clock::now();
    c.notify("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", version}}},
                                        {"contentChanges", json::array({change})}});
    auto p = c.wait_for(
        [&](const json& m) {
          return m.value("method", "") == "textDocument/publishDiagnostics" && m["params"].value("version", -1) == version;
        },
        std::chrono::seconds(30));
    auto t1 = Clock::now();
    if (!p) {
      std::fprintf(stderr, "lsp_latency: no diagnostics for version %d\n", version);
      std::exit(1);
    }
    findings = (*p)["params"]["diagnostics"].size();
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };

  for (int i = 0; i < 10; ++i) keystroke();  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < edits; ++i) ms.push_back(keystroke());
  long rss_before = c.rss_kib();
  for (int i = 0; i < memory_edits; ++i) keystroke();
  long rss_after = c.rss_kib();

  std::printf("script: %zu lines, %.1f KB; edits typed at line %u", lines, static_cast<double>(text.size()) / 1024.0,
              line + 1);
  if (workspace > 0) std::printf("; in a workspace of %d files with project facts", workspace);
  std::printf("\n");
  std::printf("didChange -> publishDiagnostics over %d edits: median %.2f ms, p95 %.2f ms, max %.2f ms (%zu findings)\n",
              edits, percentile(ms, 0.5), percentile(ms, 0.95), percentile(ms, 1.0), findings);
  std::printf("server RSS: %ld KiB before, %ld KiB after %d more edits (%+ld KiB)\n", rss_before, rss_after,
              memory_edits, rss_after - rss_before);
  c.request("shutdown", nullptr);
  c.notify("exit", nullptr);
  c.wait_exit();
  if (workspace > 0) fs::remove_all(ws);
  return 0;
}
