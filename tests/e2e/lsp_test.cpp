// End-to-end tests of `ddplint server` as a process: stdio framing, exit
// codes, bad input of every kind, a client that disappears, and coalescing of
// fast edits.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <algorithm>

#include "tests/support/lsp_client.hpp"

using ddplint::testing::json;
using ddplint::testing::LspClient;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string kUri = "file:///tmp/ddplint-e2e/train.py";
const std::string kHead = "import torch\nfrom torch.utils.data import DataLoader\nmodel = Net().cuda()\n";

std::string stderr_file() {
  static int n = 0;
  return (fs::temp_directory_path() / ("ddplint-lsp-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".log"))
      .string();
}
std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// With the opt-in DDP102 (pin_memory, a rule with a quick fix) enabled by its
// code, as an editor's `extendSelect` does: these tests use its findings.
json initialize(LspClient& c, json caps = json::object()) {
  auto r = c.request("initialize", {{"processId", ::getpid()},
                                    {"rootUri", "file:///tmp"},
                                    {"capabilities", caps},
                                    {"initializationOptions", {{"extendSelect", {"DDP102"}}}}});
  REQUIRE(r);
  c.notify("initialized", json::object());
  return *r;
}

void open(LspClient& c, const std::string& text, const std::string& uri = kUri) {
  c.notify("textDocument/didOpen",
           {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", text}}}});
}

std::vector<std::string> codes_of(const json& publish) {
  std::vector<std::string> out;
  for (const json& d : publish["params"]["diagnostics"]) out.push_back(d["code"]);
  return out;
}

}  // namespace

TEST_CASE("server process: initialize, diagnostics, shutdown and exit 0; stdout carries only framed messages") {
  std::string log = stderr_file();
  LspClient c(DDPLINT_BIN, {"server"}, log);
  json init = initialize(c);
  CHECK(init["result"]["capabilities"]["positionEncoding"] == "utf-16");
  open(c, kHead + "l = DataLoader(ds)\n");
  auto p = c.wait_notification("textDocument/publishDiagnostics");
  REQUIRE(p);
  CHECK(codes_of(*p) == std::vector<std::string>{"DDP101", "DDP102"});
  // codeDescription links the rule's section of docs/rules.md (found beside the executable)
  std::string href = (*p)["params"]["diagnostics"][0]["codeDescription"]["href"];
  CHECK(href == "file://" + (fs::path(DDPLINT_SOURCE_DIR) / "docs/rules.md").lexically_normal().string() + "#DDP101");
  CHECK(slurp((fs::path(DDPLINT_SOURCE_DIR) / "docs/rules.md").string()).find("<a id=\"DDP101\"></a>") != std::string::npos);
  auto shut = c.request("shutdown", nullptr);
  REQUIRE(shut);
  CHECK((*shut)["result"].is_null());
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
  CHECK(slurp(log).find("ddplint server: started") != std::string::npos);  // logs go to stderr
  fs::remove(log);
}

TEST_CASE("server process: `--stdio`, which vscode-languageclient's stdio transport appends, is accepted") {
  LspClient c(DDPLINT_BIN, {"server", "--stdio"});
  initialize(c);
  REQUIRE(c.request("shutdown", nullptr));
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
}

TEST_CASE("server process: exit without shutdown is 1; closed input ends the server") {
  {
    LspClient c(DDPLINT_BIN);
    initialize(c);
    c.notify("exit", nullptr);
    CHECK(c.wait_exit() == 1);
  }
  {
    LspClient c(DDPLINT_BIN);
    initialize(c);
    open(c, kHead + "l = DataLoader(ds)\n");
    c.close_input();  // the editor crashed
    CHECK(c.wait_exit() == 1);
  }
  {
    LspClient c(DDPLINT_BIN);
    c.close_input();  // before anything at all
    CHECK(c.wait_exit() == 1);
  }
}

TEST_CASE("server process: malformed JSON, bad headers, wrong lengths, floods, and it keeps serving") {
  std::string log = stderr_file();
  LspClient c(DDPLINT_BIN, {"server"}, log);
  initialize(c);
  // malformed JSON body: ParseError with id null
  c.send_raw("Content-Length: 9\r\n\r\n{\"jsonrpc");
  auto e = c.wait_for([](const json& m) { return m.contains("error"); }, 5s);
  REQUIRE(e);
  CHECK((*e)["error"]["code"] == -32700);
  CHECK((*e)["id"].is_null());
  // a header block without Content-Length, and a non-numeric one: logged, skipped
  c.send_raw("Content-Type: x\r\n\r\n");
  c.send_raw("Content-Length: twelve\r\n\r\n");
  // a wrong (too short) Content-Length cuts the JSON: a ParseError, then the rest is garbage headers
  std::string body = R"({"jsonrpc":"2.0","id":50,"method":"shutdown"})";
  c.send_raw("Content-Length: 20\r\n\r\n" + body + "\r\n\r\n");
  auto cut = c.wait_for([](const json& m) { return m.contains("error") && m["error"]["code"] == -32700; }, 5s);
  CHECK(cut);
  // 10,000 malformed messages
  std::string flood;
  for (int i = 0; i < 10000; ++i) flood += i % 2 ? "Content-Length: 3\r\n\r\n{x}" : "Content-Length: 2\r\n\r\n[]";
  CHECK(c.send_raw(flood));
  // a message far over the size limit (65 MiB), skipped without being held
  std::string huge_header = "Content-Length: " + std::to_string(65u * 1024u * 1024u) + "\r\n\r\n";
  CHECK(c.send_raw(huge_header));
  std::string mib(1024 * 1024, ' ');
  for (int i = 0; i < 65; ++i) CHECK(c.send_raw(mib));
  // a method that is not a string, and a didChange whose uri is not one: answered or dropped, never fatal
  c.send_raw("Content-Length: 28\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":1}");
  auto not_string = c.wait_for([](const json& m) { return m.contains("error") && m["error"]["code"] == -32600; }, 5s);
  CHECK(not_string);
  for (int i = 0; i < 50; ++i)
    c.notify("textDocument/didChange", {{"textDocument", {{"uri", 5}}}, {"contentChanges", {{{"text", "x"}}}}});
  c.send({{"jsonrpc", "2.0"}, {"method", nullptr}, {"id", 77}});
  // still serving: a real request is answered
  auto hover = c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", {{"line", 0}, {"character", 0}}}}, 60s);
  REQUIRE(hover);
  CHECK((*hover)["result"].is_null());
  long rss = c.rss_kib();
  CHECK(rss > 0);
  CHECK(rss < 200 * 1024);  // the 65 MiB body was never buffered
  std::size_t errors = 0;
  for (const json& m : c.inbox()) errors += m.contains("error") ? 1 : 0;
  while (auto m = c.receive(200ms)) errors += m->contains("error") ? 1 : 0;
  CHECK(errors >= 5000);  // each malformed body answered (the `[]` ones are Invalid Request)
  auto shut = c.request("shutdown", nullptr);
  REQUIRE(shut);
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
  std::string text = slurp(log);
  CHECK(text.find("without Content-Length") != std::string::npos);
  CHECK(text.find("larger than the limit") != std::string::npos);
  fs::remove(log);
}

TEST_CASE("server process: fast edits are coalesced; the last version's diagnostics arrive") {
  LspClient c(DDPLINT_BIN);
  initialize(c);
  std::string text = kHead;
  for (int i = 0; i < 300; ++i) text += "x" + std::to_string(i) + " = torch.ones(3)\n";
  open(c, text + "l = DataLoader(ds)\n");
  REQUIRE(c.wait_notification("textDocument/publishDiagnostics"));
  // 200 keystrokes sent at once: each appends a character to the last line
  std::string burst;
  for (int v = 2; v <= 201; ++v) {
    json at = {{"line", 303}, {"character", 0}};  // the `l = DataLoader(ds)` line
    json edit = {{"range", {{"start", at}, {"end", at}}}, {"text", "#"}};
    json params = {{"textDocument", {{"uri", kUri}, {"version", v}}}, {"contentChanges", json::array({edit})}};
    json change = {{"jsonrpc", "2.0"}, {"method", "textDocument/didChange"}, {"params", params}};
    std::string b = change.dump();
    burst += "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  }
  c.send_raw(burst);
  int publishes = 0;
  json last;
  while (auto m = c.wait_notification("textDocument/publishDiagnostics", 1500ms)) {
    ++publishes;
    last = *m;
    if (last["params"]["version"] == 201) break;
  }
  REQUIRE(last.is_object());
  CHECK(last["params"]["version"] == 201);
  CHECK(last["params"]["diagnostics"] == json::array());  // `l = ...` became a comment
  CHECK(publishes < 200);  // stale intermediate versions were skipped
  MESSAGE(publishes << " publishes for 200 queued edits");
}

TEST_CASE("server process: a 5 MB buffer is linted") {
  LspClient c(DDPLINT_BIN);
  initialize(c);
  std::string big = kHead;
  while (big.size() < 5 * 1024 * 1024) big += "for step, batch in enumerate(loader):\n    loss = model(batch)\n";
  big += "l = DataLoader(ds)\n";
  open(c, big);
  auto p = c.wait_notification("textDocument/publishDiagnostics", 30s);
  REQUIRE(p);
  CHECK(codes_of(*p).size() >= 2);
  auto shut = c.request("shutdown", nullptr);
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
}

TEST_CASE("server process: 50 MB messages inside the size limit are handled with bounded memory") {
  LspClient c(DDPLINT_BIN);
  initialize(c);
  // a request for an unknown method with a 50 MB parameter: MethodNotFound
  std::string blob(50u * 1024u * 1024u, 'a');
  json unknown = {{"jsonrpc", "2.0"}, {"id", 900}, {"method", "ddplint/unknown"}, {"params", {{"blob", blob}}}};
  CHECK(c.send(unknown));
  auto answer = c.wait_for([](const json& m) { return m.contains("id") && m["id"] == 900; }, 120s);
  REQUIRE(answer);
  CHECK((*answer)["error"]["code"] == -32601);
  // a 50 MB buffer that is not a training script (one comment line): opened, nothing to report
  std::string comment = "# " + std::string(50u * 1024u * 1024u, 'x') + "\n";
  open(c, comment);
  auto p = c.wait_notification("textDocument/publishDiagnostics", 120s);
  REQUIRE(p);
  CHECK(codes_of(*p).empty());
  auto hover = c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", {{"line", 0}, {"character", 0}}}}, 60s);
  REQUIRE(hover);
  long peak = c.peak_rss_kib();
  MESSAGE("peak RSS with 50 MB messages: " << peak / 1024 << " MiB");
  CHECK(peak > 50 * 1024);   // the messages were really held
  CHECK(peak < 1024 * 1024);  // a few copies of a 50 MB message at most, not unbounded growth
  auto shut = c.request("shutdown", nullptr);
  REQUIRE(shut);
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
}

TEST_CASE("server process: code actions, hover, pull diagnostics, settings, save, close and cancellation") {
  LspClient c(DDPLINT_BIN);
  json init = initialize(c, {{"textDocument", {{"diagnostic", json::object()}}},
                             {"general", {{"positionEncodings", {"utf-32"}}}}});
  CHECK(init["result"]["capabilities"]["positionEncoding"] == "utf-32");
  CHECK(init["result"]["capabilities"].contains("diagnosticProvider"));
  open(c, kHead + "l = DataLoader(ds)\n");
  auto pulled = c.request("textDocument/diagnostic", {{"textDocument", {{"uri", kUri}}}});
  REQUIRE(pulled);
  CHECK((*pulled)["result"]["items"].size() == 2);
  json where = {{"start", {{"line", 3}, {"character", 0}}}, {"end", {{"line", 3}, {"character", 0}}}};
  auto actions = c.request("textDocument/codeAction",
                           {{"textDocument", {{"uri", kUri}}}, {"range", where}, {"context", {{"diagnostics", json::array()}}}});
  REQUIRE(actions);
  std::vector<std::string> titles;
  for (const json& a : (*actions)["result"]) titles.push_back(a["title"]);
  CHECK(std::find(titles.begin(), titles.end(), "ddplint (DDP101): Disable for this line") != titles.end());
  CHECK(std::find(titles.begin(), titles.end(), "ddplint (DDP102): Add `pin_memory=True`") != titles.end());
  // an unsafe fix says so in its title (issue 26; Ruff's editors label unsafe fixes)
  CHECK(std::find(titles.begin(), titles.end(), "ddplint (DDP101): Load in 4 worker processes (`num_workers=4`; tune it) (unsafe)") !=
        titles.end());
  auto hover = c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", {{"line", 3}, {"character", 6}}}});
  REQUIRE(hover);
  CHECK((*hover)["result"]["contents"]["value"].get<std::string>().find("DDP101") != std::string::npos);
  c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", {{"ignore", {"DDP101"}}, {"extendSelect", {"DDP102"}}}}}}});
  c.notify("textDocument/didSave", {{"textDocument", {{"uri", kUri}}}});
  auto after = c.request("textDocument/diagnostic", {{"textDocument", {{"uri", kUri}}}});
  REQUIRE(after);
  CHECK((*after)["result"]["items"].size() == 1);
  c.notify("textDocument/didClose", {{"textDocument", {{"uri", kUri}}}});

  // cancellation: while the server lints a 5 MB buffer, a hover and its
  // $/cancelRequest queue up; the hover is answered RequestCancelled
  std::string big = kHead;
  while (big.size() < 5 * 1024 * 1024) big += "for step, batch in enumerate(loader):\n    loss = model(batch)\n";
  const std::string big_uri = "file:///tmp/ddplint-e2e/big.py";
  open(c, big, big_uri);
  c.send({{"jsonrpc", "2.0"}, {"id", 900}, {"method", "textDocument/diagnostic"},
          {"params", {{"textDocument", {{"uri", big_uri}}}}}});
  std::this_thread::sleep_for(100ms);  // the server is now linting
  c.send({{"jsonrpc", "2.0"}, {"id", 901}, {"method", "textDocument/hover"},
          {"params", {{"textDocument", {{"uri", big_uri}}}, {"position", {{"line", 0}, {"character", 0}}}}}});
  c.notify("$/cancelRequest", {{"id", 901}});
  auto cancelled = c.wait_for([](const json& m) { return m.value("id", json()) == 901; }, 60s);
  REQUIRE(cancelled);
  CHECK((*cancelled)["error"]["code"] == -32800);
  auto shut = c.request("shutdown", nullptr, 60s);
  REQUIRE(shut);
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
}

// A file the configuration excludes gets no diagnostics, as a folder run would
// not lint it (issue 26; Ruff's server skips files its exclude settings leave out).
TEST_CASE("server process: files the configuration excludes get no diagnostics") {
  fs::path dir = fs::temp_directory_path() / ("ddplint-lsp-exclude-" + std::to_string(::getpid()));
  fs::create_directories(dir / "generated");
  std::ofstream(dir / "pyproject.toml") << "[tool.ddplint]\nextend-exclude = [\"generated\"]\n";
  LspClient c(DDPLINT_BIN);
  initialize(c);
  const std::string text = kHead + "l = DataLoader(ds)\n";
  const std::string excluded = "file://" + (dir / "generated" / "train.py").string();
  const std::string kept = "file://" + (dir / "train.py").string();
  open(c, text, excluded);
  open(c, text, kept);
  auto published = [&](const std::string& uri) {
    return c.wait_for([&](const json& m) {
      return m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
    }, 20s);
  };
  auto for_excluded = published(excluded);
  auto for_kept = published(kept);
  REQUIRE(for_excluded);
  REQUIRE(for_kept);
  CHECK((*for_excluded)["params"]["diagnostics"].empty());
  CHECK(codes_of(*for_kept).size() == 2);
  CHECK(c.request("shutdown", nullptr));
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// The server takes a file's line length as the command line does: with no
// ddplint configuration, `line-length` of Ruff's closest configuration (a
// pyproject.toml with [tool.ruff]), so a quick fix that would pass it wraps
// the call one argument a line.
TEST_CASE("server process: fixes keep to [tool.ruff] line-length without a ddplint configuration") {
  fs::path dir = fs::temp_directory_path() / ("ddplint-lsp-ruff-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "pyproject.toml") << "[tool.ruff]\nline-length = 60\n";
  LspClient c(DDPLINT_BIN);
  initialize(c);
  const std::string uri = "file://" + (dir / "train.py").string();
  open(c, kHead + "loader = DataLoader(train_set, batch_size=8, num_workers=2)\n", uri);
  REQUIRE(c.wait_for([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
  }, 20s));
  json where = {{"start", {{"line", 3}, {"character", 0}}}, {"end", {{"line", 3}, {"character", 0}}}};
  auto actions = c.request("textDocument/codeAction",
                           {{"textDocument", {{"uri", uri}}}, {"range", where}, {"context", {{"diagnostics", json::array()}}}});
  REQUIRE(actions);
  std::string inserted;
  for (const json& a : (*actions)["result"])
    if (a["title"] == "ddplint (DDP102): Add `pin_memory=True`")
      for (const json& e : a["edit"]["changes"][uri]) inserted += e["newText"].get<std::string>();
  CHECK(inserted.find("\n    pin_memory=True,") != std::string::npos);
  CHECK(c.request("shutdown", nullptr));
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// A shell buffer (VS Code's languageId "shellscript", Neovim's filetypes "sh"
// and "bash") is linted as a launch script, with the same findings as the CLI;
// another language is left alone.
TEST_CASE("server process: launch scripts are linted as shell") {
  std::string log = stderr_file();
  LspClient c(DDPLINT_BIN, {"server"}, log);
  initialize(c);
  const std::string script = "#!/bin/bash\nexport NCCL_DEBUG=INFO\ntorchrun --standalone --nnodes=2 train.py\n";
  for (const char* language : {"shellscript", "sh", "bash"}) {
    CAPTURE(language);
    std::string uri = std::string("file:///tmp/ddplint-e2e-launch-") + language + ".sh";
    c.notify("textDocument/didOpen",
             {{"textDocument", {{"uri", uri}, {"languageId", language}, {"version", 1}, {"text", script}}}});
    auto p = c.wait_notification("textDocument/publishDiagnostics");
    REQUIRE(p);
    CHECK(codes_of(*p) == std::vector<std::string>{"DDP306", "DDP802"});
    const json& d = (*p)["params"]["diagnostics"][1];
    CHECK(d["range"]["start"]["line"] == 2);
    CHECK(d["range"]["start"]["character"] == 9);  // `--standalone`
    CHECK(d["range"]["end"]["character"] == 21);
  }
  c.notify("textDocument/didOpen", {{"textDocument",
                                     {{"uri", "file:///tmp/notes.txt"}, {"languageId", "plaintext"}, {"version", 1},
                                      {"text", script}}}});
  auto shut = c.request("shutdown", nullptr);
  REQUIRE(shut);
  c.notify("exit", nullptr);
  CHECK(c.wait_exit() == 0);
  CHECK(slurp(log).find("not linted (languageId 'plaintext')") != std::string::npos);
  fs::remove(log);
}
