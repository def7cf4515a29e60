// The cache (linter/cache.hpp, linter/lint_cache.hpp): entries come back
// only with their key; a truncated, corrupt or other build's pack is never
// trusted; concurrent writers never leave a pack that does not verify; and
// results through the cache equal results without it.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "linter/cache.hpp"
#include "linter/lint_cache.hpp"
#include "linter/project.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path root;
  TempDir() {
    static int n = 0;
    root = fs::temp_directory_path() / ("ddplint_cache_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& relative, const std::string& text) const {
    fs::path p = root / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

CacheKey key_of(const std::string& s) {
  KeyHasher h;
  h.add(s);
  return h.finish();
}

// A pack of three entries in `dir`, written by build "b1".
void write_three(const fs::path& dir) {
  Cache c(dir, "b1");
  c.put("a", key_of("ka"), "payload a");
  c.put("b", key_of("kb"), std::string(1000, 'b'));
  c.put("c", key_of("kc"), "");
  REQUIRE(c.flush());
}

}  // namespace

TEST_CASE("cache keys: parts are length-prefixed, equal parts give equal keys") {
  KeyHasher a, b, c;
  a.add("ab").add("c");
  b.add("a").add("bc");
  c.add("ab").add("c");
  CHECK(a.finish() != b.finish());
  CHECK(a.finish() == c.finish());
  CHECK(a.finish().hex().size() == 32);
  KeyHasher n1, n2;
  n1.add_number(1);
  n2.add_number(2);
  CHECK(n1.finish() != n2.finish());
}

TEST_CASE("cache: an entry comes back from a new Cache only with its key") {
  TempDir t;
  fs::path dir = t.root / ".ddplint_cache";
  {
    Cache none(dir, "b1");
    CHECK(!none.get("a", key_of("ka")));
    CHECK(none.flush());
  }
  CHECK(!fs::exists(dir));  // nothing put: nothing written
  write_three(dir);
  CHECK(slurp(dir / ".gitignore").find("\n*\n") != std::string::npos);
  CHECK(fs::exists(dir / "CACHEDIR.TAG"));
  Cache c(dir, "b1");
  CHECK(c.get("a", key_of("ka")) == std::optional<std::string>("payload a"));
  CHECK(c.get("b", key_of("kb")) == std::optional<std::string>(std::string(1000, 'b')));
  CHECK(c.get("c", key_of("kc")) == std::optional<std::string>(""));
  CHECK(!c.get("a", key_of("kb")));  // another key in the slot
  CHECK(!c.get("d", key_of("ka")));  // an empty slot
  CHECK(c.hits() == 3);
  CHECK(c.misses() == 2);
  CHECK(c.rejected() == 0);
}

TEST_CASE("cache: a truncated pack is never trusted, and is rewritten") {
  TempDir t;
  fs::path dir = t.root / "c";
  write_three(dir);
  fs::path pack = Cache(dir, "b1").pack_path();
  const std::string whole = slurp(pack);
  REQUIRE(whole.size() > 100);
  for (std::size_t size = 0; size < whole.size(); size += 7) {
    std::ofstream(pack, std::ios::binary | std::ios::trunc) << whole.substr(0, size);
    Cache c(dir, "b1");
    CHECK_MESSAGE(!c.get("a", key_of("ka")), size);
    CHECK_MESSAGE(!c.get("b", key_of("kb")), size);
    CHECK_MESSAGE(c.rejected() == 1, size);
  }
  {
    Cache c(dir, "b1");  // recomputed and put again: the pack verifies again
    c.put("a", key_of("ka"), "payload a");
  }
  Cache again(dir, "b1");
  CHECK(again.get("a", key_of("ka")) == std::optional<std::string>("payload a"));
  CHECK(again.rejected() == 0);
}

TEST_CASE("cache: a pack with any byte changed is never trusted") {
  TempDir t;
  fs::path dir = t.root / "c";
  write_three(dir);
  fs::path pack = Cache(dir, "b1").pack_path();
  const std::string whole = slurp(pack);
  for (std::size_t at = 0; at < whole.size(); at += 3) {
    std::string damaged = whole;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x20);
    std::ofstream(pack, std::ios::binary | std::ios::trunc) << damaged;
    Cache c(dir, "b1");
    CHECK_MESSAGE(!c.get("a", key_of("ka")), at);
    CHECK_MESSAGE(c.rejected() == 1, at);
  }
}

