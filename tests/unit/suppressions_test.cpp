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

TEST_CASE("noqa codes are letters then digits; the list ends at the first word that is not one") {
  // Ruff's lex_code: uppercase letters followed by digits (here in any case)
  Suppressions::Entry e;
  CHECK(parse_noqa("# noqa: DDP101 the loader is tiny", false, e));
  CHECK_FALSE(e.all);
  CHECK(e.codes == std::vector<std::string>{"DDP101"});
  e = {};
  CHECK(parse_noqa("# noqa: E501, ddp101 reason, DDP102", false, e));
  CHECK(e.codes == std::vector<std::string>{"E501", "DDP101"});
  e = {};
  CHECK(parse_noqa("# noqa: DDP101x, DDP102", false, e));
  CHECK(e.codes.empty());
  e = {};
  // `# noqa:` then words and no code silences nothing (it was once read as codes)
  CHECK(parse_noqa("# noqa: tiny data", false, e));
  CHECK_FALSE(e.all);
  CHECK(e.codes.empty());
  e = {};
  CHECK(parse_noqa("# noqa:", false, e));
  CHECK(e.all);
  e = {};
  CHECK(parse_noqa("# noqa:  # why", false, e));
  CHECK(e.all);
  std::optional<NoqaDirective> d = find_noqa("# noqa: E501  reason", false);
  REQUIRE(d);
  CHECK(d->codes_start == 8);
  REQUIRE(d->codes.size() == 1);
  CHECK(d->codes[0].end == 12);
}

TEST_CASE("add_noqa_edits keeps a noqa's words after its codes") {
  const std::string loader = "DataLoader(ds, batch_size=8)";
  SourceFile f("t.py", "from torch.utils.data import DataLoader\n"
                       "a = " + loader + "  # noqa: E501 long is fine\n"
                       "b = " + loader + "  # noqa: tiny data\n"
                       "c = " + loader + "  # noqa: DDP101 tiny data\n"
                       "d = " + loader + "\n");
  auto r = lint(f, rules::all(), RuleSelection{});
  std::vector<Edit> edits = add_noqa_edits(f, r.diagnostics);
  REQUIRE(edits.size() == 3);
  std::string text(f.text());
  for (auto it = edits.rbegin(); it != edits.rend(); ++it) text.replace(it->start, it->end - it->start, it->replacement);
  CHECK(text == "from torch.utils.data import DataLoader\n"
                "a = " + loader + "  # noqa: E501, DDP101 long is fine\n"
                "b = " + loader + "  # noqa: DDP101 tiny data\n"
                "c = " + loader + "  # noqa: DDP101 tiny data\n"
                "d = " + loader + "  # noqa: DDP101\n");
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
