// A minimal LSP client for tests and benchmarks: starts `ddplint server` with
// pipes, frames and unframes messages, and waits with timeouts (never hangs).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ddplint::testing {

using json = nlohmann::json;
using namespace std::chrono_literals;

class LspClient {
 public:
  /// Starts `exe args...` with stdin/stdout piped; stderr goes to `stderr_path` (or /dev/null).
  explicit LspClient(const std::string& exe, std::vector<std::string> args = {"server"},
                     const std::string& stderr_path = "/dev/null") {
    ::signal(SIGPIPE, SIG_IGN);
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (err >= 0) ::dup2(err, 2);
      ::close(in[0]);
      ::close(in[1]);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<char*> argv{const_cast<char*>(exe.c_str())};
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::fcntl(in[1], F_SETFL, ::fcntl(in[1], F_GETFL) | O_NONBLOCK);
    to_server_ = in[1];
    from_server_ = out[0];
  }
  LspClient(const LspClient&) = delete;
  LspClient& operator=(const LspClient&) = delete;
  ~LspClient() {
    close_input();
    if (from_server_ >= 0) ::close(from_server_);
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }

  /// Writes raw bytes; false once the server has closed its input. While the
  /// server's input is full, its output is read into the inbox, so that a
  /// server blocked writing to us never deadlocks with us writing to it.
  bool send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
      pollfd p[2] = {{to_server_, POLLOUT, 0}, {from_server_, POLLIN, 0}};
      if (::poll(p, 2, 10000) <= 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (p[1].revents & (POLLIN | POLLHUP)) drain_available();
      if (p[0].revents & (POLLERR | POLLHUP)) return false;
      if (!(p[0].revents & POLLOUT)) continue;
      ssize_t w = ::write(to_server_, bytes.data(), std::min<std::size_t>(bytes.size(), 4096));
      if (w < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return false;
      }
      bytes.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }
  bool send(const json& m) {
    std::string body = m.dump();
    return send_raw("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  void notify(const std::string& method, json params) {
    send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  /// Sends a request and waits for its response (other messages are kept for later).
  std::optional<json> request(const std::string& method, json params, std::chrono::milliseconds timeout = 10s) {
    int id = next_id_++;
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    return wait_for([&](const json& m) { return m.contains("id") && m["id"] == id && !m.contains("method"); }, timeout);
  }

  /// The next message from the server, or nullopt after `timeout` or at its end of output.
  std::optional<json> receive(std::chrono::milliseconds timeout) {
    if (!inbox_.empty()) {
      json m = std::move(inbox_.front());
      inbox_.pop_front();
      return m;
    }
    return read_message(timeout);
  }

  /// Waits for the first message matching `pred`; others are kept in order.
  template <class Pred>
  std::optional<json> wait_for(Pred pred, std::chrono::milliseconds timeout) {
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
      if (pred(*it)) {
        json m = std::move(*it);
        inbox_.erase(it);
        return m;
      }
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      std::optional<json> m = read_message(left);
      if (!m) return std::nullopt;
      if (pred(*m)) return m;
      inbox_.push_back(std::move(*m));
    }
  }
  /// Waits for a notification `method` (for publishDiagnostics: of `uri` if given).
  std::optional<json> wait_notification(const std::string& method, std::chrono::milliseconds timeout = 10s,
                                        const std::string& uri = "") {
    return wait_for(
        [&](const json& m) {
          return m.value("method", "") == method && (uri.empty() || m["params"].value("uri", "") == uri);
        },
        timeout);
  }
  /// Messages received but not yet taken.
  std::deque<json>& inbox() { return inbox_; }

  void close_input() {
    if (to_server_ >= 0) ::close(to_server_);
    to_server_ = -1;
  }
  /// Exit status after the server ends (128+signal if killed), or -1 after `timeout`.
  int wait_exit(std::chrono::milliseconds timeout = 10s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > deadline) return -1;
      // keep draining output so that the server never blocks on a full pipe
      read_message(5ms);
    }
  }
  /// Resident memory of the server in KiB (VmRSS, from /proc), or 0.
  long rss_kib() const { return status_kib("VmRSS"); }
  /// Peak resident memory of the server so far in KiB (VmHWM), or 0.
  long peak_rss_kib() const { return status_kib("VmHWM"); }

 private:
  // One `KEY: N kB` line of /proc/PID/status, in KiB; 0 if absent.
  long status_kib(const std::string& key) const {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/status").c_str(), "r");
    if (!f) return 0;
    char line[256];
    long kib = 0;
    const std::string format = key + ": %ld kB";
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, format.c_str(), &kib) == 1) break;
    std::fclose(f);
    return kib;
  }
  // Reads what the server has written so far into the inbox, without blocking.
  void drain_available() {
    char chunk[65536];
    ssize_t n = ::read(from_server_, chunk, sizeof chunk);
    if (n <= 0) return;
    buf_.append(chunk, static_cast<std::size_t>(n));
    while (auto m = parse_buffered()) inbox_.push_back(std::move(*m));
  }
  std::optional<json> parse_buffered() {
    std::size_t header_end = buf_.find("\r\n\r\n");
    if (header_end == std::string::npos) return std::nullopt;
    std::size_t at = buf_.find("Content-Length:");
    if (at == std::string::npos || at > header_end) std::abort();  // the server must always frame
    std::size_t n = std::stoul(buf_.substr(at + 15, header_end - at - 15));
    if (buf_.size() < header_end + 4 + n) return std::nullopt;
    json m = json::parse(buf_.substr(header_end + 4, n));
    buf_.erase(0, header_end + 4 + n);
    return m;
  }

  std::optional<json> read_message(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto m = parse_buffered()) return m;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) return std::nullopt;
      pollfd p{from_server_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        return std::nullopt;
      }
      char chunk[65536];
      ssize_t n = ::read(from_server_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int to_server_ = -1, from_server_ = -1;
  bool exited_ = false;
  int next_id_ = 1;
  std::string buf_;
  std::deque<json> inbox_;
};

}  // namespace ddplint::testing
