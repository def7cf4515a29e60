// The LSP base protocol: messages framed by a `Content-Length` header.
// https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#baseProtocol
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace ddplint::lsp {

/// Largest message body the server reads, in bytes (64 MiB). A larger one is
/// skipped without being held in memory. A 5 MB buffer is well inside this.
inline constexpr std::size_t kMaxMessageBytes = 64u * 1024u * 1024u;

/// Longest header line kept, in bytes; a longer one is a framing error.
inline constexpr std::size_t kMaxHeaderLine = 8 * 1024;

/// Reads framed messages from a byte source. Headers end at an empty line;
/// lines may end with CRLF (the spec) or LF alone. Only `Content-Length` is
/// used; `Content-Type` and other headers are ignored.
class MessageReader {
 public:
  /// Reads up to `n` bytes into `buf`: the count read, 0 at end of input, or
  /// a negative value on a read error (treated as end of input).
  using ReadFn = std::function<long(char* buf, std::size_t n)>;

  explicit MessageReader(ReadFn read, std::size_t max_body = kMaxMessageBytes)
      : read_(std::move(read)), max_body_(max_body) {}

  struct Result {
    enum class Kind {
      Message,   ///< `body` holds one message body
      Eof,       ///< input ended (possibly inside a message, which is dropped)
      BadFrame,  ///< a header block without a valid Content-Length; `error` says why
      TooLarge,  ///< Content-Length above the limit; the body was skipped
    };
    Kind kind = Kind::Eof;
    std::string body;
    std::string error;
  };

  /// The next message or framing problem. After BadFrame or TooLarge the
  /// reader has consumed that header block (and body) and can go on.
  Result next();

 private:
  bool fill();  // reads more bytes into buf_; false at end of input
  // one header line without its terminator; false at end of input
  bool read_line(std::string& line, bool& too_long);

  ReadFn read_;
  std::size_t max_body_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool eof_ = false;
};

/// Frames `body` as one message: `Content-Length: N\r\n\r\n` then the body.
std::string frame_message(std::string_view body);

/// A MessageReader::ReadFn over a POSIX file descriptor (retries on EINTR).
MessageReader::ReadFn fd_reader(int fd);

/// Writes all of `data` to file descriptor `fd` (retries on EINTR and short
/// writes). False on error (EPIPE when the client has gone).
bool write_all(int fd, std::string_view data);

}  // namespace ddplint::lsp
