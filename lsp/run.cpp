// The stdio loop of `ddplint server`: a reader thread decodes messages into a
// queue; the main thread handles them in order, coalesces changes that are
// already queued, and lints a buffer only when no newer change to it waits.
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "lsp/server.hpp"
#include "lsp/transport.hpp"

namespace ddplint::lsp {

namespace {

// One decoded input item.
struct Incoming {
  enum class Kind { Message, Unparsable, Eof } kind = Kind::Eof;
  json message;
  std::string error;
  std::size_t size = 0;  ///< bytes of the body it came from
};

// Shared between the reader thread and the main loop (owned by both: the
// reader may still be blocked in read() when the loop returns).
struct Queue {
  std::mutex mutex;
  std::condition_variable ready, room;
  std::deque<Incoming> items;
  std::size_t bytes = 0;  ///< body bytes of the queued messages
  static constexpr std::size_t kCapacity = 4096;  // bounds memory when the client floods
};

// Bytes of queued message bodies the reader may hold before it stops reading
// (a client that does not read our output cannot make us buffer without end).
constexpr std::size_t kMaxQueuedBytes = 256u * 1024u * 1024u;

void log_line(const std::string& line) {
  std::string out = "ddplint server: " + line + "\n";
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

void reader_loop(const std::shared_ptr<Queue>& queue, int in_fd) {
  MessageReader reader(fd_reader(in_fd));
  for (;;) {
    MessageReader::Result r = reader.next();
    Incoming item;
    std::size_t size = r.body.size();
    switch (r.kind) {
      case MessageReader::Result::Kind::Message:
        try {
          item.message = json::parse(r.body);
          item.kind = Incoming::Kind::Message;
        } catch (const json::exception& e) {
          item.kind = Incoming::Kind::Unparsable;
          item.error = e.what();
        }
        break;
      case MessageReader::Result::Kind::BadFrame:
      case MessageReader::Result::Kind::TooLarge:
        log_line("framing: " + r.error);
        continue;  // the header gives no id to answer; the spec leaves it to the server
      case MessageReader::Result::Kind::Eof:
        item.kind = Incoming::Kind::Eof;
        break;
    }
    bool eof = item.kind == Incoming::Kind::Eof;
    {
      std::unique_lock lock(queue->mutex);
      queue->room.wait(lock, [&] {
        return queue->items.size() < Queue::kCapacity && (queue->items.empty() || queue->bytes + size <= kMaxQueuedBytes);
      });
      queue->bytes += size;
      item.size = size;
      queue->items.push_back(std::move(item));
    }
    queue->ready.notify_one();
    if (eof) return;
  }
}

// The string member `key` of a JSON object, or "" (never throws, whatever the types).
std::string string_member(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool is_change_for(const Incoming& item, const std::string& uri) {
  if (item.kind != Incoming::Kind::Message || string_member(item.message, "method") != "textDocument/didChange")
    return false;
  auto p = item.message.find("params");
  if (p == item.message.end() || !p->is_object()) return false;
  auto td = p->find("textDocument");
  return td != p->end() && string_member(*td, "uri") == uri;
}


}  // namespace

int run_server(std::span<const Rule> rules, int in_fd, int out_fd) {
  ::signal(SIGPIPE, SIG_IGN);  // a client that went away is a write error, not a signal
  bool output_ok = true;
  auto send = [&](const json& message) {
    if (!output_ok) return;
    std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
    if (!write_all(out_fd, frame_message(body))) {
      output_ok = false;
      log_line("cannot write to the client; stopping");
    }
  };
  Server server(rules, send, log_line);
  auto queue = std::make_shared<Queue>();
  std::thread reader([queue, in_fd] { reader_loop(queue, in_fd); });
  reader.detach();  // it may stay blocked in read() after exit; the process ends it
  log_line(std::string("started (ddplint ") + DDPLINT_VERSION + ")");

  for (;;) {
    std::deque<Incoming> batch;
    {
      std::unique_lock lock(queue->mutex);
      auto due = server.next_due();
      auto has_work = [&] { return !queue->items.empty(); };
      if (server.has_pending()) queue->ready.wait_until(lock, due, has_work);
      else queue->ready.wait(lock, has_work);
      batch.swap(queue->items);
      queue->bytes = 0;
    }
    queue->room.notify_all();
    // cancellations first: a request queued behind its $/cancelRequest is answered RequestCancelled
    for (const Incoming& item : batch) {
      if (item.kind == Incoming::Kind::Message && string_member(item.message, "method") == "$/cancelRequest") {
        auto p = item.message.find("params");
        if (p != item.message.end() && p->is_object() && p->contains("id")) server.cancel(p->at("id"));
      }
    }
    bool eof = false;
    for (const Incoming& item : batch) {
      try {
        switch (item.kind) {
          case Incoming::Kind::Message: server.handle(item.message); break;
          case Incoming::Kind::Unparsable: server.handle_unparsable(item.error); break;
          case Incoming::Kind::Eof: eof = true; break;
        }
      } catch (const std::exception& e) {  // one bad message never stops the server
        log_line(std::string("message dropped: internal error: ") + e.what());
      }
      if (server.exit_requested()) {
        log_line(std::string("exit") + (server.exit_code() == 0 ? "" : " without shutdown"));
        return server.exit_code();
      }
      if (eof) break;
    }
    server.clear_cancellations();
    if (eof) {
      log_line("the client closed the input; exiting");
      return server.exit_code();
    }
    if (!output_ok) return 1;
    if (server.has_pending()) {
      // skip buffers whose newer change is already queued: their lint would be stale
      try {
        server.publish_due(std::chrono::steady_clock::now(), [&](const std::string& uri) {
          std::lock_guard lock(queue->mutex);
          for (const Incoming& item : queue->items)
            if (is_change_for(item, uri)) return true;
          return false;
        });
      } catch (const std::exception& e) {
        log_line(std::string("publishing failed: ") + e.what());
      }
    }
  }
}

}  // namespace ddplint::lsp
