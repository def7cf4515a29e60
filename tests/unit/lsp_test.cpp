// In-process tests of the language server: positions in each encoding,
// incremental buffers, message framing, and every method through Server::handle.
#include <algorithm>
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "linter/fixes.hpp"
#include "lsp/document.hpp"
#include "lsp/server.hpp"
#include "lsp/transport.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
using namespace ddplint::lsp;

namespace {

const std::string kUri = "file:///work/train%20dir/train.py";
const std::string kHead = "import torch\nfrom torch.utils.data import DataLoader\nmodel = Net().cuda()\n";
// DDP102 (pin_memory, with a quick fix) is opt-in: the tests that use it enable it by code.
const json kWithDDP102 = {{"extendSelect", {"DDP102"}}};

// Drives a Server in process and keeps what it sends.
struct Client {
  std::vector<json> sent;
  std::vector<std::string> logs;
  Server server{rules::all(), [this](const json& m) { sent.push_back(m); },
                [this](const std::string& l) { logs.push_back(l); }};
  int next_id = 1;

  json request(const std::string& method, json params = json::object()) {
    int id = next_id++;
    server.handle({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    for (auto it = sent.begin(); it != sent.end(); ++it) {
      if (it->contains("id") && (*it)["id"] == id && !it->contains("method")) {
        json m = *it;
        sent.erase(it);
        return m;
      }
    }
    FAIL("no response to " << method);
    return {};
  }
  void notify(const std::string& method, json params = json::object()) {
    server.handle({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  json initialize(json capabilities = json::object(), json options = nullptr) {
    json params = {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", std::move(capabilities)}};
    if (!options.is_null()) params["initializationOptions"] = std::move(options);
    json r = request("initialize", std::move(params));
    notify("initialized");
    return r;
  }
  void open(const std::string& text, const std::string& uri = kUri, const std::string& language = "python") {
    notify("textDocument/didOpen",
           {{"textDocument", {{"uri", uri}, {"languageId", language}, {"version", 1}, {"text", text}}}});
  }
  // Publishes what is due and returns the last publishDiagnostics for `uri` (null if none).
  json publish(const std::string& uri = kUri) {
    server.publish_due(std::chrono::steady_clock::now() + std::chrono::hours(1));
    json last;
    for (auto it = sent.begin(); it != sent.end();) {
      if (it->value("method", "") == "textDocument/publishDiagnostics" && (*it)["params"]["uri"] == uri) {
        last = (*it)["params"];
        it = sent.erase(it);
      } else {
        ++it;
      }
    }
    return last;
  }
};

std::vector<std::string> codes_of(const json& diagnostics) {
  std::vector<std::string> out;
  for (const json& d : diagnostics) out.push_back(d["code"]);
  return out;
}

json pos(std::uint32_t line, std::uint32_t character) { return {{"line", line}, {"character", character}}; }
json range(std::uint32_t l1, std::uint32_t c1, std::uint32_t l2, std::uint32_t c2) {
  return {{"start", pos(l1, c1)}, {"end", pos(l2, c2)}};
}

// Applies the single-document TextEdits of a WorkspaceEdit to `text` (positions in `enc`).
std::string apply_workspace_edit(const std::string& text, const json& edit, PositionEncoding enc) {
  const json& edits = edit.contains("documentChanges") ? edit["documentChanges"][0]["edits"] : edit["changes"][kUri];
  LineIndex lines(text);
  std::vector<Edit> out;
  for (const json& e : edits) {
    TextPosition a{e["range"]["start"]["line"], e["range"]["start"]["character"]};
    TextPosition b{e["range"]["end"]["line"], e["range"]["end"]["character"]};
    out.push_back({offset_at(text, lines, a, enc), offset_at(text, lines, b, enc), e["newText"]});
  }
  std::sort(out.begin(), out.end(), [](const Edit& x, const Edit& y) { return x.start < y.start; });
  return apply_edits(text, out);
}

}  // namespace

// --- positions ---------------------------------------------------------------------

TEST_CASE("positions: wide and astral-plane characters before a finding, in each encoding") {
  // `s = "😀é"; ` then DataLoader: 😀 is 4 bytes / 2 UTF-16 units / 1 code point; é is 2 / 1 / 1
  std::string line = "s = \"\xF0\x9F\x98\x80\xC3\xA9\"; l = DataLoader(ds)";
  std::string text = kHead + line + "\n";
  struct Case {
    const char* name;
    std::uint32_t character;
  };
  for (const Case& each : {Case{"utf-8", 18}, Case{"utf-16", 15}, Case{"utf-32", 14}}) {
    const char* name = each.name;  // a plain variable: CAPTURE's lambda cannot capture a structured binding (C++20)
    const std::uint32_t character = each.character;
    CAPTURE(name);
    Client c;
    json r = c.initialize({{"general", {{"positionEncodings", {name}}}}});
    CHECK(r["result"]["capabilities"]["positionEncoding"] == name);
    c.open(text);
    json published = c.publish();
    REQUIRE(published["diagnostics"].size() >= 1);
    json d = published["diagnostics"][0];
    CHECK(d["range"]["start"] == pos(3, character));
    CHECK(d["range"]["end"] == pos(3, character + 10));
  }
}

TEST_CASE("positions: encoding negotiation prefers utf-8, then utf-32, else utf-16") {
  auto negotiated = [](json encodings) {
    Client c;
    json caps = json::object();
    if (!encodings.is_null()) caps["general"] = {{"positionEncodings", encodings}};
    return c.initialize(caps)["result"]["capabilities"]["positionEncoding"].get<std::string>();
  };
  CHECK(negotiated({"utf-16", "utf-8"}) == "utf-8");
  CHECK(negotiated({"utf-16", "utf-32"}) == "utf-32");
  CHECK(negotiated({"utf-16"}) == "utf-16");
  CHECK(negotiated(nullptr) == "utf-16");
}

TEST_CASE("positions: offset_at clamps and rounds down inside a code point") {
  std::string text = "a\xF0\x9F\x98\x80" "b\r\nxy\rz";
  LineIndex lines(text);
  CHECK(offset_at(text, lines, {0, 1}, PositionEncoding::Utf16) == 1);
  CHECK(offset_at(text, lines, {0, 2}, PositionEncoding::Utf16) == 1);  // inside the surrogate pair
  CHECK(offset_at(text, lines, {0, 3}, PositionEncoding::Utf16) == 5);
  CHECK(offset_at(text, lines, {0, 2}, PositionEncoding::Utf32) == 5);
  CHECK(offset_at(text, lines, {0, 3}, PositionEncoding::Utf8) == 1);  // inside the 4-byte sequence
  CHECK(offset_at(text, lines, {0, 99}, PositionEncoding::Utf16) == 6);  // past the end: the line's end, before CRLF
  CHECK(offset_at(text, lines, {1, 1}, PositionEncoding::Utf16) == 9);
  CHECK(offset_at(text, lines, {2, 0}, PositionEncoding::Utf16) == 11);  // a lone CR ends a line
  CHECK(offset_at(text, lines, {9, 0}, PositionEncoding::Utf16) == text.size());
  CHECK(position_at(text, lines, 5, PositionEncoding::Utf16) == TextPosition{0, 3});
  CHECK(position_at(text, lines, 5, PositionEncoding::Utf32) == TextPosition{0, 2});
  CHECK(position_at(text, lines, 5, PositionEncoding::Utf8) == TextPosition{0, 5});
  CHECK(position_at(text, lines, 11, PositionEncoding::Utf8) == TextPosition{2, 0});
}

TEST_CASE("documents: incremental reparsing gives the tree and findings of a parse from scratch") {
  std::string error;
  auto bytes = read_file(std::string(DDPLINT_SOURCE_DIR) + "/examples/gpt_grad_accum.py", error);
  REQUIRE(bytes);
  Document doc(kUri, "train.py", 1, *bytes);
  std::mt19937 rng(12345);
  const char* snippets[] = {"", "x", "\n", "    ", "(", ")", "'", "\"\"\"", "#", "loss.item()", "\n    for i in r:\n",
                            "\xC3\xA9", "\xF0\x9F\x98\x80", "DataLoader(ds)", ":", "\\\n", "\r", "\r\n"};
  for (int step = 0; step < 300; ++step) {
    std::string_view text = doc.text();
    std::uint32_t lines = doc.source().lines().line_count();
    TextPosition a{static_cast<std::uint32_t>(rng() % (lines + 1)), static_cast<std::uint32_t>(rng() % 60)};
    TextPosition b = a;
    if (rng() % 2) b = {a.line + static_cast<std::uint32_t>(rng() % 3), static_cast<std::uint32_t>(rng() % 60)};
    const char* insert = snippets[rng() % (sizeof snippets / sizeof *snippets)];
    doc.replace(a, b, insert, step % 3 == 0 ? PositionEncoding::Utf8 : PositionEncoding::Utf16);
    if (step % 10 != 0) continue;  // several edits between parses, as with fast typing
    CAPTURE(step);
    const SyntaxTree& incremental = doc.tree();
    SyntaxTree scratch = parse_python(doc.source());
    char* a_str = ts_node_string(incremental.root());
    char* b_str = ts_node_string(scratch.root());
    CHECK(std::string(a_str) == std::string(b_str));
    std::free(a_str);
    std::free(b_str);
    LintResult x = lint(doc.source(), incremental, rules::all(), RuleSelection{});
    LintResult y = lint(doc.source(), rules::all(), RuleSelection{});
    REQUIRE(x.diagnostics.size() == y.diagnostics.size());
    for (std::size_t i = 0; i < x.diagnostics.size(); ++i) {
      CHECK(x.diagnostics[i].start == y.diagnostics[i].start);
      CHECK(x.diagnostics[i].rule == y.diagnostics[i].rule);
    }
    (void)text;
  }
}

// --- framing ---------------------------------------------------------------------

namespace {
MessageReader reader_of(std::string data, std::size_t max_body = kMaxMessageBytes) {
  auto shared = std::make_shared<std::string>(std::move(data));
  auto pos = std::make_shared<std::size_t>(0);
  return MessageReader(
      [shared, pos](char* buf, std::size_t n) -> long {
        std::size_t take = std::min<std::size_t>({n, shared->size() - *pos, 7});  // small reads split headers
        std::memcpy(buf, shared->data() + *pos, take);
        *pos += take;
        return static_cast<long>(take);
      },
      max_body);
}
}  // namespace

TEST_CASE("framing: Content-Length messages, LF-only headers, bad headers, oversize bodies, EOF") {
  using K = MessageReader::Result::Kind;
  auto r = reader_of(frame_message("{\"a\":1}") + "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" +
                     "content-length: 2\r\n\r\n{}" + "Content-Length: 2\n\n[]" + "X-Junk: 1\r\n\r\n" +
                     "Content-Length: abc\r\n\r\n" + "no colon here\r\n\r\n" + frame_message("\"ok\"") +
                     "Content-Length: 100\r\n\r\n" + std::string(100, 'x') + frame_message("1") +
                     std::string(10000, 'h') + "\r\n\r\n" + "Content-Length: 10\r\n\r\n{\"trunc", 50);
  auto m = r.next();
  CHECK((m.kind == K::Message && m.body == "{\"a\":1}"));
  m = r.next();
  CHECK((m.kind == K::Message && m.body == "{}"));
  m = r.next();
  CHECK((m.kind == K::Message && m.body == "[]"));
  m = r.next();
  CHECK(m.kind == K::BadFrame);
  m = r.next();
  CHECK(m.kind == K::BadFrame);
  CHECK(m.error.find("not a number") != std::string::npos);
  m = r.next();
  CHECK(m.kind == K::BadFrame);
  m = r.next();
  CHECK((m.kind == K::Message && m.body == "\"ok\""));
  m = r.next();
  CHECK(m.kind == K::TooLarge);
  m = r.next();
  CHECK((m.kind == K::Message && m.body == "1"));
  m = r.next();
  CHECK(m.kind == K::BadFrame);  // a header line over the limit
  CHECK(m.error.find("longer than") != std::string::npos);
  m = r.next();
  CHECK(m.kind == K::Eof);  // the last body ends early: dropped
  CHECK(r.next().kind == K::Eof);
}

TEST_CASE("uri_to_path decodes file URIs") {
  CHECK(uri_to_path("file:///work/train%20dir/train.py") == "/work/train dir/train.py");
  CHECK(uri_to_path("file://localhost/a/b.py") == "/a/b.py");
  CHECK(uri_to_path("untitled:Untitled-1") == "untitled:Untitled-1");
  CHECK(uri_to_path("file:///a%2") == "/a%2");
}

// --- lifecycle and robustness ---------------------------------------------------------

TEST_CASE("lifecycle: requests before initialize, unknown methods, bad messages, shutdown") {
  Client c;
  json early = c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", pos(0, 0)}});
  CHECK(early["error"]["code"] == error_code::kServerNotInitialized);
  c.notify("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "python"}, {"version", 1}, {"text", "x"}}}});
  CHECK(c.sent.empty());  // notifications before initialize are dropped, never answered
  json init = c.initialize();
  CHECK(init["result"]["serverInfo"]["name"] == "ddplint");
  CHECK(init["result"]["capabilities"]["textDocumentSync"]["change"] == 2);
  CHECK_FALSE(init["result"]["capabilities"].contains("diagnosticProvider"));
  CHECK(c.request("initialize", {{"capabilities", json::object()}})["error"]["code"] == error_code::kInvalidRequest);
  CHECK(c.request("workspace/symbol", {{"query", ""}})["error"]["code"] == error_code::kMethodNotFound);
  c.notify("$/setTrace", {{"value", "off"}});
  c.notify("custom/unknown");
  CHECK(c.sent.empty());
  // missing params
  CHECK(c.request("textDocument/hover", json::object())["error"]["code"] == error_code::kInvalidParams);
  CHECK(c.request("textDocument/codeAction", {{"textDocument", {{"uri", 5}}}})["error"]["code"] ==
        error_code::kInvalidParams);
  // not a request at all
  c.server.handle(json::array());
  CHECK(c.sent.back()["error"]["code"] == error_code::kInvalidRequest);
  CHECK(c.sent.back()["id"].is_null());
  c.server.handle({{"jsonrpc", "2.0"}, {"id", 9}});
  CHECK(c.sent.back()["error"]["code"] == error_code::kInvalidRequest);
  c.server.handle({{"jsonrpc", "2.0"}, {"id", {1, 2}}, {"method", "shutdown"}});
  CHECK(c.sent.back()["error"]["code"] == error_code::kInvalidRequest);
  c.server.handle_unparsable("syntax error at byte 3");
  CHECK(c.sent.back()["error"]["code"] == error_code::kParseError);
  // a response from the client (to our registerCapability) is not answered
  std::size_t n = c.sent.size();
  c.server.handle({{"jsonrpc", "2.0"}, {"id", "ddplint-1"}, {"result", nullptr}});
  CHECK(c.sent.size() == n);
  CHECK(c.request("shutdown", nullptr)["result"].is_null());
  CHECK(c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", pos(0, 0)}})["error"]["code"] ==
        error_code::kInvalidRequest);
  CHECK_FALSE(c.server.exit_requested());
  c.notify("exit");
  CHECK(c.server.exit_requested());
  CHECK(c.server.exit_code() == 0);
}

TEST_CASE("lifecycle: exit without shutdown is exit code 1; cancelled requests get RequestCancelled") {
  Client c;
  c.initialize();
  c.server.cancel(json(7));
  c.next_id = 7;
  CHECK(c.request("shutdown", nullptr)["error"]["code"] == error_code::kRequestCancelled);
  c.server.clear_cancellations();
  c.notify("exit");
  CHECK(c.server.exit_code() == 1);
}

// --- diagnostics -------------------------------------------------------------------------

TEST_CASE("push diagnostics: open, incremental change, full change, close; fields and tags") {
  Client c;
  c.initialize(json::object(), kWithDDP102);
  c.open(kHead + "l = DataLoader(ds, num_workers=4)\nwith torch.cuda.amp.autocast():\n    y = model(x)\n");
  json p = c.publish();
  CHECK(p["version"] == 1);
  CHECK(codes_of(p["diagnostics"]) == std::vector<std::string>{"DDP102", "DDP502"});
  json d = p["diagnostics"][0];
  CHECK(d["source"] == "ddplint");
  CHECK(d["severity"] == 2);
  CHECK(d["codeDescription"]["href"].get<std::string>().rfind("https://pytorch.org/docs/", 0) == 0);
  CHECK_FALSE(d.contains("tags"));
  CHECK(p["diagnostics"][1]["tags"] == json{2});  // DDP502: Deprecated
  CHECK(c.publish().is_null());  // nothing pending: nothing pushed again

  // the user types `, pin_memory=True` before the `)` of line 3: DDP102 goes away
  c.notify("textDocument/didChange",
           {{"textDocument", {{"uri", kUri}, {"version", 2}}},
            {"contentChanges", {{{"range", range(3, 32, 3, 32)}, {"text", ", pin_memory"}},
                                {{"range", range(3, 44, 3, 44)}, {"text", "=True"}}}}});
  p = c.publish();
  CHECK(p["version"] == 2);
  CHECK(codes_of(p["diagnostics"]) == std::vector<std::string>{"DDP502"});
  CHECK(p["diagnostics"][0]["range"]["start"]["line"] == 4);
  // a full-text change
  c.notify("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 3}}},
                                      {"contentChanges", {{{"text", kHead + "l = DataLoader(ds)\n"}}}}});
  p = c.publish();
  CHECK(codes_of(p["diagnostics"]) == std::vector<std::string>{"DDP101", "DDP102"});
  c.notify("textDocument/didClose", {{"textDocument", {{"uri", kUri}}}});
  CHECK(c.sent.back()["params"]["diagnostics"] == json::array());
  CHECK(c.sent.back()["params"]["uri"] == kUri);
  // edits out of range are clamped, never a crash
  c.open("x = 1\n");
  c.notify("textDocument/didChange",
           {{"textDocument", {{"uri", kUri}, {"version", 2}}},
            {"contentChanges", {{{"range", range(90, 4, 3, 999)}, {"text", "y"}}}}});
  CHECK(c.publish()["diagnostics"] == json::array());
}

TEST_CASE("positions that are not 32-bit integers are clamped, never undefined or wrapped") {
  // found by hostile testing: `"line": 1e300` was undefined behaviour (UBSan abort),
  // and `"line": 4294967296` wrapped to line 0
  Client c;
  c.initialize();
  const std::string text = kHead + "x = 1\n";
  const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  struct Case {
    json line;
    int expected_line;  // where the inserted DataLoader line lands
  };
  for (const Case& each : {Case{json(1e300), lines}, Case{json(4294967296ull), lines},
                           Case{json(18446744073709551615ull), lines}, Case{json(-1e10), 0}, Case{json(-5), 0},
                           Case{json(2.5), 2}}) {
    CAPTURE(each.line.dump());
    c.open(text);
    json at = {{"line", each.line}, {"character", 0}};
    c.notify("textDocument/didChange",
             {{"textDocument", {{"uri", kUri}, {"version", 2}}},
              {"contentChanges", {{{"range", {{"start", at}, {"end", at}}}, {"text", "l = DataLoader(ds)\n"}}}}});
    json p = c.publish();
    REQUIRE(p["diagnostics"].size() >= 1);
    CHECK(p["diagnostics"][0]["range"]["start"]["line"] == each.expected_line);
    CHECK(c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", at}}).contains("result"));
    CHECK(c.request("textDocument/codeAction", {{"textDocument", {{"uri", kUri}}},
                                                {"range", {{"start", at}, {"end", at}}},
                                                {"context", {{"diagnostics", json::array()}}}})
              .contains("result"));
    c.notify("textDocument/didClose", {{"textDocument", {{"uri", kUri}}}});
  }
  // a position that is not a number is Invalid params for a request
  c.open(text);
  json bad = c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", {{"line", "2"}, {"character", 0}}}});
  CHECK(bad["error"]["code"] == -32602);
  // debounceMs beyond int is clamped, not truncated
  c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", {{"debounceMs", 9223372036854775807ll}}}}}});
}

TEST_CASE("a buffer with too many tokens to parse within bounded memory is neither parsed nor linted") {
  Client c;
  c.initialize(json::object(), kWithDDP102);
  std::string degenerate = kHead;
  while (degenerate.size() < 9u * 1024u * 1024u) degenerate += "x=1\n";  // ~9 million tokens
  c.open(degenerate);
  CHECK(c.publish()["diagnostics"] == json::array());
  json hover = c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", pos(0, 0)}});
  CHECK(hover["result"].is_null());
  // edited back to ordinary size, it is linted again
  c.notify("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 2}}},
                                      {"contentChanges", {{{"text", kHead + "l = DataLoader(ds)\n"}}}}});
  CHECK(codes_of(c.publish()["diagnostics"]) == std::vector<std::string>{"DDP101", "DDP102"});
}

TEST_CASE("documents that are not Python, unknown documents and a 5 MB buffer") {
  Client c;
  c.initialize(json::object(), kWithDDP102);
  c.open(kHead + "l = DataLoader(ds)\n", "file:///a/notes.md", "markdown");
  CHECK(c.publish("file:///a/notes.md").is_null());
  c.notify("textDocument/didChange", {{"textDocument", {{"uri", "file:///never/opened.py"}, {"version", 2}}},
                                      {"contentChanges", {{{"text", "x"}}}}});
  CHECK(c.request("textDocument/hover", {{"textDocument", {{"uri", "file:///never/opened.py"}}}, {"position", pos(0, 0)}})
            ["result"].is_null());
  std::string big = kHead;
  while (big.size() < 5 * 1024 * 1024) big += "for step, batch in enumerate(loader):\n    loss = model(batch)\n";
  big += "l = DataLoader(ds)\n";
  c.open(big);
  json p = c.publish();
  CHECK(codes_of(p["diagnostics"]).size() >= 2);
}

TEST_CASE("pull diagnostics when the client supports them: no push, resultId, unchanged") {
  Client c;
  json init = c.initialize({{"textDocument", {{"diagnostic", {{"dynamicRegistration", false}}}}}}, kWithDDP102);
  CHECK(init["result"]["capabilities"]["diagnosticProvider"]["identifier"] == "ddplint");
  c.open(kHead + "l = DataLoader(ds)\n");
  CHECK(c.publish().is_null());
  json r = c.request("textDocument/diagnostic", {{"textDocument", {{"uri", kUri}}}})["result"];
  CHECK(r["kind"] == "full");
  CHECK(codes_of(r["items"]) == std::vector<std::string>{"DDP101", "DDP102"});
  json again = c.request("textDocument/diagnostic", {{"textDocument", {{"uri", kUri}}}, {"previousResultId", r["resultId"]}});
  CHECK(again["result"]["kind"] == "unchanged");
  c.notify("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 2}}},
                                      {"contentChanges", {{{"text", "x = 1\n"}}}}});
  json after = c.request("textDocument/diagnostic", {{"textDocument", {{"uri", kUri}}}, {"previousResultId", r["resultId"]}});
  CHECK(after["result"]["kind"] == "full");
  CHECK(after["result"]["items"] == json::array());
}

// --- code actions and hover ------------------------------------------------------------------

TEST_CASE("code actions: disable for this line (new, after a comment, extending a list), quick fix, fix all") {
  Client c;
  c.initialize({{"workspace", {{"workspaceEdit", {{"documentChanges", true}}}}}}, kWithDDP102);
  std::string text = kHead + "a = DataLoader(ds)\n" + "b = DataLoader(ds, num_workers=2)  # eval loader\n" +
                     "c = DataLoader(ds, num_workers=2)  # noqa: DDP999\n";
  c.open(text);
  auto actions_at = [&](std::uint32_t line, json only = nullptr) {
    json ctx = {{"diagnostics", json::array()}};
    if (!only.is_null()) ctx["only"] = only;
    return c.request("textDocument/codeAction",
                     {{"textDocument", {{"uri", kUri}}}, {"range", range(line, 0, line, 0)}, {"context", ctx}})["result"];
  };
  auto find_title = [](const json& actions, const std::string& title) {
    for (const json& a : actions)
      if (a["title"] == title) return a;
    return json();
  };
  json a3 = actions_at(3);
  json disable = find_title(a3, "ddplint (DDP101): Disable for this line");
  REQUIRE(disable.is_object());
  CHECK(disable["kind"] == "quickfix");
  CHECK(disable["diagnostics"][0]["code"] == "DDP101");
  CHECK(disable["edit"]["documentChanges"][0]["textDocument"]["version"] == 1);
  std::string after = apply_workspace_edit(text, disable["edit"], PositionEncoding::Utf16);
  CHECK(after.find("a = DataLoader(ds)  # noqa: DDP101\n") != std::string::npos);
  json pin = find_title(a3, "ddplint (DDP102): Add `pin_memory=True`");
  REQUIRE(pin.is_object());
  CHECK(pin["isPreferred"] == true);
  CHECK(apply_workspace_edit(text, pin["edit"], PositionEncoding::Utf16).find("a = DataLoader(ds, pin_memory=True)\n") !=
        std::string::npos);
  CHECK(find_title(a3, "ddplint: Fix all auto-fixable problems").is_null());  // only when asked for source actions

  json b = find_title(actions_at(4), "ddplint (DDP102): Disable for this line");
  CHECK(apply_workspace_edit(text, b["edit"], PositionEncoding::Utf16)
            .find("b = DataLoader(ds, num_workers=2)  # eval loader  # noqa: DDP102\n") != std::string::npos);
  json c5 = find_title(actions_at(5), "ddplint (DDP102): Disable for this line");
  std::string extended = apply_workspace_edit(text, c5["edit"], PositionEncoding::Utf16);
  CHECK(extended.find("# noqa: DDP999, DDP102\n") != std::string::npos);

  // applying an action's edit and re-linting: the finding is gone
  c.notify("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 2}}},
                                      {"contentChanges", {{{"text", extended}}}}});
  std::vector<std::string> left = codes_of(c.publish()["diagnostics"]);
  CHECK(std::count(left.begin(), left.end(), "DDP102") == 2);

  json all = actions_at(0, {"source.fixAll"});
  REQUIRE(all.size() == 1);
  CHECK(all[0]["kind"] == "source.fixAll.ddplint");
  std::string fixed = apply_workspace_edit(extended, all[0]["edit"], PositionEncoding::Utf16);
  CHECK(fixed.find("a = DataLoader(ds, pin_memory=True)") != std::string::npos);
  CHECK(fixed.find("b = DataLoader(ds, num_workers=2, pin_memory=True)  # eval loader") != std::string::npos);
  CHECK(actions_at(3, {"quickfix"}).size() >= 2);
  CHECK(actions_at(3, {"refactor"}).empty());
}

TEST_CASE("code actions: the noqa goes where a comment can go, the line where a multi-line string ends") {
  Client c;
  c.initialize(json::object(), kWithDDP102);
  // the finding's line ends inside a string that continues on the next line
  std::string text = kHead + "a = DataLoader(ds); s = \"\"\"doc\nmore\"\"\"\n";
  c.open(text);
  json actions = c.request("textDocument/codeAction", {{"textDocument", {{"uri", kUri}}},
                                                       {"range", range(3, 4, 3, 4)},
                                                       {"context", {{"diagnostics", json::array()}}}})["result"];
  int disables = 0;
  for (const json& a : actions) {
    if (a["title"].get<std::string>().find("Disable") == std::string::npos) continue;
    ++disables;
    std::string edited = apply_workspace_edit(text, a["edit"], PositionEncoding::Utf16);
    CHECK(edited.find("more\"\"\"  # noqa: DDP10") != std::string::npos);
  }
  CHECK(disables == 2);
  CHECK(actions.size() == 4);  // and the quick fixes (pin_memory=True, num_workers=4)
  // the comment there silences the finding
  std::string silenced = kHead + "a = DataLoader(ds); s = \"\"\"doc\nmore\"\"\"  # noqa: DDP101, DDP102\n";
  c.notify("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 2}}},
                                      {"contentChanges", {{{"text", silenced}}}}});
  CHECK(codes_of(c.publish()["diagnostics"]).empty());
}

TEST_CASE("hover: a finding's range and a code in a noqa comment show the rule's documentation") {
  Client c;
  c.initialize({{"general", {{"positionEncodings", {"utf-8"}}}}});
  c.open(kHead + "a = DataLoader(ds, pin_memory=True)\nb = 1  # noqa: DDP303, DDP401\n");
  auto hover = [&](std::uint32_t line, std::uint32_t character) {
    return c.request("textDocument/hover", {{"textDocument", {{"uri", kUri}}}, {"position", pos(line, character)}})["result"];
  };
  json h = hover(3, 6);
  REQUIRE(h.is_object());
  CHECK(h["contents"]["kind"] == "markdown");
  std::string value = h["contents"]["value"];
  CHECK(value.find("DDP101") != std::string::npos);
  CHECK(value.find("## What it does") != std::string::npos);
  CHECK(h["range"] == range(3, 4, 3, 14));
  json n = hover(4, 25);  // on DDP401
  REQUIRE(n.is_object());
  CHECK(n["contents"]["value"].get<std::string>().find("DDP401") != std::string::npos);
  CHECK(n["range"] == range(4, 23, 4, 29));
  CHECK(hover(4, 2).is_null());
  CHECK(hover(0, 0).is_null());
}

// --- settings ------------------------------------------------------------------------

TEST_CASE("settings: an opt-in rule is off until extendSelect names its code") {
  Client c;
  c.initialize();
  c.open(kHead + "l = DataLoader(ds)\n");
  CHECK(codes_of(c.publish()["diagnostics"]) == std::vector<std::string>{"DDP101"});
  c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", {{"select", {"ALL"}}}}}}});
  CHECK(codes_of(c.publish()["diagnostics"]) == std::vector<std::string>{"DDP101"});  // ALL is not its code
  c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", kWithDDP102}}}});
  CHECK(codes_of(c.publish()["diagnostics"]) == std::vector<std::string>{"DDP101", "DDP102"});
  c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", {{"extendSelect", {"XYZ9"}}}}}}});
  CHECK(c.server.settings().extend_select == std::vector<std::string>{"DDP102"});  // rejected, kept
  // a setting of the wrong type is reported, and the previous settings kept
  for (json bad : {json{{"extendSelect", 5}}, json{{"select", {nullptr}}}, json{{"ignore", {true}}},
                   json{{"configPath", 3}}}) {
    CAPTURE(bad.dump());
    c.sent.clear();
    c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", bad}}}});
    REQUIRE_FALSE(c.sent.empty());
    CHECK(c.sent.back()["method"] == "window/showMessage");
    CHECK(c.server.settings().extend_select == std::vector<std::string>{"DDP102"});
  }
  CHECK(c.publish().is_null());  // settings unchanged: nothing re-linted
}

TEST_CASE("settings: initializationOptions and didChangeConfiguration select and ignore; bad codes rejected") {
  Client c;
  c.initialize(json::object(), {{"select", {"DDP101"}}});
  c.open(kHead + "l = DataLoader(ds)\n");
  CHECK(codes_of(c.publish()["diagnostics"]) == std::vector<std::string>{"DDP101"});
  c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", {{"ignore", "DDP101"}, {"extendSelect", "DDP102"}}}}}});
  CHECK(codes_of(c.publish()["diagnostics"]) == std::vector<std::string>{"DDP102"});
  c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", {{"select", {"XYZ9"}}}}}}});
  REQUIRE_FALSE(c.sent.empty());
  CHECK(c.sent.back()["method"] == "window/showMessage");
  CHECK(c.sent.back()["params"]["message"].get<std::string>().find("XYZ9") != std::string::npos);
  CHECK(c.server.settings().ignore == std::vector<std::string>{"DDP101"});  // kept
  c.notify("workspace/didChangeWatchedFiles", {{"changes", {{{"uri", "file:///work/pyproject.toml"}, {"type", 2}}}}});
  CHECK(codes_of(c.publish()["diagnostics"]) == std::vector<std::string>{"DDP102"});  // re-linted
}

TEST_CASE("config file watching is registered when the client allows dynamic registration") {
  Client c;
  c.initialize({{"workspace", {{"didChangeWatchedFiles", {{"dynamicRegistration", true}}}}}});
  REQUIRE_FALSE(c.sent.empty());
  json reg = c.sent.back();
  CHECK(reg["method"] == "client/registerCapability");
  CHECK(reg["params"]["registrations"][0]["method"] == "workspace/didChangeWatchedFiles");
  // ddplint's three configuration files, and Ruff's ruff.toml and .ruff.toml (their line-length)
  std::vector<std::string> globs;
  for (const json& w : reg["params"]["registrations"][0]["registerOptions"]["watchers"]) globs.push_back(w["globPattern"]);
  CHECK(globs == std::vector<std::string>{"**/pyproject.toml", "**/ddplint.toml", "**/.ddplint.toml", "**/ruff.toml", "**/.ruff.toml"});
}

TEST_CASE("configuration files: the closest one to the buffer, configPath, reload on change, errors shown once") {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ddplint-lsp-config-XXXXXX").string();
  std::filesystem::path root = ::mkdtemp(tmpl.data());
  auto write = [&](const std::string& rel, const std::string& text) {
    std::filesystem::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  write("pyproject.toml", "[tool.ddplint]\nextend-select = [\"DDP102\"]\nignore = [\"DDP101\"]\n");
  write("alt.toml", "select = [\"DDP101\"]\n");
  std::string uri = "file://" + (root / "src" / "train.py").string();
  const std::string text = kHead + "l = DataLoader(ds)\n";
  {
    Client c;
    c.initialize();
    c.open(text, uri);
    CHECK(codes_of(c.publish(uri)["diagnostics"]) == std::vector<std::string>{"DDP102"});
    // the editor's ignore adds to the file's
    c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", {{"ignore", {"DDP102"}}}}}}});
    CHECK(c.publish(uri)["diagnostics"] == json::array());
    c.notify("workspace/didChangeConfiguration", {{"settings", {{"ddplint", json::object()}}}});
    CHECK(codes_of(c.publish(uri)["diagnostics"]) == std::vector<std::string>{"DDP102"});
    // the file changes on disk: the watcher's notification re-reads it
    write("pyproject.toml", "[tool.ddplint]\nignore = [\"DDP102\"]\n");
    c.notify("workspace/didChangeWatchedFiles", {{"changes", {{{"uri", "file://" + (root / "pyproject.toml").string()}, {"type", 2}}}}});
    CHECK(codes_of(c.publish(uri)["diagnostics"]) == std::vector<std::string>{"DDP101"});
    // a broken file: shown once, and the buffer is linted without it
    write("pyproject.toml", "[tool.ddplint]\nextend-select = [\"DDP102\"]\nbogus = true\n");
    c.notify("workspace/didChangeWatchedFiles", {{"changes", json::array()}});
    CHECK(codes_of(c.publish(uri)["diagnostics"]) == std::vector<std::string>{"DDP101"});  // not its extend-select
    int shown = 0;
    for (const json& m : c.sent)
      if (m.value("method", "") == "window/showMessage" &&
          m["params"]["message"].get<std::string>().find("pyproject.toml:3:1") != std::string::npos)
        ++shown;
    CHECK(shown == 1);
  }
  {
    Client c;
    c.initialize(json::object(), {{"configPath", (root / "alt.toml").string()}});
    c.open(text, uri);
    CHECK(codes_of(c.publish(uri)["diagnostics"]) == std::vector<std::string>{"DDP101"});
  }
  std::filesystem::remove_all(root);
}

TEST_CASE("server: a buffer takes its project's facts, as the CLI does") {
  namespace fs = std::filesystem;
  fs::path helper = fs::path(DDPLINT_SOURCE_DIR) / "fixtures/projects/engine_split/util/misc.py";
  std::string text;
  {
    std::ifstream in(helper);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  REQUIRE(!text.empty());
  Client c;
  c.initialize();
  std::string uri = "file://" + helper.lexically_normal().string();
  c.open(text, uri);
  json published = c.publish(uri);
  REQUIRE(published.is_object());
  REQUIRE(published["diagnostics"].size() == 1);  // the helper's .item(), per step through engine.py
  CHECK(published["diagnostics"][0]["code"] == "DDP401");
  CHECK(published["diagnostics"][0]["message"].get<std::string>().find("(every step through ") != std::string::npos);
  // the chain as related information: main.py's epoch loop, then engine.py's per-step call
  const json& related = published["diagnostics"][0]["relatedInformation"];
  REQUIRE(related.size() == 2);
  fs::path root = fs::path(DDPLINT_SOURCE_DIR) / "fixtures/projects/engine_split";
  CHECK(related[0]["location"]["uri"] == "file://" + (root / "main.py").lexically_normal().string());
  CHECK(related[1]["location"]["uri"] == "file://" + (root / "engine.py").lexically_normal().string());
  CHECK(related[1]["location"]["range"]["start"]["line"] == 16);  // engine.py:17, 0-based
  CHECK(related[1]["message"] == "calls this every training step");
  // the same text under a path outside any project: linted alone, nothing per step
  c.open(text, "untitled:helper.py");
  json alone = c.publish("untitled:helper.py");
  REQUIRE(alone.is_object());
  CHECK(alone["diagnostics"].empty());
}

TEST_CASE("server: editing one buffer updates the findings of the open buffers that depend on it, unsaved") {
  namespace fs = std::filesystem;
  fs::path root = fs::path(DDPLINT_SOURCE_DIR) / "fixtures/projects/engine_split";
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string helper_text = slurp(root / "util/misc.py"), engine_text = slurp(root / "engine.py");
  const std::string helper_uri = "file://" + (root / "util/misc.py").lexically_normal().string();
  const std::string engine_uri = "file://" + (root / "engine.py").lexically_normal().string();
  Client c;
  c.initialize();
  c.open(helper_text, helper_uri);
  c.open(engine_text, engine_uri);
  json first = c.publish(helper_uri);
  REQUIRE(first.is_object());
  REQUIRE(first["diagnostics"].size() == 1);  // clip_and_report's .item(), every step through engine.py
  // engine.py's buffer now calls the helper every 100 steps (not saved: the file on disk is unchanged)
  const std::string call = "        misc.clip_and_report(model)\n";
  std::size_t at = engine_text.find(call);
  REQUIRE(at != std::string::npos);
  std::uint32_t line = static_cast<std::uint32_t>(std::count(engine_text.begin(), engine_text.begin() + static_cast<long>(at), '\n'));
  c.notify("textDocument/didChange",
           {{"textDocument", {{"uri", engine_uri}, {"version", 2}}},
            {"contentChanges", json::array({{{"range", range(line, 0, line, 0)}, {"text", "        if step % 100 == 0:\n    "}}})}});
  json engine_after = c.publish(engine_uri);
  REQUIRE(engine_after.is_object());
  CHECK(engine_after["version"] == 2);
  json helper_after = c.publish(helper_uri);
  REQUIRE(helper_after.is_object());  // published again, though its own text did not change
  CHECK(helper_after["diagnostics"].empty());
  // the edit undone: the finding is back
  c.notify("textDocument/didChange", {{"textDocument", {{"uri", engine_uri}, {"version", 3}}},
                                      {"contentChanges", json::array({{{"text", engine_text}}})}});
  (void)c.publish(engine_uri);
  json helper_back = c.publish(helper_uri);
  REQUIRE(helper_back.is_object());
  CHECK(helper_back["diagnostics"].size() == 1);
  // closing the edited buffer: the file on disk counts again (no change, so no new publish needed)
  c.notify("textDocument/didClose", {{"textDocument", {{"uri", engine_uri}}}});
  json after_close = c.publish(helper_uri);
  CHECK((after_close.is_null() || after_close["diagnostics"].size() == 1));
}

// LSP 3.17 notebook documents: the server announces notebookDocumentSync for
// Jupyter notebooks' Python cells, lints the cells together (a name imported
// in one cell is known in the next) and publishes each cell's diagnostics
// under the cell's URI, as Ruff's server does for notebooks
// (https://github.com/astral-sh/ruff/issues/10858).
TEST_CASE("lsp: notebook documents are linted as one notebook, diagnostics per cell") {
  Client c;
  json init = c.initialize({}, kWithDDP102);
  const json& sync = init["result"]["capabilities"]["notebookDocumentSync"];
  CHECK(sync["notebookSelector"][0]["notebook"]["notebookType"] == "jupyter-notebook");
  CHECK(sync["notebookSelector"][0]["cells"][0]["language"] == "python");
  const std::string nb = "file:///work/nb/train.ipynb";
  const std::string c1 = "vscode-notebook-cell:/work/nb/train.ipynb#c1", c2 = "vscode-notebook-cell:/work/nb/train.ipynb#c2",
                    md = "vscode-notebook-cell:/work/nb/train.ipynb#m1";
  json cells = json::array({{{"kind", 1}, {"document", md}}, {{"kind", 2}, {"document", c1}}, {{"kind", 2}, {"document", c2}}});
  json texts = json::array(
      {{{"uri", md}, {"languageId", "markdown"}, {"version", 1}, {"text", "# notes: DataLoader(ds)"}},
       {{"uri", c1}, {"languageId", "python"}, {"version", 1}, {"text", "%matplotlib inline\n" + kHead}},
       {{"uri", c2}, {"languageId", "python"}, {"version", 1}, {"text", "!nvidia-smi\nl = DataLoader(ds, num_workers=2)"}}});
  c.notify("notebookDocument/didOpen",
           {{"notebookDocument", {{"uri", nb}, {"notebookType", "jupyter-notebook"}, {"version", 1}, {"cells", cells}}},
            {"cellTextDocuments", texts}});
  json second = c.publish(c2);
  REQUIRE(second.is_object());
  CHECK(codes_of(second["diagnostics"]) == std::vector<std::string>{"DDP102"});
  // the range is the cell's: line 1 (after the magic), at `DataLoader`
  CHECK(second["diagnostics"][0]["range"]["start"] == json{{"line", 1}, {"character", 4}});
  CHECK(c.publish(c1)["diagnostics"].empty());  // no DDP001 from the magic
  CHECK(c.publish(md)["diagnostics"].empty());  // Markdown is not read
  // an edit to a cell's text is linted again
  c.notify("notebookDocument/didChange",
           {{"notebookDocument", {{"uri", nb}, {"version", 2}}},
            {"change",
             {{"cells",
               {{"textContent",
                 {{{"document", {{"uri", c2}, {"version", 2}}},
                   {"changes", {{{"range", {{"start", {{"line", 1}, {"character", 32}}}, {"end", {{"line", 1}, {"character", 32}}}}},
                                  {"text", ", pin_memory=True"}}}}}}}}}}}});
  CHECK(c.publish(c2)["diagnostics"].empty());
  // a cell added before the others moves nothing: each cell keeps its own lines
  const std::string c0 = "vscode-notebook-cell:/work/nb/train.ipynb#c0";
  c.notify("notebookDocument/didChange",
           {{"notebookDocument", {{"uri", nb}, {"version", 3}}},
            {"change",
             {{"cells",
               {{"structure",
                 {{"array", {{"start", 0}, {"deleteCount", 1}, {"cells", {{{"kind", 2}, {"document", c0}}}}}},
                  {"didOpen", {{{"uri", c0}, {"languageId", "python"}, {"version", 1}, {"text", "m = DataLoader(x)\n"}}}},
                  {"didClose", {{{"uri", md}}}}}}}}}}});
  CHECK(c.publish(md)["diagnostics"].empty());  // the removed cell is cleared
  json first = c.publish(c0);
  CHECK(codes_of(first["diagnostics"]) == std::vector<std::string>{"DDP101", "DDP102"});
  CHECK(first["diagnostics"][0]["range"]["start"]["line"] == 0);
  // pull diagnostics ask per cell
  Client pull;
  pull.initialize({{"textDocument", {{"diagnostic", json::object()}}}}, kWithDDP102);
  pull.notify("notebookDocument/didOpen",
              {{"notebookDocument", {{"uri", nb}, {"notebookType", "jupyter-notebook"}, {"version", 1}, {"cells", cells}}},
               {"cellTextDocuments", texts}});
  json pulled = pull.request("textDocument/diagnostic", {{"textDocument", {{"uri", c2}}}});
  CHECK(codes_of(pulled["result"]["items"]) == std::vector<std::string>{"DDP102"});
  // closing clears every cell
  c.notify("notebookDocument/didClose", {{"notebookDocument", {{"uri", nb}}}, {"cellTextDocuments", {{{"uri", c0}}}}});
  CHECK(c.publish(c0)["diagnostics"].empty());
}
