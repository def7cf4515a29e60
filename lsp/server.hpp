// ddplint's language server: LSP 3.17 over JSON-RPC, linting editor buffers
// with the same core as the command line.
// https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "linter/config.hpp"
#include "linter/diagnostic.hpp"
#include "linter/project.hpp"
#include "linter/selection.hpp"
#include "lsp/document.hpp"
#include "lsp/notebook.hpp"

namespace ddplint::lsp {

using json = nlohmann::json;

/// JSON-RPC and LSP error codes used in responses.
namespace error_code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerNotInitialized = -32002;
inline constexpr int kRequestCancelled = -32800;
}  // namespace error_code

/// User settings, from `initializationOptions` or
/// `workspace/didChangeConfiguration` (either bare or under a `ddplint` key).
struct Settings {
  std::vector<std::string> select;  ///< `select`: codes or prefixes (array, or a comma-separated string)
  std::vector<std::string> extend_select;  ///< `extendSelect`: added to the selection (enables opt-in rules by code)
  std::vector<std::string> ignore;  ///< `ignore`: codes or prefixes
  std::string config_path;          ///< `configPath`: a ddplint.toml / pyproject.toml to use
  /// `debounceMs`: quiet time after the last change before a buffer is linted
  /// (ms). Default 0: changes already queued are applied together and a lint
  /// whose buffer has a newer change waiting is skipped, so fast typing never
  /// queues stale work without delaying the first result.
  int debounce_ms = 0;
};

/// The server's state machine. Transport-free: `handle` takes one decoded
/// message and answers through the `send` callback, so tests drive it in
/// process. run_server() adds the stdio transport and the debounce loop.
class Server {
 public:
  /// `send` receives each outgoing message (responses, notifications and
  /// server-to-client requests); `log` receives one line for stderr.
  Server(std::span<const Rule> rules, std::function<void(const json&)> send,
         std::function<void(const std::string&)> log);

  /// Handles one incoming JSON-RPC message (request, notification or response).
  void handle(const json& message);
  /// Answers a body that is not JSON (ParseError, id null).
  void handle_unparsable(const std::string& detail);
  /// Marks request `id` cancelled: when it is handled it gets RequestCancelled.
  void cancel(const json& id);
  /// Forgets cancellations of requests already handled.
  void clear_cancellations() { cancelled_.clear(); }

  /// True once `exit` was received; exit_code() is then 0 if `shutdown` came first, else 1.
  bool exit_requested() const { return exit_requested_; }
  int exit_code() const { return shutdown_ ? 0 : 1; }

  /// Buffers changed since their diagnostics were last pushed, or an index
  /// to make again after an edit.
  bool has_pending() const { return !pending_.empty() || index_stale_; }
  /// Idle time after the last edit to a buffer of a file on disk before the
  /// project index is made again (a keystroke is linted at once with the
  /// index as it stands; the buffers whose facts the edit changes follow).
  static constexpr std::chrono::milliseconds kIndexDelay{300};
  /// When the earliest pending buffer is due (its last change + debounce), or
  /// the index (the last edit + kIndexDelay).
  std::chrono::steady_clock::time_point next_due() const;
  /// Lints and pushes diagnostics for each pending buffer that is due at
  /// `now`, except those for which `superseded(uri)` says a newer change is
  /// already waiting (they stay pending).
  void publish_due(std::chrono::steady_clock::time_point now,
                   const std::function<bool(const std::string& uri)>& superseded = {});

  /// The negotiated position encoding (after initialize).
  PositionEncoding encoding() const { return encoding_; }
  /// Active settings.
  const Settings& settings() const { return settings_; }

 private:
  struct ClientCaps {
    bool pull_diagnostics = false;
    bool diagnostic_refresh = false;
    bool document_changes = false;
    bool watched_files_registration = false;
    bool code_action_literals = true;
  };

  void on_request(const json& id, const std::string& method, const json& params);
  void on_notification(const std::string& method, const json& params);
  void reply(const json& id, json result);
  void reply_error(const json& id, int code, const std::string& message);
  void notify(const std::string& method, json params);
  void request(const std::string& method, json params);
  void show_message(int type, const std::string& text);

