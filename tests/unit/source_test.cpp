#include <random>
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

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

TEST_CASE("LineIndex: the same lines with \\n only (memchr from line to line) as with the general scan") {
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 200, 'x');
    for (char& c : text) c = "ab \n"[rng() % 4];
    LineIndex fast(text);  // no \r: the memchr path
    std::string with_cr = text + "\r";  // one \r at the end: the general path, the same lines before it
    LineIndex general(with_cr);
    REQUIRE(general.line_count() == fast.line_count() + 1);
    for (std::uint32_t l = 0; l < fast.line_count(); ++l) {
      CHECK(fast.line_start(l) == general.line_start(l));
      CHECK(fast.line_end(l) == general.line_end(l));
    }
    for (std::uint32_t off = 0; off <= text.size(); ++off) CHECK(fast.line_of(off) == general.line_of(off));
  }
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

TEST_CASE("write_file_atomically: replaces, keeps the mode; refuses a file changed since it was read") {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ddplint-write-XXXXXX").string();
  std::filesystem::path dir = ::mkdtemp(tmpl.data());
  std::string path = (dir / "t.py").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("old\n", f);
    std::fclose(f);
  }
  ::chmod(path.c_str(), 0604);
  std::string error;
  CHECK(write_file_atomically(path, "old\n", "new\n", error));
  CHECK(read_file(path, error).value_or("") == "new\n");
  struct stat st {};
  ::stat(path.c_str(), &st);
  CHECK((st.st_mode & 0777) == 0604);
  // someone saved the file after it was linted: not overwritten
  CHECK_FALSE(write_file_atomically(path, "old\n", "newer\n", error));
  CHECK(error.find("changed while it was being fixed") != std::string::npos);
  CHECK(read_file(path, error).value_or("") == "new\n");
  CHECK_FALSE(write_file_atomically((dir / "missing.py").string(), "", "x", error));
  std::size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) entries += e.is_regular_file() ? 1 : 0;
  CHECK(entries == 1);  // no temporary file left
  std::filesystem::remove_all(dir);
}

TEST_CASE("check_decodable finds a bad byte at any offset, around its 8-byte ASCII fast path") {
  for (std::size_t at = 0; at < 24; ++at) {
    CAPTURE(at);
    std::string text(24, 'x');
    text[at] = '\xff';
    SourceFile bad("bad.py", text);
    CHECK(bad.check_decodable() == DecodeError::InvalidUtf8);
    std::string good(24, 'x');
    good.replace(at, 1, "\xc3\xa9");  // é, valid two-byte UTF-8 at every alignment
    CHECK(SourceFile("good.py", good).check_decodable() == DecodeError::None);
    std::string cut = std::string(at, 'x') + "\xc3";  // truncated sequence at the end
    CHECK(SourceFile("cut.py", cut).check_decodable() == DecodeError::InvalidUtf8);
  }
}

TEST_CASE("contains_text agrees with std::string_view::find on edges and random text") {
  CHECK(contains_text("abc", ""));
  CHECK(contains_text("", "") );
  CHECK_FALSE(contains_text("", "a"));
  CHECK_FALSE(contains_text("NCC", "NCCL"));
  CHECK(contains_text("NCCL", "NCCL"));
  CHECK(contains_text("x = os.environ['NCCL_P2P_DISABLE']", "NCCL"));
  CHECK(contains_text("autocast", "autocast"));
  CHECK(contains_text("..autocast", "autocast"));
  CHECK_FALSE(contains_text("autocas", "autocast"));
  CHECK(contains_text("environ[\"LOCAL_RANK\"]", "environ[\"LOCAL_RANK\"]"));
  CHECK(contains_text("aaaaab", "aab"));  // overlapping partial matches
  std::mt19937 rng(11);
  // random texts up to max_hay bytes and needles up to max_needle bytes drawn
  // from `hay_bytes` and `needle_bytes`, the needle planted in a third of them
  auto compare_with_find = [&](std::string_view hay_bytes, std::string_view needle_bytes, std::size_t max_hay,
                               std::size_t max_needle) {
    for (int i = 0; i < 20000; ++i) {
      std::string hay(rng() % max_hay, ' '), needle(1 + rng() % max_needle, ' ');
      for (char& c : hay) c = hay_bytes[rng() % hay_bytes.size()];
      for (char& c : needle) c = needle_bytes[rng() % needle_bytes.size()];
      if (rng() % 3 == 0 && hay.size() >= needle.size()) {  // plant it, often at the very start or end
        std::size_t at = rng() % 2 ? (rng() % 2 ? 0 : hay.size() - needle.size()) : rng() % (hay.size() - needle.size() + 1);
        hay.replace(at, needle.size(), needle);
      }
      bool expected = std::string_view(hay).find(needle) != std::string_view::npos;
      if (contains_text(hay, needle) != expected) {
        FAIL_CHECK("contains_text(\"" << hay << "\", \"" << needle << "\") should be " << expected);
        return;
      }
    }
  };
  const std::string alphabet = "aN_C(e L.\n'\"=t";
  compare_with_find(alphabet, alphabet, 40, 5);
  // longer texts and needles of common bytes (the vectorised search: 16 starts
  // at a time with SSE2, 32 with AVX2 where the CPU has it, then a tail);
  // needles of few distinct bytes: partial matches abound
  compare_with_find("torchaustepiln_", "torc", 120, 12);
}

