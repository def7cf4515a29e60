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

TEST_CASE("an opt-in rule runs only when its exact code is selected") {
  CHECK_FALSE(RuleSelection().enabled("DDP603", true));
  CHECK_FALSE(RuleSelection({"ALL"}, {}).enabled("DDP603", true));
  CHECK_FALSE(RuleSelection({"DDP6"}, {}).enabled("DDP603", true));
  CHECK(RuleSelection({"DDP6"}, {}).enabled("DDP601", false));
  CHECK(RuleSelection({"DDP603"}, {}).enabled("DDP603", true));
  CHECK(RuleSelection({"DDP603"}, {"DDP6"}).enabled("DDP603", true));  // the exact code is the more specific
  CHECK_FALSE(RuleSelection({"DDP603"}, {"DDP603"}).enabled("DDP603", true));
  RuleSelection extended;
  extended.add_layer({}, {"DDP603"}, {});
  CHECK(extended.enabled("DDP603", true));
  CHECK(extended.enabled("DDP101", false));
  // a later layer's select that does not name it turns it off again
  extended.add_layer({"DDP1"}, {}, {});
  CHECK_FALSE(extended.enabled("DDP603", true));
  // the catalog's opt-in rules are off by default, every other rule on
  int opt_in = 0;
  for (const Rule& r : rules::all()) {
    CHECK(RuleSelection().enabled(r.info) == !r.info.opt_in);
    opt_in += r.info.opt_in;
  }
  CHECK(opt_in > 0);
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
