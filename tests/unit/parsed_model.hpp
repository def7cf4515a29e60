// Test helper: a snippet parsed into a SemanticModel, with source, tree and
// model kept alive together, and a lookup of call sites by their text.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "linter/semantic_model.hpp"

namespace ddplint::testing {

struct ParsedModel {
  explicit ParsedModel(std::string src)
      : source("t.py", std::move(src)), tree(parse_python(source)), model(source, tree) {}
  SourceFile source;
  SyntaxTree tree;
  SemanticModel model;

  /// The first call whose text starts with `prefix`; fails the test if none.
  const CallSite& call(std::string_view prefix) const {
    for (const CallSite& c : model.calls())
      if (model.text(c.node).substr(0, prefix.size()) == prefix) return c;
    FAIL("no call starting with " << prefix);
    throw 0;
  }
  /// Argument `kw` (or positional `pos`) of that call.
  TSNode arg(std::string_view call_prefix, std::string_view kw, int pos = -1) const {
    return model.argument(call(call_prefix), kw, pos);
  }
};

}  // namespace ddplint::testing