TEST_CASE("cache: another build's entries are never read, and its pack is removed on the next write") {
  TempDir t;
  fs::path dir = t.root / "c";
  write_three(dir);
  fs::path old_pack = Cache(dir, "b1").pack_path();
  {
    Cache other(dir, "b2");
    CHECK(other.pack_path() != old_pack);
    CHECK(!other.get("a", key_of("ka")));
    // b1's pack put where b2 looks: its build id does not match
    fs::copy_file(old_pack, other.pack_path());
  }
  {
    Cache other(dir, "b2");
    CHECK(!other.get("a", key_of("ka")));
    CHECK(other.rejected() == 1);
    other.put("x", key_of("kx"), "x");
  }
  CHECK(!fs::exists(old_pack));
  CHECK(Cache(dir, "b2").get("x", key_of("kx")) == std::optional<std::string>("x"));
}

TEST_CASE("cache: concurrent writers never leave a pack that does not verify") {
  TempDir t;
  fs::path dir = t.root / "c";
  constexpr int kWriters = 6, kRounds = 4, kSlots = 40;
  auto payload = [](int w, int s) { return "writer " + std::to_string(w) + " slot " + std::to_string(s); };
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      for (int r = 0; r < kRounds; ++r) {
        Cache c(dir, "b1");  // each a separate run: its own pack in memory
        for (int s = 0; s < kSlots; ++s) {
          std::string slot = std::to_string(w) + "/" + std::to_string(s);
          (void)c.get(slot, key_of(slot));
          c.put(slot, key_of(slot), payload(w, s));
        }
      }
    });
  for (auto& th : writers) th.join();
  Cache c(dir, "b1");
  int found = 0;
  for (int w = 0; w < kWriters; ++w)
    for (int s = 0; s < kSlots; ++s) {
      std::string slot = std::to_string(w) + "/" + std::to_string(s);
      if (auto got = c.get(slot, key_of(slot))) {
        CHECK(*got == payload(w, s));
        ++found;
      }
    }
  CHECK(c.rejected() == 0);
  CHECK(found > 0);
  for (const auto& entry : fs::directory_iterator(dir))
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp.") == std::string::npos, entry.path());
}

TEST_CASE("cache: a folder that cannot be written is a cache that misses") {
  TempDir t;
  t.write("file", "x");
  Cache c(t.root / "file" / "sub", "b1");  // a file where a folder should be
  c.put("a", key_of("ka"), "a");
  CHECK(c.get("a", key_of("ka")) == std::optional<std::string>("a"));  // this run keeps it in memory
  CHECK(!c.flush());
}