TEST_CASE("write_file_atomically: a file changed since it was read is not overwritten, and no temporary is left") {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ddplint-atomic-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::path file = dir / "train.py";
  { std::FILE* f = std::fopen(file.c_str(), "wb"); std::fputs("saved by the editor meanwhile\n", f); std::fclose(f); }
  std::string error;
  CHECK_FALSE(write_file_atomically(file.string(), "what was linted\n", "the fixed text\n", error));
  CHECK(error == "the file changed while it was being fixed; not written");
  std::string why;
  CHECK(*read_file(file.string(), why) == "saved by the editor meanwhile\n");
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.is_regular_file();
  CHECK(entries == 1);
  // the same call with the right expectation writes
  CHECK(write_file_atomically(file.string(), "saved by the editor meanwhile\n", "the fixed text\n", error));
  CHECK(*read_file(file.string(), why) == "the fixed text\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("estimated_tokens over-estimates tokens; files with too many are refused before parsing") {
  CHECK(estimated_tokens("") == 0);
  CHECK(estimated_tokens("x=1\n") == 4);
  CHECK(estimated_tokens("loss = model(batch)  # step\n") == 9);  // loss = model ( batch ) # step \n
  CHECK(estimated_tokens("   \t  ") == 0);
  CHECK(estimated_tokens("\xC3\xA9t\xC3\xA9 = 2") == 3);  // a non-ASCII word is one
  // over kTokenCheckBytes with more than kMaxParseTokens: TooLarge, with the reason
  std::string degenerate = "import torch\n";
  while (degenerate.size() < 9u * 1024u * 1024u) degenerate += "x=1\n";
  SourceFile big("big.py", degenerate);
  std::string why;
  CHECK(big.check_decodable(&why) == DecodeError::TooLarge);
  CHECK(why.find("million tokens") != std::string::npos);
  // the same size of ordinary code passes
  std::string ordinary = "import torch\n";
  while (ordinary.size() < 9u * 1024u * 1024u) ordinary += "    loss = criterion(model(inputs), targets)\n";
  SourceFile fine("fine.py", ordinary);
  CHECK(fine.check_decodable() == DecodeError::None);
}

TEST_CASE("LineIndex::position is the same in any query order (it goes on from the previous answer)") {
  std::string text = "a\xC3\xA9" "b = f(x)  # \xF0\x9F\x98\x80 c\nsecond line\n";
  LineIndex idx(text);
  std::vector<Position> fresh;
  for (std::uint32_t off = 0; off <= text.size(); ++off) fresh.push_back(LineIndex(text).position(off));
  for (std::uint32_t off = 0; off <= text.size(); ++off) CHECK(idx.position(off) == fresh[off]);  // increasing
  for (std::uint32_t off = static_cast<std::uint32_t>(text.size()) + 1; off-- > 0;)
    CHECK(idx.position(off) == fresh[off]);  // decreasing
  for (std::uint32_t off : {20u, 3u, 25u, 1u, 14u}) CHECK(idx.position(off) == fresh[off]);
}
