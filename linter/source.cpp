#include "linter/source.hpp"

#include <string.h>  // memmem

#if defined(__SSE2__)
#include <emmintrin.h>
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace ddplint {

namespace {
// How common a byte is in Python source, roughly (0 rarest .. 9 most common):
// upper-case letters, digits and most punctuation are rare; blanks, lower-case
// vowels and common consonants are frequent.
constexpr int byte_commonness_of(unsigned char c) {
  if (c == ' ' || c == 'e' || c == 't' || c == 'a' || c == 'i' || c == 'o' || c == 'n' || c == 's' || c == 'r')
    return 9;
  if (c == '\n' || c == 'l' || c == 'd' || c == 'c' || c == 'u' || c == 'm' || c == 'p' || c == '_' || c == '.' ||
      c == 'h' || c == '(' || c == ')' || c == ',' || c == '=' || c == 'f')
    return 6;
  if (c >= 'a' && c <= 'z') return 4;
  if (c == '\'' || c == '"' || c == ':' || c == '[' || c == ']' || c == '#') return 3;
  return 1;
}

// byte_commonness_of, looked up (contains_text ranks every byte of each needle)
constexpr std::array<unsigned char, 256> kByteCommonness = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = static_cast<unsigned char>(byte_commonness_of(static_cast<unsigned char>(c)));
  return t;
}();

int byte_commonness(unsigned char c) { return kByteCommonness[c]; }
}  // namespace

namespace {
// contains_text for a needle of common bytes only ("torch", "autocast"),
// where memchr on any one byte would stop too often: compare 16 positions at
// once (SSE2, every x86-64 CPU) or 32 (AVX2, where the CPU has it: checked
// once at run time) against the needle's first and last bytes and check the
// rare positions where both match (the "generic SIMD" substring search,
// http://0x80.pl/articles/simd-strfind.html). On bench/corpus/torch
// (callgrind) SSE2 takes about a third of the instructions of glibc's memmem,
// AVX2 about half of SSE2's for an absent needle, the common case of the
// rules' text tests. Elsewhere, memmem.

// The candidate starts i + k for the set bits k of `mask` (where the needle's
// first and last bytes both match): true if the needle is at one of them.
inline bool match_at_candidates(const char* h, std::size_t i, std::uint32_t mask, std::string_view needle) {
  for (; mask != 0; mask &= mask - 1) {
    std::size_t at = i + static_cast<std::size_t>(__builtin_ctz(mask));
    if (std::memcmp(h + at + 1, needle.data() + 1, needle.size() - 2) == 0) return true;
  }
  return false;
}

// The starts [i, stop) one at a time: the last ones, after the vector loop.
inline bool match_from(const char* h, std::size_t i, std::size_t stop, std::string_view needle) {
  for (; i < stop; ++i)
    if (h[i] == needle[0] && std::memcmp(h + i + 1, needle.data() + 1, needle.size() - 1) == 0) return true;
  return false;
}

#if defined(__x86_64__) && defined(__GNUC__)
// The SSE2 loop below with AVX2 intrinsics. Kept apart rather than one template
// over the vector width: only this function may be compiled for AVX2 (the
// intrinsics cannot be inlined into code built for the baseline CPU).
[[gnu::target("avx2")]] bool contains_common_text_avx2(std::string_view hay, std::string_view needle) {
  const std::size_t n = needle.size();
  const char* h = hay.data();
  const __m256i first = _mm256_set1_epi8(needle[0]);
  const __m256i last = _mm256_set1_epi8(needle[n - 1]);
  const std::size_t stop = hay.size() - n + 1;  // candidate starts are [0, stop)
  std::size_t i = 0;
  for (; i + 32 <= stop; i += 32) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i + n - 1));
    __m256i both = _mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, last));
    if (match_at_candidates(h, i, static_cast<std::uint32_t>(_mm256_movemask_epi8(both)), needle)) return true;
  }
  return match_from(h, i, stop, needle);
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

bool contains_common_text(std::string_view hay, std::string_view needle) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (needle.size() >= 2 && hay.size() >= needle.size() + 31 && have_avx2()) return contains_common_text_avx2(hay, needle);
#endif
#if defined(__SSE2__)
  const std::size_t n = needle.size();
  if (n >= 2 && hay.size() >= n + 15) {
    const char* h = hay.data();
    const __m128i first = _mm_set1_epi8(needle[0]);
    const __m128i last = _mm_set1_epi8(needle[n - 1]);
    const std::size_t stop = hay.size() - n + 1;  // candidate starts are [0, stop)
    std::size_t i = 0;
    for (; i + 16 <= stop; i += 16) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i + n - 1));
      __m128i both = _mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last));
      if (match_at_candidates(h, i, static_cast<std::uint32_t>(_mm_movemask_epi8(both)), needle)) return true;
    }
    return match_from(h, i, stop, needle);
  }
