#include "lsp/transport.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace ddplint::lsp {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}
}  // namespace

bool MessageReader::fill() {
  if (eof_) return false;
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > 64 * 1024) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[64 * 1024];
  long n = read_(chunk, sizeof chunk);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buf_.append(chunk, static_cast<std::size_t>(n));
  return true;
}

bool MessageReader::read_line(std::string& line, bool& too_long) {
  line.clear();
  too_long = false;
  for (;;) {
    std::size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos) {
      if (!too_long) line.append(buf_, pos_, nl - pos_);
      pos_ = nl + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.size() > kMaxHeaderLine) too_long = true;
      return true;
    }
    // no line end yet: keep at most kMaxHeaderLine bytes of it
    if (!too_long) {
      line.append(buf_, pos_, buf_.size() - pos_);
      if (line.size() > kMaxHeaderLine) {
        too_long = true;
        line.clear();
      }
    }
    pos_ = buf_.size();
    if (!fill()) return false;
  }
}

MessageReader::Result MessageReader::next() {
  for (;;) {
    // header block
    std::string line, problem;
    bool too_long = false, any = false;
    long long length = -1;
    for (;;) {
      if (!read_line(line, too_long)) return Result{Result::Kind::Eof, {}, {}};
      if (too_long) {
        problem = "header line longer than " + std::to_string(kMaxHeaderLine) + " bytes";
        any = true;
        continue;
      }
      if (line.empty()) {
        if (!any) continue;  // blank lines between messages are tolerated
        break;
      }
      any = true;
      std::size_t colon = line.find(':');
      if (colon == std::string::npos) {
        if (problem.empty()) problem = "malformed header line (no ':')";
        continue;
      }
      std::string_view name = trim(std::string_view(line).substr(0, colon));
      std::string_view value = trim(std::string_view(line).substr(colon + 1));
      if (iequals(name, "Content-Length")) {
        long long v = -1;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || v < 0) {
          if (problem.empty()) problem = "Content-Length is not a number: '" + std::string(value.substr(0, 40)) + "'";
          v = -1;
        }
        length = v;
      }
    }
    if (length < 0) {
      return Result{Result::Kind::BadFrame, {}, problem.empty() ? "header block without Content-Length" : problem};
    }
    auto n = static_cast<std::size_t>(length);
    if (n > max_body_) {
      // skip the body without keeping it
      std::size_t left = n;
      while (left > 0) {
        if (pos_ == buf_.size() && !fill()) return Result{Result::Kind::Eof, {}, {}};
        std::size_t take = std::min(left, buf_.size() - pos_);
        pos_ += take;
        left -= take;
      }
      return Result{Result::Kind::TooLarge, {},
                    "message of " + std::to_string(n) + " bytes is larger than the limit of " +
                        std::to_string(max_body_) + " bytes"};
    }
    std::string body;
    body.reserve(n);
    while (body.size() < n) {
      if (pos_ == buf_.size() && !fill()) return Result{Result::Kind::Eof, {}, {}};
      std::size_t take = std::min(n - body.size(), buf_.size() - pos_);
      body.append(buf_, pos_, take);
      pos_ += take;
    }
    return Result{Result::Kind::Message, std::move(body), {}};
  }
}

std::string frame_message(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

MessageReader::ReadFn fd_reader(int fd) {
  return [fd](char* buf, std::size_t n) -> long {
    for (;;) {
      ssize_t r = ::read(fd, buf, n);
      if (r < 0 && errno == EINTR) continue;
      return static_cast<long>(r);
    }
  };
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t w = ::write(fd, data.data(), data.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(w));
  }
  return true;
}

}  // namespace ddplint::lsp