  json initialize(const json& params);
  void apply_settings(const json& value, bool from_init);
  void reload_configuration();
  /// The rules selected for a buffer and the rule options, from its configuration and the settings.
  std::pair<RuleSelection, RuleOptions> settings_for_document(const Document& doc, bool* excluded = nullptr);
  // True when `config`'s exclude patterns leave out the file at `path` or a folder above it.
  bool excluded_by(const Config& config, const std::string& path) const;
  void relint_all();
  void did_open(const json& params);
  void did_change(const json& params);
  void did_close(const json& params);
  json pull_diagnostics(const json& params);
  /// notebookDocument/didOpen, didChange, didClose (LSP 3.17): the cells of a
  /// Jupyter notebook linted together, diagnostics published per cell.
  void notebook_did_open(const json& params);
  void notebook_did_change(const json& params);
  void notebook_did_close(const json& params);
  /// The diagnostics of each cell of `nb`, by cell URI (every cell, empty where none).
  std::map<std::string, json> notebook_diagnostics(const NotebookDocument& nb);
  /// Pushes notebook_diagnostics (not with pull diagnostics: the client asks per cell).
  void publish_notebook(const NotebookDocument& nb);
  json code_actions(const json& params);
  json hover(const json& params);

  Document* find(const json& text_document);
  const LintResult& lint_of(Document& doc);
  json to_lsp(const Document& doc, const Diagnostic& d) const;
  json range_of(const Document& doc, std::uint32_t start, std::uint32_t end) const;
  json workspace_edit(const Document& doc, const std::vector<Edit>& edits) const;
  void publish(Document& doc);
  void mark_pending(const std::string& uri);
  std::string result_id(const Document& doc) const;
  /// The project facts of the buffer's file (null: none, or not a file on disk);
  /// `keep` holds their project.
  const ProjectFacts* facts_of(const Document& doc, std::shared_ptr<const Project>& keep);
  /// A fresh index whose files read open buffers instead of the disk.
  std::unique_ptr<ProjectSet> new_index();
  /// After an edit: the index again, with the buffers as they are now; every
  /// other open buffer whose facts changed is linted again.
  void refresh_index();

  std::span<const Rule> rules_;
  std::function<void(const json&)> send_;
  std::function<void(const std::string&)> log_;
  bool initialized_ = false, shutdown_ = false, exit_requested_ = false;
  PositionEncoding encoding_ = PositionEncoding::Utf16;
  ClientCaps caps_;
  Settings settings_;
  ConfigResolver configs_;                       ///< closest configuration file of each buffer
  /// The summaries of the projects' files, kept across re-indexing (in
  /// memory, and in each project's .ddplint_cache/ when the server exits): a
  /// re-index parses only the files that changed.
  std::shared_ptr<CacheSet> caches_;
  /// The projects of the buffers' files (linter/project.hpp), their files read
  /// from the open buffers where there is one, else from disk: indexed on
  /// first use and again after an edit to a buffer of a file on disk or a save.
  std::unique_ptr<ProjectSet> projects_;
  bool index_stale_ = false;  ///< a buffer of a file on disk changed since the index was made
  std::chrono::steady_clock::time_point index_due_{};  ///< when to make it again
  /// The facts (fingerprint) each buffer's findings were computed with, by URI.
  std::map<std::string, std::string> linted_facts_;
  std::shared_ptr<const Config> fixed_config_;   ///< from `configPath`, when set
  std::set<std::string> reported_config_errors_; ///< shown once until the files change
  std::uint64_t generation_ = 1;  ///< bumped when settings or configuration files change
  std::vector<std::string> workspace_folders_;
  std::map<std::string, std::unique_ptr<Document>> documents_;
  std::map<std::string, std::unique_ptr<NotebookDocument>> notebooks_;  ///< open notebooks, by notebook URI
  std::map<std::string, std::chrono::steady_clock::time_point> pending_;
  std::set<std::string> cancelled_;  ///< ids (dumped JSON) of cancelled requests
  std::int64_t next_request_id_ = 1;
  std::string docs_uri_;  ///< file:// URI of docs/rules.md, or empty (then the rule's PyTorch page)
};

/// Runs the server on file descriptors (stdin/stdout for `ddplint server`),
/// logging to stderr, until `exit` or the end of input. Returns the process
/// exit code: 0 after `shutdown` then `exit`, 1 otherwise (LSP 3.17, "exit").
int run_server(std::span<const Rule> rules, int in_fd, int out_fd);

/// File system path of a `file://` URI (percent-decoded), or the URI itself
/// for other schemes (`untitled:`).
std::string uri_to_path(std::string_view uri);

}  // namespace ddplint::lsp