TEST_CASE("lint results: encoded and decoded whole; any truncation is refused") {
  const std::string text =
      "import torch\nfrom torch.utils.data import DataLoader\n"
      "loader = DataLoader(ds, batch_size=8)\nmodel = torch.nn.Linear(2, 2).cuda()\n"
      "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    print(loss.item())\n";
  SourceFile source("train.py", text);
  LintResult direct = lint(source, rules::all(), RuleSelection{});
  REQUIRE(!direct.diagnostics.empty());
  bool has_fix = false;
  for (const Diagnostic& d : direct.diagnostics) has_fix = has_fix || d.fix.has_value();
  CHECK(has_fix);
  std::string bytes = encode_lint_result(direct);
  auto back = decode_lint_result(bytes, rules::all());
  REQUIRE(back);
  REQUIRE(back->diagnostics.size() == direct.diagnostics.size());
  for (std::size_t i = 0; i < direct.diagnostics.size(); ++i) {
    const Diagnostic &a = direct.diagnostics[i], &b = back->diagnostics[i];
    CHECK(a.rule == b.rule);
    CHECK(a.start == b.start);
    CHECK(a.end == b.end);
    CHECK(a.message == b.message);
    REQUIRE(a.fix.has_value() == b.fix.has_value());
    if (!a.fix) continue;
    CHECK(a.fix->applicability == b.fix->applicability);
    CHECK(a.fix->description == b.fix->description);
    REQUIRE(a.fix->edits.size() == b.fix->edits.size());
    for (std::size_t k = 0; k < a.fix->edits.size(); ++k) {
      CHECK(a.fix->edits[k].start == b.fix->edits[k].start);
      CHECK(a.fix->edits[k].replacement == b.fix->edits[k].replacement);
    }
  }
  for (std::size_t size = 0; size < bytes.size(); ++size)
    CHECK_MESSAGE(!decode_lint_result(std::string_view(bytes).substr(0, size), rules::all()), size);
  // a rule the catalog does not have (an entry of another catalog)
  CHECK(!decode_lint_result(bytes, rules::all().subspan(0, 0)));
}

TEST_CASE("lint_cached: cold and warm results equal lint(), and a changed file is linted again") {
  TempDir t;
  Cache cache(t.root / "c", "b1");
  const std::string text =
      "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n";
  SourceFile source("train.py", text);
  RuleSelection all;
  LintResult direct = lint(source, rules::all(), all);
  auto same = [&](const LintResult& a, const LintResult& b) {
    if (a.diagnostics.size() != b.diagnostics.size() || a.error != b.error || a.skipped != b.skipped) return false;
    for (std::size_t i = 0; i < a.diagnostics.size(); ++i)
      if (a.diagnostics[i].rule != b.diagnostics[i].rule || a.diagnostics[i].start != b.diagnostics[i].start ||
          a.diagnostics[i].message != b.diagnostics[i].message)
        return false;
    return true;
  };
  CHECK(same(lint_cached(&cache, source, rules::all(), all, RuleOptions{}, nullptr), direct));
  CHECK(cache.hits() == 0);
  CHECK(same(lint_cached(&cache, source, rules::all(), all, RuleOptions{}, nullptr), direct));
  CHECK(cache.hits() == 1);
  // another selection, other options, other facts or other bytes: not the entry
  RuleSelection only({"DDP102"}, {});
  CHECK(same(lint_cached(&cache, source, rules::all(), only, RuleOptions{}, nullptr),
             lint(source, rules::all(), only)));
  ProjectFacts facts;
  facts.cuda = true;
  CHECK(same(lint_cached(&cache, source, rules::all(), all, RuleOptions{}, &facts),
             lint(source, rules::all(), all, RuleOptions{}, true, &facts)));
  SourceFile edited("train.py", text + "loader2 = DataLoader(ds)\n");
  CHECK(same(lint_cached(&cache, edited, rules::all(), all, RuleOptions{}, nullptr), lint(edited, rules::all(), all)));
  CHECK(cache.hits() == 1);
  CHECK(fingerprint(&facts) != fingerprint(nullptr));
}

