#include <doctest/doctest.h>

#include "linter/selection.hpp"
#include "rules/registry.hpp"

using namespace ddplint;

TEST_CASE("select and ignore by code prefix; the most specific wins, ignore wins ties") {
  RuleSelection all;
  CHECK(all.enabled("DDP101"));
  RuleSelection only4({"DDP4"}, {});
  CHECK(only4.enabled("DDP401"));
  CHECK_FALSE(only4.enabled("DDP101"));
  RuleSelection ign({}, {"DDP1"});
  CHECK_FALSE(ign.enabled("DDP101"));
  CHECK(ign.enabled("DDP201"));
  RuleSelection specific({"DDP101"}, {"DDP1"});
  CHECK(specific.enabled("DDP101"));
  CHECK_FALSE(specific.enabled("DDP102"));
  RuleSelection tie({"DDP101"}, {"DDP101"});
  CHECK_FALSE(tie.enabled("DDP101"));
  RuleSelection every({"ALL"}, {"DDP4"});
  CHECK(every.enabled("DDP001"));
  CHECK_FALSE(every.enabled("DDP401"));
}

TEST_CASE("unknown codes are rejected with the prefix named") {
  RuleSelection bad({"DDP9"}, {});
  auto err = bad.validate(rules::all());
  REQUIRE(err);
  CHECK(err->find("DDP9") != std::string::npos);
  CHECK_FALSE(RuleSelection({"DDP", "ALL"}, {"DDP401"}).validate(rules::all()));
}

TEST_CASE("split_codes trims and drops empty items") {
  CHECK(split_codes(" DDP1, DDP401 ,,") == std::vector<std::string>{"DDP1", "DDP401"});
  CHECK(split_codes("").empty());
}