#endif
  return memmem(hay.data(), hay.size(), needle.data(), needle.size()) != nullptr;
}
}  // namespace

bool contains_text(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  if (needle.size() > hay.size()) return false;
  // find the needle's rarest byte with memchr (vectorised), then compare
  std::size_t pick = 0;
  for (std::size_t i = 1; i < needle.size(); ++i) {
    if (byte_commonness(static_cast<unsigned char>(needle[i])) < byte_commonness(static_cast<unsigned char>(needle[pick])))
      pick = i;
  }
  // a needle of common bytes only ("torch", "autocast"): memchr would stop too
  // often; glibc's memmem (two-way with a byte-pair shift table) is faster there
  if (byte_commonness(static_cast<unsigned char>(needle[pick])) >= 4) return contains_common_text(hay, needle);
  const char* begin = hay.data() + pick;
  const char* end = hay.data() + (hay.size() - needle.size() + pick + 1);  // last possible spot of the byte, +1
  for (const char* at = begin; at < end;) {
    const void* hit = memchr(at, needle[pick], static_cast<std::size_t>(end - at));
    if (hit == nullptr) return false;
    const char* p = static_cast<const char*>(hit);
    if (std::memcmp(p - pick, needle.data(), needle.size()) == 0) return true;
    at = p + 1;
  }
  return false;
}

namespace {

// Length of the UTF-8 sequence starting with lead byte `c`, or 0 if invalid lead.
int utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}
}  // namespace

LineIndex::LineIndex(std::string_view text) : text_(text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") bom_ = 3;
  starts_.reserve(text.size() / 32 + 1);
  starts_.push_back(0);
  if (std::memchr(text.data(), '\r', text.size()) == nullptr) {
    // \n only (nearly every file): memchr from line to line, not a test per byte
    const char* begin = text.data();
    const char* end = begin + text.size();
    for (const char* p = begin; (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p))));) {
      ++p;
      starts_.push_back(static_cast<std::uint32_t>(p - begin));
    }
    return;
  }
  for (std::uint32_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      starts_.push_back(i + 1);
    } else if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
      starts_.push_back(i + 1);
    }
  }
}

std::uint32_t LineIndex::line_of(std::uint32_t offset) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  return static_cast<std::uint32_t>(it - starts_.begin()) - 1;
}

std::uint32_t LineIndex::line_end(std::uint32_t line) const {
  std::uint32_t end = line + 1 < starts_.size() ? starts_[line + 1]
                                                 : static_cast<std::uint32_t>(text_.size());
  while (end > starts_[line] && (text_[end - 1] == '\n' || text_[end - 1] == '\r')) --end;
  return end;
}

Position LineIndex::position(std::uint32_t offset) const {
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
  std::uint32_t line = line_of(offset);
  std::uint32_t column = 1;
  std::uint32_t from = line == 0 ? std::min(bom_, offset) : starts_[line];
  // findings come sorted: go on from the previous position on the same line
  // (50,000 findings on one line were quadratic; found by hostile testing)
  if (memo_line_ == line && memo_offset_ <= offset && memo_offset_ >= from) {
    from = memo_offset_;
    column = memo_column_;
  }
  for (std::uint32_t i = from; i < offset; ++i) {
    if (!is_utf8_continuation(static_cast<unsigned char>(text_[i]))) ++column;
  }
  memo_line_ = line;
  memo_offset_ = offset;
  memo_column_ = column;
  return {line + 1, column};
}

std::uint32_t LineIndex::utf16_column(std::uint32_t offset) const {
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
  std::uint32_t line = line_of(offset);
  std::uint32_t units = 0;
  for (std::uint32_t i = line == 0 ? std::min(bom_, offset) : starts_[line]; i < offset; ++i) {
    auto c = static_cast<unsigned char>(text_[i]);
    if (is_utf8_continuation(c)) continue;
    units += (c >= 0xF0) ? 2 : 1;  // astral-plane code points are surrogate pairs
  }
  return units;
}

