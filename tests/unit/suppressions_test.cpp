#include <doctest/doctest.h>

#include "linter/lint.hpp"
#include "linter/suppressions.hpp"
#include "rules/registry.hpp"

using namespace ddplint;

TEST_CASE("parse_noqa forms") {
  Suppressions::Entry e;
  CHECK(parse_noqa("# noqa", false, e));
  CHECK(e.all);
  e = {};
  CHECK(parse_noqa("# NOQA: DDP401, DDP402", false, e));
  CHECK_FALSE(e.all);
  CHECK(e.codes == std::vector<std::string>{"DDP401", "DDP402"});
  e = {};
  CHECK(parse_noqa("# type: ignore  # noqa:DDP101", false, e));
  CHECK(e.codes == std::vector<std::string>{"DDP101"});
  e = {};
  CHECK_FALSE(parse_noqa("# noqanot", false, e));
  CHECK_FALSE(parse_noqa("# a comment about noqa", false, e));
  CHECK(parse_noqa("# ddplint: noqa", true, e));
  CHECK(e.all);
  e = {};
  CHECK(parse_noqa("# ddplint: noqa: DDP101", true, e));
  CHECK(e.codes == std::vector<std::string>{"DDP101"});
  e = {};
  CHECK_FALSE(parse_noqa("# noqa", true, e));  // file level needs the ddplint: prefix
}

namespace {
std::vector<std::string> codes(const std::string& src) {
  SourceFile f("t.py", src);
  auto r = lint(f, rules::all(), RuleSelection{});
  std::vector<std::string> out;
  for (auto& d : r.diagnostics) out.emplace_back(d.rule->code);
  return out;
}
}  // namespace

TEST_CASE("noqa in the engine: line, codes (any case), file level anywhere, strings do not count") {
  const std::string loader = "from torch.utils.data import DataLoader\n";
  CHECK(codes(loader + "l = DataLoader(ds, pin_memory=True)\n") == std::vector<std::string>{"DDP101"});
  CHECK(codes(loader + "l = DataLoader(ds)  # noqa\n").empty());
  CHECK(codes(loader + "l = DataLoader(ds)  # noqa: DDP101\n").empty());
  // lowercase codes match (the issue 26 trap: they were ignored without a word)
  CHECK(codes(loader + "l = DataLoader(ds)  # noqa: ddp101\n").empty());
  CHECK(codes(loader + "l = DataLoader(ds)  # noqa: DDP102\n") == std::vector<std::string>{"DDP101"});
  CHECK(codes("# ddplint: noqa\n" + loader + "l = DataLoader(ds)\n").empty());
  CHECK(codes("#!/usr/bin/env python\n\"\"\"Doc.\"\"\"\n# ddplint: noqa: DDP101\n" + loader + "l = DataLoader(ds)\n").empty());
  // anywhere in the file, as Ruff's `# ruff: noqa` ("add the line # ruff: noqa anywhere in the file",
  // https://docs.astral.sh/ruff/linter/#error-suppression)
  CHECK(codes(loader + "# ddplint: noqa\nl = DataLoader(ds)\n").empty());
  CHECK(codes(loader + "l = DataLoader(ds)\n# ddplint: noqa: ddp101\n").empty());
  CHECK(codes(loader + "l = DataLoader(ds)\n# ddplint: noqa: DDP102\n") == std::vector<std::string>{"DDP101"});
  CHECK(codes(loader + "l = DataLoader(ds, x='# noqa')\n") == std::vector<std::string>{"DDP101"});
}
