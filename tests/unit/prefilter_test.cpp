// The prefilter (linter/prefilter.hpp) and the streamed JSON writer that keeps
// memory flat (linter/output.hpp).
#include <doctest/doctest.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "linter/lint.hpp"
#include "linter/output.hpp"
#include "linter/prefilter.hpp"
#include "rules/registry.hpp"

using namespace ddplint;

namespace {
void no_check(const SemanticModel&, RuleContext&) {}
Rule rule_needing(std::string_view code, std::string_view needs) {
  Rule r;
  r.info.code = code;
  r.info.needs = needs;
  r.check = &no_check;
  return r;
}
}  // namespace

TEST_CASE("parse_needs: groups by ';', alternatives by '|', empty alternatives rejected") {
  auto g = parse_needs("torch;item|step");
  REQUIRE(g.size() == 2);
  CHECK(g[0] == std::vector<std::string_view>{"torch"});
  CHECK(g[1] == std::vector<std::string_view>{"item", "step"});
  CHECK(parse_needs("").empty());
  CHECK_THROWS_AS(parse_needs("a||b"), std::invalid_argument);
  CHECK_THROWS_AS(parse_needs("a;"), std::invalid_argument);
}

TEST_CASE("a file passes when every group of some enabled rule has an alternative in its bytes") {
  std::vector<Rule> rules = {rule_needing("X1", "torch;item|step"), rule_needing("X2", "NCCL;environ")};
  Prefilter p(rules, RuleSelection{});
  CHECK_FALSE(p.passes_everything());
  CHECK(p.may_fire("import torch\nx.item()\n"));
  CHECK(p.may_fire("import torch\nopt.step()\n"));
  CHECK_FALSE(p.may_fire("import torch\n"));              // X1's second group absent, X2 absent
  CHECK(p.may_fire("os.environ['NCCL_P2P_DISABLE'] = '1'"));
  CHECK_FALSE(p.may_fire("os.environ['nccl'] = 1"));       // case-sensitive
  CHECK_FALSE(p.may_fire(""));
  // only enabled rules count
  Prefilter only_x2(rules, RuleSelection({"X2"}, {}));
  CHECK_FALSE(only_x2.may_fire("import torch\nx.item()\n"));
  // a rule that needs nothing lets every file through
  rules.push_back(rule_needing("X3", ""));
  CHECK(Prefilter(rules, RuleSelection{}).passes_everything());
  CHECK(Prefilter(rules, RuleSelection{}).may_fire(""));
  // '*' (DDP001) passes wherever another rule of the catalog could fire, even unselected
  std::vector<Rule> with_star = {rule_needing("X0", "*"), rule_needing("X1", "torch")};
  Prefilter star(with_star, RuleSelection({"X0"}, {}));
  CHECK(star.may_fire("import torch"));
  CHECK_FALSE(star.may_fire("import json"));
}

TEST_CASE("a scan answers per rule, searching each needed string once") {
  std::vector<Rule> rules = {rule_needing("X0", "*"), rule_needing("X1", "torch;DataLoader"),
                             rule_needing("X2", "NCCL;environ"), rule_needing("X3", "torch;save")};
  Prefilter p(rules, RuleSelection({"X0", "X1", "X2"}, {}));
  std::string text = "import torch\nloader = DataLoader(ds)\n";
  Prefilter::Scan scan(p, text);
  CHECK(scan.rule_may_fire(1));
  CHECK_FALSE(scan.rule_may_fire(2));  // NCCL absent
  CHECK_FALSE(scan.rule_may_fire(3));  // not selected (its needs would hold no more than X1's)
  CHECK(scan.rule_may_fire(0));        // '*': the catalog could fire here
  CHECK(scan.may_fire());
  // '*' also passes scripts that only mention torch, cuda or nccl, where no
  // narrowed rule's needs hold: DDP001 keeps reporting syntax errors there
  std::string model_py = "import torch.nn as nn\nclass Net(nn.Module): pass\n";
  Prefilter::Scan other(p, model_py);
  CHECK_FALSE(other.rule_may_fire(1));
  CHECK(other.rule_may_fire(0));
  CHECK(other.may_fire());  // X0 is selected
  CHECK_FALSE(Prefilter(rules, RuleSelection({"X1"}, {})).may_fire(model_py));
  CHECK_FALSE(Prefilter::Scan(p, "import json\n").rule_may_fire(0));
}

