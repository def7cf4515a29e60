// libFuzzer harness 2: bytes -> the language server's message framing
// (MessageReader, fed in chunks of varying size) -> JSON parsing ->
// JSON-RPC dispatch (Server::handle: initialize, didOpen/didChange with any
// ranges, code actions, hover, pull diagnostics, shutdown/exit, ...) -> the
// debounced lint and publish. Every outgoing message is serialised as the
// server would write it. Properties: no crash; every outgoing message is a
// JSON-RPC 2.0 object; the server never answers a notification.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lsp/server.hpp"
#include "lsp/transport.hpp"
#include "rules/registry.hpp"
#include "tests/fuzz/fuzz_limits.hpp"

using namespace ddplint;
using namespace ddplint::lsp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  std::size_t pos = 0;
  // chunk sizes vary with the data itself so that headers split anywhere
  MessageReader reader(
      [&](char* buf, std::size_t n) -> long {
        if (pos >= size) return 0;
        std::size_t chunk = 1 + (pos * 31 + size) % 97;
        chunk = std::min({chunk, n, size - pos});
        std::memcpy(buf, data + pos, chunk);
        pos += chunk;
        return static_cast<long>(chunk);
      },
      /*max_body=*/64 * 1024);
  bool handling_notification = false;
  auto send = [&](const json& message) {
    if (handling_notification && message.is_object() && (message.contains("result") || message.contains("error"))) {
      std::fprintf(stderr, "fuzz_lsp: the server answered a notification: %s\n",
                   message.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
      std::abort();
    }
    if (!message.is_object() || !message.contains("jsonrpc")) {
      std::fprintf(stderr, "fuzz_lsp: an outgoing message is not JSON-RPC: %s\n",
                   message.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
      std::abort();
    }
    (void)frame_message(message.dump(-1, ' ', false, json::error_handler_t::replace));
  };
  Server server(rules::all(), send, [](const std::string&) {});
  for (int messages = 0; messages < 200; ++messages) {
    MessageReader::Result r = reader.next();
    if (r.kind == MessageReader::Result::Kind::Eof) break;
    if (r.kind != MessageReader::Result::Kind::Message) continue;
    try {
      json message = json::parse(r.body);
      // a notification: a string method and no id (an invalid message is answered with id null)
      handling_notification = message.is_object() && message.contains("method") && message["method"].is_string() &&
                              !message.contains("id");
      try {
        server.handle(message);
      } catch (const std::exception&) {
        // run_server logs and drops such a message; the server must stay usable
      }
    } catch (const json::exception& e) {
      handling_notification = false;
      server.handle_unparsable(e.what());
    }
    handling_notification = false;
    if (server.exit_requested()) break;
    if (server.has_pending()) server.publish_due(std::chrono::steady_clock::now() + std::chrono::hours(1));
  }
  return 0;
}