TEST_CASE("project summaries through the cache: the same facts cold, warm and after an edit") {
  TempDir t;
  t.write("pyproject.toml", "");
  t.write("main.py",
          "import torch\nimport engine\nmodel = torch.nn.Linear(4, 4).cuda()\n"
          "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(10):\n"
          "    engine.train_one_epoch(model, opt)\n");
  t.write("engine.py",
          "import helpers\ndef train_one_epoch(model, opt):\n    for x in range(100):\n"
          "        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n        helpers.norms(model)\n");
  t.write("helpers.py", "def norms(model):\n    return [p.grad.norm().item() for p in model.parameters()]\n");
  const fs::path root = t.root.lexically_normal();
  auto facts_of = [&](const Project& p) {
    std::vector<std::string> out;
    for (const char* name : {"main.py", "engine.py", "helpers.py"})
      out.push_back(fingerprint(p.facts_for(root / name)));
    return out;
  };
  const auto without = facts_of(Project(root));
  fs::path dir = t.root / ".ddplint_cache";
  {
    auto cache = std::make_shared<const Cache>(dir, "b1");
    CHECK(facts_of(Project(root, cache)) == without);
    CHECK(cache->hits() == 0);
  }
  {
    auto cache = std::make_shared<const Cache>(dir, "b1");
    CHECK(facts_of(Project(root, cache)) == without);
    CHECK(cache->hits() > 0);
    CHECK(cache->misses() == 0);
    // a summary read back keeps which parameters a function runs as a model
    Project warm(root, cache);
    const ProjectFacts* main_facts = warm.facts_for(root / "main.py");
    REQUIRE(main_facts != nullptr);
    auto forwarded = main_facts->forwarding_calls.find("engine.train_one_epoch");
    REQUIRE(forwarded != main_facts->forwarding_calls.end());
    CHECK(forwarded->second.contains("#0"));
    CHECK(forwarded->second.contains("model"));
    CHECK_FALSE(forwarded->second.contains("#1"));
  }
  // helpers.py no longer syncs: facts as a cache-less run gives them
  t.write("engine.py",
          "import helpers\ndef train_one_epoch(model, opt):\n    for x in range(100):\n"
          "        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n"
          "        if x % 10 == 0:\n            helpers.norms(model)\n");
  const auto edited = facts_of(Project(root));
  CHECK(edited != without);
  auto cache = std::make_shared<const Cache>(dir, "b1");
  CHECK(facts_of(Project(root, cache)) == edited);
}

TEST_CASE("cache: a FIFO or a huge file in place of the pack is not read, and is replaced") {
  TempDir t;
  fs::path dir = t.root / ".ddplint_cache";
  write_three(dir);
  fs::path pack = Cache(dir, "b1").pack_path();
  fs::remove(pack);
  REQUIRE(::mkfifo(pack.c_str(), 0644) == 0);
  {
    Cache c(dir, "b1");
    CHECK(!c.get("a", key_of("ka")));  // returns at once: a FIFO is not opened for reading
    c.put("a", key_of("ka"), "payload a");
  }
  CHECK(fs::is_regular_file(pack));
  CHECK(Cache(dir, "b1").get("a", key_of("ka")) == std::optional<std::string>("payload a"));
  // 200 MB (sparse) that starts like a pack: rejected after reading its header
  {
    std::ofstream f(pack, std::ios::binary | std::ios::trunc);
    f << "DDPLINT-CACHE\x03\n";
  }
  fs::resize_file(pack, 200u << 20);
  Cache c(dir, "b1");
  CHECK(!c.get("a", key_of("ka")));
  CHECK(c.rejected() == 1);
}

TEST_CASE("cache: a missing or emptied .gitignore is put back at the next write") {
  TempDir t;
  fs::path dir = t.root / ".ddplint_cache";
  write_three(dir);
  fs::remove(dir / ".gitignore");
  std::ofstream(dir / "CACHEDIR.TAG", std::ios::trunc).close();  // empty, as a full disk leaves it
  {
    Cache c(dir, "b1");
    c.put("d", key_of("kd"), "d");
  }
  CHECK(slurp(dir / ".gitignore").find("\n*\n") != std::string::npos);
  CHECK(slurp(dir / "CACHEDIR.TAG").starts_with("Signature: 8a477f597d28d172789f06886806bc55"));
  // an existing folder named with --cache-dir that ddplint did not make gets no tags
  fs::create_directories(t.root / "mine");
  {
    Cache c(t.root / "mine", "b1");
    c.put("d", key_of("kd"), "d");
  }
  CHECK(!fs::exists(t.root / "mine" / ".gitignore"));
}