SourceFile::SourceFile(std::string path, std::string bytes)
    : path_(std::move(path)), bytes_(std::move(bytes)) {
  if (bytes_.size() >= 3 && static_cast<unsigned char>(bytes_[0]) == 0xEF &&
      static_cast<unsigned char>(bytes_[1]) == 0xBB && static_cast<unsigned char>(bytes_[2]) == 0xBF) {
    bom_ = 3;
  }
}

std::size_t estimated_tokens(std::string_view text) {
  // 0 blank, 1 identifier or number character, 2 anything else (an operator, a
  // bracket, a quote, a non-ASCII byte counts with the word it is in: 1)
  static constexpr std::array<unsigned char, 256> kind = [] {
    std::array<unsigned char, 256> k{};
    for (int c = 0; c < 256; ++c) {
      if (c == ' ' || c == '\t' || c == '\f' || c == '\r') k[c] = 0;
      else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80)
        k[c] = 1;
      else k[c] = 2;  // includes '\n'
    }
    return k;
  }();
  std::size_t tokens = 0;
  unsigned char prev = 0;
  for (unsigned char c : text) {
    unsigned char k = kind[c];
    tokens += (k == 2) | (k == 1 && prev != 1);
    prev = k;
  }
  return tokens;
}

DecodeError SourceFile::check_decodable(std::string* detail) const {
  if (bytes_.size() > kMaxSourceBytes) {
    if (detail) *detail = "file is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB";
    return DecodeError::TooLarge;
  }
  if (const void* nul = std::memchr(bytes_.data(), '\0', bytes_.size())) {
    if (detail) {
      auto off = static_cast<std::uint32_t>(static_cast<const char*>(nul) - bytes_.data());
      *detail = "binary file (NUL byte at line " + std::to_string(lines().position(off).row) + ")";
    }
    return DecodeError::Binary;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data());
  std::size_t n = bytes_.size();
  for (std::size_t i = 0; i < n;) {
    // ASCII runs (nearly all of a Python file) 8 bytes at a time
    while (i + 8 <= n) {
      std::uint64_t word;
      std::memcpy(&word, p + i, 8);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char c = p[i];
    if (c < 0x80) { ++i; continue; }
    int len = utf8_length(c);
    bool ok = len > 0 && i + len <= n;
    for (int k = 1; ok && k < len; ++k) ok = is_utf8_continuation(p[i + k]);
    if (ok && len == 3) {  // reject overlong forms and UTF-16 surrogates
      if (c == 0xE0 && p[i + 1] < 0xA0) ok = false;
      if (c == 0xED && p[i + 1] >= 0xA0) ok = false;
    }
    if (ok && len == 4) {
      if (c == 0xF0 && p[i + 1] < 0x90) ok = false;
      if (c == 0xF4 && p[i + 1] >= 0x90) ok = false;
    }
    if (!ok) {
      if (detail) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", c);
        *detail = std::string("not valid UTF-8 (byte ") + hex + " at line " +
                  std::to_string(lines().position(static_cast<std::uint32_t>(i)).row) + ")";
      }
      return DecodeError::InvalidUtf8;
    }
    i += len;
  }
  if (bytes_.size() > kTokenCheckBytes) {
    std::size_t tokens = estimated_tokens(bytes_);
    if (tokens > kMaxParseTokens) {
      if (detail)
        *detail = "file has about " + std::to_string(tokens / 1'000'000) +
                  " million tokens: more than the 8 million that can be parsed within about 2 GB of memory";
      return DecodeError::TooLarge;
    }
  }
  return DecodeError::None;
}

std::optional<std::string> read_stream(std::FILE* f, std::string& error) {
  std::string data;
  char buf[65536];
  for (;;) {
    std::size_t got = std::fread(buf, 1, sizeof buf, f);
    data.append(buf, got);
    if (data.size() > kMaxSourceBytes) {
      error = "input is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB";
      return std::nullopt;
    }
    if (got < sizeof buf) {
      if (std::ferror(f)) {
        error = std::strerror(errno ? errno : EIO);
        return std::nullopt;
      }
      return data;
    }
  }
}

std::optional<std::string> read_file(const std::string& path, std::string& error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  // FIFOs, devices and sockets can block or never end: only regular files are read
  if (S_ISDIR(st.st_mode)) {
    error = "is a directory";
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "not a regular file";
    return std::nullopt;
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxSourceBytes) {
    error = "file is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB";
    return std::nullopt;
  }
  // the path may have been replaced since the stat (a FIFO swapped in would
  // block an ordinary open and read): open without blocking, check what was
  // opened, and only then read it as usual
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
    error = S_ISDIR(opened.st_mode) ? "is a directory" : "not a regular file";
    ::close(fd);
    return std::nullopt;
  }
  int flags = ::fcntl(fd, F_GETFL);
  std::FILE* f = flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ? nullptr : ::fdopen(fd, "rb");
  if (!f) {
    error = std::strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  errno = 0;
  auto data = read_stream(f, error);
  std::fclose(f);
  return data;
}

