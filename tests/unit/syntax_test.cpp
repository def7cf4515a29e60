// too_deeply_indented counts indentation levels as CPython's tokenizer does.
#include <doctest/doctest.h>

#include <string>

#include "linter/source.hpp"
#include "linter/syntax.hpp"

using namespace ddplint;

namespace {

// `levels` nested `if` blocks, each indented by `step` more columns, and a body.
std::string nested(int levels, const std::string& step = " ", const std::string& body = "x = 1") {
  std::string text, indent;
  for (int i = 0; i < levels; ++i, indent += step) text += indent + "if a:\n";
  return text + indent + body + "\n";
}

}  // namespace

TEST_CASE("too_deeply_indented: 99 levels pass, a 100th is refused, as CPython does") {
  CHECK_FALSE(too_deeply_indented(nested(99)));
  CHECK(too_deeply_indented(nested(100)));
  CHECK(too_deeply_indented(nested(600)));
  CHECK_FALSE(too_deeply_indented(nested(99, "\t")));  // a tab is 8 columns, still one level
  CHECK(too_deeply_indented(nested(100, "\t")));
  std::string crlf;
  for (char c : nested(100)) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  CHECK(too_deeply_indented(crlf));
}

TEST_CASE("too_deeply_indented: lines inside brackets, strings and continuations are no levels") {
  // 150 lines, each deeper, inside one call's brackets: one logical line
  std::string call = "f(\n";
  for (int i = 1; i <= 150; ++i) call += std::string(static_cast<std::size_t>(i), ' ') + "1,\n";
  CHECK_FALSE(too_deeply_indented(call + ")\n"));
  // ... inside a triple-quoted string (with an escaped quote and a bracket in it)
  std::string doc = "s = '''\\'''(\n";
  for (int i = 1; i <= 150; ++i) doc += std::string(static_cast<std::size_t>(i), ' ') + "text\n";
  CHECK_FALSE(too_deeply_indented(doc + "'''\nx = 1\n"));
  // ... after a backslash continuation each
  std::string cont = "x = 1 \\\n";
  for (int i = 1; i <= 150; ++i) cont += std::string(static_cast<std::size_t>(i), ' ') + "+ 1 \\\n";
  CHECK_FALSE(too_deeply_indented(cont + "+ 1\n"));
  // ... comment-only and blank lines, and brackets in comments and strings do not open a logical line
  std::string comments = "x = 1  # (\ny = ')'\n";
  for (int i = 1; i <= 150; ++i) comments += std::string(static_cast<std::size_t>(i), ' ') + "# note\n\n";
  CHECK_FALSE(too_deeply_indented(comments));
  // a closing bracket in a comment does not hide the blocks after it
  CHECK(too_deeply_indented("x = (  # )\n  1)\n" + nested(100)));
}

TEST_CASE("too_deeply_indented: lone CR line breaks, an unclosed bracket, f-string fields over lines") {
  // old Mac line endings: the line starts are found after each \r too
  std::string cr;
  for (char c : nested(520)) cr += c == '\n' ? '\r' : c;
  CHECK(too_deeply_indented(cr));
  // an unclosed bracket hides the blocks from CPython's count, not from the
  // parser's error recovery: refused past 400 levels counted at every line
  CHECK(too_deeply_indented("x = (\n" + nested(520)));
  CHECK_FALSE(too_deeply_indented("x = (\n" + nested(300)));
  // Python 3.12: a replacement field spans lines and holds strings in the same quotes
  std::string field = "x = f\"{\n";
  for (int i = 1; i <= 150; ++i) field += std::string(static_cast<std::size_t>(i), ' ') + "1 +\n";
  CHECK_FALSE(too_deeply_indented(field + "1}\"\n"));
  CHECK(too_deeply_indented("x = f\"{\"(\" }\"\n" + nested(150)));
  // a name that ends in f before a string is no f-string prefix
  CHECK(too_deeply_indented("x = elif\"{\"\n" + nested(150)));
}

TEST_CASE("parse_python refuses a too deeply indented text (tree-sitter-python crashed past 512 levels)") {
  SourceFile deep("deep.py", "import torch\n" + nested(520, " ", "torch.save(m, 'x.pt')"));
  CHECK_FALSE(parse_python(deep));
  SourceFile ok("ok.py", "import torch\n" + nested(99, " ", "torch.save(m, 'x.pt')"));
  CHECK(parse_python(ok));
}