TEST_CASE("a selection of narrow rules skips torch files they could not fire on, with the same findings") {
  RuleSelection loaders({"DDP101"}, {});
  SourceFile model_py("model.py", "import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n    pass\n");
  CHECK(lint(model_py, rules::all(), loaders).skipped);
  CHECK_FALSE(lint(model_py, rules::all(), RuleSelection{}).skipped);  // DDP001 and DDP202 need only torch
  SourceFile train("train.py", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n");
  LintResult with = lint(train, rules::all(), loaders, RuleOptions{}, true);
  LintResult without = lint(train, rules::all(), loaders, RuleOptions{}, false);
  CHECK_FALSE(with.skipped);
  REQUIRE(with.diagnostics.size() == 1);
  CHECK(with.diagnostics[0].rule->code == "DDP101");
  CHECK(without.diagnostics.size() == 1);
}

TEST_CASE("every rule of the catalog declares what it needs, and lint() skips files nothing could fire on") {
  for (const Rule& r : rules::all()) {
    CAPTURE(r.info.code);
    if (r.check == nullptr && r.check_noqa == nullptr) continue;  // a launch-script rule: launch scripts are not prefiltered
    CHECK_FALSE(r.info.needs.empty());
    CHECK_NOTHROW(parse_needs(r.info.needs == "*" ? "x" : r.info.needs));
  }
  RuleSelection all;
  SourceFile plain("util.py", "import json\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n");
  LintResult skipped = lint(plain, rules::all(), all);
  CHECK(skipped.skipped);
  CHECK(skipped.diagnostics.empty());
  SourceFile script("train.py", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n");
  LintResult linted = lint(script, rules::all(), all);
  CHECK_FALSE(linted.skipped);
  CHECK_FALSE(linted.diagnostics.empty());
}

TEST_CASE("DDP001 reports syntax errors in training scripts only, with or without the prefilter") {
  RuleSelection all;
  SourceFile broken_util("util.py", "def load(path:\n    return path\n");
  SourceFile broken_script("train.py", "import torch\ndef load(path:\n    return path\n");
  for (bool prefilter : {true, false}) {
    CAPTURE(prefilter);
    CHECK(lint(broken_util, rules::all(), all, RuleOptions{}, prefilter).diagnostics.empty());
    auto found = lint(broken_script, rules::all(), all, RuleOptions{}, prefilter).diagnostics;
    REQUIRE_FALSE(found.empty());
    CHECK(found.front().rule->code == "DDP001");
  }
}

namespace {
std::string streamed(const nlohmann::ordered_json& document, const std::string& pointer,
                     const nlohmann::ordered_json& elements) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  nlohmann::ordered_json empty = document;
  empty[nlohmann::ordered_json::json_pointer(pointer)] = nlohmann::ordered_json::array();
  StreamedJsonArray stream(f, empty, pointer);
  for (const auto& e : elements) stream.push(e);
  stream.finish();
  std::string out(static_cast<std::size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  CHECK(std::fread(out.data(), 1, out.size(), f) == out.size());
  std::fclose(f);
  return out;
}
}  // namespace

TEST_CASE("a streamed JSON array is byte for byte the document's dump(2)") {
  nlohmann::ordered_json elements = nlohmann::ordered_json::array();
  elements.push_back({{"code", "DDP101"}, {"message", "line\nbreak \"quoted\" é"}, {"fix", nullptr}});
  elements.push_back({{"edits", {{{"start", 1}, {"end", 2}}}}, {"bad", std::string("\xff\xfe")}});
  elements.push_back(nlohmann::ordered_json::array());
  for (std::size_t n : {0, 1, 3}) {
    CAPTURE(n);
    nlohmann::ordered_json some = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < n; ++i) some.push_back(elements[i]);
    auto dump = [](const nlohmann::ordered_json& j) {
      return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    };
    CHECK(streamed(nlohmann::ordered_json::array(), "", some) == dump(some));
    nlohmann::ordered_json sarif = {{"version", "2.1.0"},
                                    {"runs", {{{"tool", {{"name", "x"}}}, {"results", some}, {"after", 1}}}}};
    CHECK(streamed(sarif, "/runs/0/results", some) == dump(sarif));
  }
}