namespace {
// Copies the extended attributes of the file at `from` onto `to_fd`. A file
// system without them (ENOTSUP) has nothing to copy.
bool copy_xattrs(const std::string& from, int to_fd, std::string& error) {
  ssize_t size = ::listxattr(from.c_str(), nullptr, 0);
  if (size < 0) {
    if (errno == ENOTSUP) return true;
    error = std::string("cannot read extended attributes: ") + std::strerror(errno);
    return false;
  }
  std::string names(static_cast<std::size_t>(size), '\0');
  size = ::listxattr(from.c_str(), names.data(), names.size());
  if (size < 0) {
    error = std::string("cannot read extended attributes: ") + std::strerror(errno);
    return false;
  }
  names.resize(static_cast<std::size_t>(size));
  for (std::size_t at = 0; at < names.size();) {
    const char* name = names.c_str() + at;
    at += std::strlen(name) + 1;
    ssize_t n = ::getxattr(from.c_str(), name, nullptr, 0);
    if (n < 0) continue;  // removed meanwhile
    std::string value(static_cast<std::size_t>(n), '\0');
    n = ::getxattr(from.c_str(), name, value.data(), value.size());
    if (n < 0) continue;
    if (::fsetxattr(to_fd, name, value.data(), static_cast<std::size_t>(n), 0) != 0) {
      error = std::string("cannot keep the extended attribute ") + name + ": " + std::strerror(errno) + "; not written";
      return false;
    }
  }
  return true;
}
}  // namespace

bool write_file_atomically(const std::string& path, std::string_view expected, std::string_view text,
                           std::string& error) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    error = std::strerror(errno);
    return false;
  }
  std::string target = resolved;
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    error = std::strerror(errno);
    return false;
  }
  // replacing the file through a new one would succeed even where the file
  // itself may not be written: honour its permissions (root included)
  if ((st.st_mode & 0222) == 0 || ::access(target.c_str(), W_OK) != 0) {
    error = "the file is read-only; not written";
    return false;
  }
  // a new file renamed over the original would leave the other names of a
  // hard-linked file with the old text (found by hostile testing)
  if (st.st_nlink > 1) {
    error = "the file has " + std::to_string(st.st_nlink) + " hard links, which replacing it would split; not written";
    return false;
  }
  std::string folder = target.substr(0, target.rfind('/') + 1);
  std::string base = target.substr(target.rfind('/') + 1);
  std::string tmp = folder + "." + base + ".ddplint-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    error = std::string("cannot create a temporary file beside it: ") + std::strerror(errno);
    return false;
  }
  auto fail = [&](const std::string& why) {
    ::close(fd);
    ::unlink(tmp.c_str());
    error = why;
    return false;
  };
  std::string_view rest = text;
  while (!rest.empty()) {
    ssize_t w = ::write(fd, rest.data(), rest.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail(std::string("cannot write: ") + std::strerror(errno));
    }
    rest.remove_prefix(static_cast<std::size_t>(w));
  }
  // the replacement keeps the original's owner, group, permission bits and
  // extended attributes (POSIX ACLs among them)
  if (::fchown(fd, st.st_uid, st.st_gid) != 0) {
    struct stat now_st {};
    if (::fstat(fd, &now_st) != 0 || now_st.st_uid != st.st_uid || now_st.st_gid != st.st_gid)
      return fail("cannot keep the file's owner and group; not written");
  }
  if (::fchmod(fd, st.st_mode & 07777) != 0) return fail(std::string("cannot set permissions: ") + std::strerror(errno));
  if (!copy_xattrs(target, fd, error)) return fail(error);
  if (::fsync(fd) != 0) return fail(std::string("cannot write: ") + std::strerror(errno));
  // the file must be what was linted: someone may have saved it meanwhile
  std::string now_error;
  std::optional<std::string> now = read_file(target, now_error);
  if (!now || *now != expected) return fail("the file changed while it was being fixed; not written");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    error = std::string("cannot write: ") + std::strerror(errno);
    return false;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    error = std::string("cannot replace the file: ") + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace ddplint
