#include <doctest/doctest.h>

#include "linter/source.hpp"

using namespace ddplint;

TEST_CASE("LineIndex maps byte offsets to 1-based rows and code-point columns") {
  std::string text = "ab\ncd\r\nef\rg";
  LineIndex idx(text);
  CHECK(idx.line_count() == 4);
  CHECK(idx.position(0) == Position{1, 1});
  CHECK(idx.position(1) == Position{1, 2});
  CHECK(idx.position(3) == Position{2, 1});
  CHECK(idx.position(7) == Position{3, 1});  // after \r\n
  CHECK(idx.position(10) == Position{4, 1});  // after lone \r
  CHECK(idx.line_end(1) == 5);               // excludes \r\n
}

TEST_CASE("columns count code points, tabs as one, and UTF-16 units for LSP") {
  std::string text = "\tx = \"é😀\"; y";
  LineIndex idx(text);
  std::uint32_t y = static_cast<std::uint32_t>(text.find('y'));
  // tab, x, space, =, space, ", é, 😀, ", ;, space -> y is the 12th code point
  CHECK(idx.position(y).column == 12);
  CHECK(idx.utf16_column(y) == 12);  // 😀 is two UTF-16 units: 11 code points before y -> 12 units
}

TEST_CASE("decode checks: binary, invalid UTF-8, BOM") {
  std::string detail;
  CHECK(SourceFile("a.py", std::string("x = 1\n\0", 7)).check_decodable(&detail) == DecodeError::Binary);
  CHECK(detail.find("NUL") != std::string::npos);
  CHECK(SourceFile("a.py", "x = 1\ny = '\xff'\n").check_decodable(&detail) == DecodeError::InvalidUtf8);
  CHECK(detail.find("line 2") != std::string::npos);
  CHECK(SourceFile("a.py", "x = '\xed\xa0\x80'\n").check_decodable() == DecodeError::InvalidUtf8);  // surrogate
  CHECK(SourceFile("a.py", "x = '\xc0\xaf'\n").check_decodable() == DecodeError::InvalidUtf8);      // overlong
  SourceFile bom("a.py", "\xEF\xBB\xBFx = 1\n");
  CHECK(bom.bom_length() == 3);
  CHECK(bom.check_decodable() == DecodeError::None);
  CHECK(SourceFile("a.py", "").check_decodable() == DecodeError::None);
}
