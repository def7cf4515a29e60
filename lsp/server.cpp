#include "lsp/server.hpp"

#include <limits>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "linter/fixes.hpp"
#include "linter/lint_cache.hpp"
#include "linter/output.hpp"
#include "linter/lint.hpp"
#include "linter/suppressions.hpp"

namespace ddplint::lsp {

namespace {

// LSP DiagnosticSeverity: Error 1, Warning 2, Information 3.
int lsp_severity(Severity s) {
  switch (s) {
    case Severity::Error: return 1;
    case Severity::Warning: return 2;
    case Severity::Info: return 3;
  }
  return 2;
}

// `only` filters code actions by kind: a requested kind matches an action kind
// equal to it or nested under it ("source" matches "source.fixAll.ddplint").
bool kind_requested(const json& only, std::string_view kind) {
  if (!only.is_array()) return true;
  for (const json& k : only) {
    if (!k.is_string()) continue;
    const std::string& want = k.get_ref<const std::string&>();
    if (kind == want || (kind.size() > want.size() && kind.substr(0, want.size()) == want && kind[want.size()] == '.'))
      return true;
  }
  return false;
}

std::vector<std::string> string_list(const json& v) {
  std::vector<std::string> out;
  if (v.is_string()) return split_codes(v.get<std::string>());
  if (v.is_array())
    for (const json& item : v)
      if (item.is_string())
        for (auto& c : split_codes(item.get<std::string>())) out.push_back(std::move(c));
  return out;
}

// A list setting given as something other than a string or an array of
// strings (`"select": 5`, `"ignore": [true]`): the key named, else empty.
std::string wrong_list_type(const json& s) {
  for (const char* key : {"select", "extendSelect", "ignore"}) {
    if (!s.contains(key)) continue;
    const json& v = s.at(key);
    if (v.is_null() || v.is_string()) continue;
    if (!v.is_array()) return key;
    for (const json& item : v)
      if (!item.is_string()) return key;
  }
  if (s.contains("configPath") && !s.at("configPath").is_string() && !s.at("configPath").is_null()) return "configPath";
  if (s.contains("debounceMs") && !s.at("debounceMs").is_number() && !s.at("debounceMs").is_null()) return "debounceMs";
  return {};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A request's params lack something it needs: answered with InvalidParams.
struct InvalidParams : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& member(const json& obj, const char* key) {
  static const json null_value;
  if (!obj.is_object()) return null_value;
  auto it = obj.find(key);
  return it == obj.end() ? null_value : *it;
}

// A position's line or character: any JSON number, clamped to 0 .. 2^32-1
// (past the end is then clamped to the document by the caller). Converting a
// double or a larger integer with get<uint32_t>() would be undefined or wrap
// (found by hostile testing: `"line": 1e300`, `"line": 4294967296`).
std::uint32_t coordinate(const json& v) {
  constexpr std::uint32_t kMax = std::numeric_limits<std::uint32_t>::max();
  if (v.is_number_unsigned()) return static_cast<std::uint32_t>(std::min<std::uint64_t>(v.get<std::uint64_t>(), kMax));
  if (v.is_number_integer()) {
    std::int64_t i = v.get<std::int64_t>();
    return i < 0 ? 0 : static_cast<std::uint32_t>(std::min<std::int64_t>(i, kMax));
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!(d > 0)) return 0;  // negative, zero (NaN cannot occur in JSON)
    return d >= static_cast<double>(kMax) ? kMax : static_cast<std::uint32_t>(d);
  }
  throw InvalidParams("a position's line and character must be numbers");
}

TextPosition to_position(const json& p) {
  return {coordinate(p.at("line")), coordinate(p.at("character"))};
}

}  // namespace

std::string uri_to_path(std::string_view uri) {
  constexpr std::string_view scheme = "file://";
  if (uri.substr(0, scheme.size()) != scheme) return std::string(uri);
  std::string_view rest = uri.substr(scheme.size());
  // file://host/path: a non-empty authority other than localhost is kept as //host
  std::string out;
  if (!rest.empty() && rest.front() != '/') {
    std::size_t slash = rest.find('/');
    std::string_view host = rest.substr(0, slash);
    if (host != "localhost") out = "//" + std::string(host);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  }
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex_value(rest[i + 1]) >= 0 && hex_value(rest[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(rest[i + 1]) * 16 + hex_value(rest[i + 2])));
      i += 2;
    } else {
      out.push_back(rest[i]);
    }
  }
  return out;
}

Server::Server(std::span<const Rule> rules, std::function<void(const json&)> send,
               std::function<void(const std::string&)> log)
    : rules_(rules), send_(std::move(send)), log_(std::move(log)), configs_(rules) {
  CacheSettings cache;
  cache.build_id = executable_build_id();
  cache.enabled = !cache.build_id.empty();
  caches_ = std::make_shared<CacheSet>(std::move(cache));
  projects_ = new_index();
  // docs/rules.md beside the executable: installed (PREFIX/bin/ddplint and
  // PREFIX/share/doc/ddplint/rules.md) or in the source tree (build/release/ddplint)
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* rel : {"../share/doc/ddplint/rules.md", "../../docs/rules.md"}) {
      std::filesystem::path p = (exe.parent_path() / rel).lexically_normal();
      if (std::filesystem::is_regular_file(p, ec)) {
        docs_uri_ = "file://" + uri_path_encode(p.string());
        break;
      }
    }
  }
}

// --- messages ------------------------------------------------------------------

void Server::reply(const json& id, json result) {
  send_(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::reply_error(const json& id, int code, const std::string& message) {
  send_(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void Server::notify(const std::string& method, json params) {
  send_(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void Server::request(const std::string& method, json params) {
  send_(json{{"jsonrpc", "2.0"}, {"id", "ddplint-" + std::to_string(next_request_id_++)}, {"method", method},
             {"params", std::move(params)}});
}

void Server::show_message(int type, const std::string& text) {
  notify("window/showMessage", {{"type", type}, {"message", text}});
}

void Server::handle_unparsable(const std::string& detail) {
  log_("message is not JSON: " + detail);
  reply_error(nullptr, error_code::kParseError, "Parse error: " + detail);
}

void Server::cancel(const json& id) {
  if (id.is_string() || id.is_number_integer()) cancelled_.insert(id.dump());
}

void Server::handle(const json& message) {
  if (!message.is_object()) {
    log_("message is not a JSON object");
    reply_error(nullptr, error_code::kInvalidRequest, "Invalid Request: a message must be a JSON object");
    return;
  }
  const json& id = member(message, "id");
  const json& method = member(message, "method");
  bool has_id = message.contains("id");
  bool valid_id = id.is_string() || id.is_number_integer() || (has_id && id.is_null() && !method.is_string());
  if (!method.is_string()) {
    if (has_id && (message.contains("result") || message.contains("error"))) return;  // a response to our request
    log_("message without a method");
    reply_error(valid_id ? id : json(nullptr), error_code::kInvalidRequest, "Invalid Request: no method");
    return;
  }
  if (has_id && !valid_id) {
    log_("request with an invalid id");
    reply_error(nullptr, error_code::kInvalidRequest, "Invalid Request: id must be a string or an integer");
    return;
  }
  const std::string& name = method.get_ref<const std::string&>();
  const json& params = member(message, "params");
  if (has_id) {
    if (cancelled_.count(id.dump()) > 0) {
      reply_error(id, error_code::kRequestCancelled, "request cancelled");
      return;
    }
    try {
      on_request(id, name, params);
    } catch (const InvalidParams& e) {
      log_(name + ": invalid params: " + e.what());
      reply_error(id, error_code::kInvalidParams, std::string("Invalid params: ") + e.what());
    } catch (const json::exception& e) {
      log_(name + ": invalid params: " + e.what());
      reply_error(id, error_code::kInvalidParams, std::string("Invalid params: ") + e.what());
    } catch (const std::exception& e) {
      log_(name + ": internal error: " + e.what());
      reply_error(id, error_code::kInternalError, std::string("Internal error: ") + e.what());
    }
  } else {
    try {
      on_notification(name, params);
    } catch (const std::exception& e) {
      log_(name + ": ignored: " + e.what());  // notifications are never answered
    }
  }
}

void Server::on_request(const json& id, const std::string& method, const json& params) {
  if (method == "initialize") {
    if (initialized_) {
      reply_error(id, error_code::kInvalidRequest, "initialize was already received");
      return;
    }
    reply(id, initialize(params));
    return;
  }
  if (!initialized_) {
    reply_error(id, error_code::kServerNotInitialized, "the server is not initialized: send initialize first");
    return;
  }
  if (shutdown_) {
    reply_error(id, error_code::kInvalidRequest, "the server is shutting down");
    return;
  }
  if (method == "shutdown") {
    shutdown_ = true;
    reply(id, nullptr);
  } else if (method == "textDocument/diagnostic") {
    reply(id, pull_diagnostics(params));
  } else if (method == "textDocument/codeAction") {
    reply(id, code_actions(params));
  } else if (method == "textDocument/hover") {
    reply(id, hover(params));
  } else {
    reply_error(id, error_code::kMethodNotFound, "method not found: " + method);
  }
}

void Server::on_notification(const std::string& method, const json& params) {
  if (method == "exit") {
    exit_requested_ = true;
    return;
  }
  if (!initialized_) {
    log_("dropped before initialize: " + method);  // the spec: notifications before initialize are dropped
    return;
  }
  if (method == "$/cancelRequest") {
    cancel(member(params, "id"));
  } else if (method == "initialized") {
    if (caps_.watched_files_registration) {
      json watchers = json::array();
      for (const char* glob : {"**/pyproject.toml", "**/ddplint.toml", "**/.ddplint.toml", "**/ruff.toml", "**/.ruff.toml"})
        watchers.push_back({{"globPattern", glob}});
      request("client/registerCapability",
              {{"registrations",
                {{{"id", "ddplint-config-files"},
                  {"method", "workspace/didChangeWatchedFiles"},
                  {"registerOptions", {{"watchers", watchers}}}}}}});
    }
  } else if (shutdown_) {
    log_("ignored after shutdown: " + method);
  } else if (method == "textDocument/didOpen") {
    did_open(params);
  } else if (method == "textDocument/didChange") {
    did_change(params);
  } else if (method == "textDocument/didSave") {
    // a saved file can change what its project says of every open buffer
    index_stale_ = true;
    index_due_ = std::chrono::steady_clock::now();
    refresh_index();
  } else if (method == "textDocument/didClose") {
    did_close(params);
  } else if (method == "notebookDocument/didOpen") {
    notebook_did_open(params);
  } else if (method == "notebookDocument/didChange") {
    notebook_did_change(params);
  } else if (method == "notebookDocument/didClose") {
    notebook_did_close(params);
  } else if (method == "workspace/didChangeConfiguration") {
    apply_settings(member(params, "settings"), false);
  } else if (method == "workspace/didChangeWatchedFiles") {
    reload_configuration();  // a configuration file changed: every buffer's findings may change
    relint_all();
  } else if (method == "workspace/didChangeWorkspaceFolders") {
    const json& event = member(params, "event");
    for (const json& f : member(event, "removed"))
      std::erase(workspace_folders_, uri_to_path(f.at("uri").get<std::string>()));
    for (const json& f : member(event, "added")) workspace_folders_.push_back(uri_to_path(f.at("uri").get<std::string>()));
    reload_configuration();
    relint_all();
  } else if (method.rfind("$/", 0) != 0) {
    log_("ignored notification: " + method);
  }
}

// --- lifecycle and settings ------------------------------------------------------

json Server::initialize(const json& params) {
  const json& caps = member(params, "capabilities");
  const json& general = member(caps, "general");
  // positionEncoding: prefer utf-8, then utf-32, else the mandatory utf-16
  bool utf8 = false, utf32 = false;
  for (const json& e : member(general, "positionEncodings")) {
    if (e == "utf-8") utf8 = true;
    if (e == "utf-32") utf32 = true;
  }
  encoding_ = utf8 ? PositionEncoding::Utf8 : utf32 ? PositionEncoding::Utf32 : PositionEncoding::Utf16;
  const json& text_document = member(caps, "textDocument");
  const json& workspace = member(caps, "workspace");
  caps_.pull_diagnostics = member(text_document, "diagnostic").is_object();
  caps_.diagnostic_refresh = member(member(workspace, "diagnostics"), "refreshSupport") == true;
  caps_.document_changes = member(member(workspace, "workspaceEdit"), "documentChanges") == true;
  caps_.watched_files_registration = member(member(workspace, "didChangeWatchedFiles"), "dynamicRegistration") == true;
  for (const json& f : member(params, "workspaceFolders"))
    if (f.contains("uri")) workspace_folders_.push_back(uri_to_path(f.at("uri").get<std::string>()));
  if (workspace_folders_.empty() && member(params, "rootUri").is_string())
    workspace_folders_.push_back(uri_to_path(member(params, "rootUri").get<std::string>()));
  apply_settings(member(params, "initializationOptions"), true);
  initialized_ = true;
  log_(std::string("initialized: position encoding ") + std::string(to_string(encoding_)) +
       (caps_.pull_diagnostics ? ", pull diagnostics" : ", push diagnostics"));

  json capabilities = {
      {"positionEncoding", to_string(encoding_)},
      {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
      {"codeActionProvider", {{"codeActionKinds", {"quickfix", "source.fixAll.ddplint"}}, {"resolveProvider", false}}},
      {"hoverProvider", true},
      // Jupyter notebooks: their Python cells, linted together
      {"notebookDocumentSync",
       {{"notebookSelector", {{{"notebook", {{"notebookType", "jupyter-notebook"}}}, {"cells", {{{"language", "python"}}}}}}}}},
      {"workspace", {{"workspaceFolders", {{"supported", true}, {"changeNotifications", true}}}}},
  };
  if (caps_.pull_diagnostics)
    capabilities["diagnosticProvider"] = {
        {"identifier", "ddplint"}, {"interFileDependencies", false}, {"workspaceDiagnostics", false}};
  return {{"capabilities", std::move(capabilities)}, {"serverInfo", {{"name", "ddplint"}, {"version", DDPLINT_VERSION}}}};
}

void Server::apply_settings(const json& value, bool from_init) {
  const json& s = value.is_object() && value.contains("ddplint") ? value.at("ddplint") : value;
  if (!s.is_object()) return;  // null or another tool's settings: keep the current ones
  if (std::string key = wrong_list_type(s); !key.empty()) {
    std::string err = "`" + key + "` has the wrong type (select, extendSelect and ignore take a list of codes)";
    log_("settings rejected: " + err);
    show_message(1, "ddplint: settings not applied: " + err);
    return;
  }
  Settings next;
  next.select = string_list(member(s, "select"));
  next.ignore = string_list(member(s, "ignore"));
  next.extend_select = string_list(member(s, "extendSelect"));
  for (auto* list : {&next.select, &next.ignore, &next.extend_select}) canonicalize_selectors(*list, rules_);
  if (member(s, "configPath").is_string()) next.config_path = member(s, "configPath").get<std::string>();
  if (const json& ms = member(s, "debounceMs"); ms.is_number_unsigned())
    next.debounce_ms = static_cast<int>(std::min<std::uint64_t>(ms.get<std::uint64_t>(), 10'000));
  else if (ms.is_number_integer())
    next.debounce_ms = static_cast<int>(std::clamp<std::int64_t>(ms.get<std::int64_t>(), 0, 10'000));
  if (std::optional<std::string> err =
          RuleSelection().add_layer(next.select, next.extend_select, next.ignore).validate(rules_)) {
    log_("settings rejected: " + *err);
    show_message(1, "ddplint: settings not applied: " + *err);
    return;
  }
  settings_ = std::move(next);
  reload_configuration();
  if (!from_init) relint_all();
}

void Server::reload_configuration() {
  ++generation_;
  configs_.clear();
  reported_config_errors_.clear();
  fixed_config_.reset();
  if (settings_.config_path.empty()) return;
  std::filesystem::path path = settings_.config_path;
  if (path.is_relative() && !workspace_folders_.empty()) path = std::filesystem::path(workspace_folders_.front()) / path;
  auto loaded = load_config(path, rules_);
  std::string problem;
  if (auto* err = std::get_if<ConfigError>(&loaded)) problem = err->to_string();
  else if (auto& config = std::get<std::optional<Config>>(loaded)) fixed_config_ = std::make_shared<const Config>(std::move(*config));
  else problem = path.string() + ": no such file, or no [tool.ddplint] table";
  if (!problem.empty()) {
    log_("configPath: " + problem);
    show_message(1, "ddplint: configuration not used: " + problem);
    reported_config_errors_.insert(problem);
  }
}

std::pair<RuleSelection, RuleOptions> Server::settings_for_document(const Document& doc, bool* excluded) {
  std::string path = doc.source().path();
  bool on_disk = doc.uri().rfind("file://", 0) == 0;
  std::shared_ptr<const Config> config = fixed_config_;
  if (!config && settings_.config_path.empty() && on_disk) {
    auto found = configs_.for_file(path);
    if (auto* err = std::get_if<ConfigError>(&found)) {
      std::string problem = err->to_string();
      if (reported_config_errors_.insert(problem).second) {
        log_("configuration: " + problem);
        show_message(1, "ddplint: configuration not used: " + problem);
      }
    } else {
      config = std::get<std::shared_ptr<const Config>>(found);
    }
  }
  // without a ddplint line-length, that of Ruff's configuration closest to the file (as the command line)
  std::shared_ptr<const RuffLineLength> ruff;
  if (on_disk && (!config || config->options.line_length == 0)) ruff = configs_.ruff_line_length_for(path);
  std::shared_ptr<const TorchSupport> torch = on_disk ? configs_.torch_declared_for(path) : nullptr;
  FileSettings file =
      settings_for(config.get(), path, settings_.select, settings_.ignore, settings_.extend_select, ruff.get(), torch.get());
  if (excluded != nullptr) *excluded = on_disk && config && excluded_by(*config, path);
  return {std::move(file.selection), file.options};
}

bool Server::excluded_by(const Config& config, const std::string& path) const {
  // the file, or a folder between the configuration's folder and it, matches
  // `exclude`/`extend-exclude`: a folder walk would leave it out, so the editor
  // shows it nothing either (as Ruff's server skips excluded files)
  std::error_code ec;
  std::filesystem::path file = std::filesystem::absolute(path, ec).lexically_normal();
  std::vector<std::string> patterns = exclude_patterns(&config);
  for (std::filesystem::path p = file; p != p.parent_path(); p = p.parent_path()) {
    std::string relative = p.lexically_relative(config.directory).generic_string();
    if (relative.empty() || relative == "." || relative.rfind("..", 0) == 0) break;  // the project's folders only
    if (matches_exclude(patterns, p, config.directory)) return true;
  }
  return false;
}

void Server::relint_all() {
  if (caps_.pull_diagnostics) {
    if (caps_.diagnostic_refresh) request("workspace/diagnostic/refresh", nullptr);
    return;
  }
  for (auto& [uri, doc] : documents_) mark_pending(uri);
  for (auto& [uri, nb] : notebooks_) publish_notebook(*nb);
}

// --- documents -------------------------------------------------------------------

Document* Server::find(const json& text_document) {
  const json& uri = member(text_document, "uri");
  if (!uri.is_string()) throw InvalidParams("textDocument.uri is missing");
  auto it = documents_.find(uri.get<std::string>());
  return it == documents_.end() ? nullptr : it->second.get();
}

void Server::mark_pending(const std::string& uri) {
  pending_[uri] = std::chrono::steady_clock::now() + std::chrono::milliseconds(settings_.debounce_ms);
}

void Server::did_open(const json& params) {
  const json& td = params.at("textDocument");
  std::string uri = td.at("uri").get<std::string>();
  std::string language = member(td, "languageId").is_string() ? td.at("languageId").get<std::string>() : "";
  // VS Code says "shellscript", Neovim the filetype ("sh", "bash")
  bool shell = language == "shellscript" || language == "sh" || language == "bash";
  if (language != "python" && !shell) {
    log_("not linted (languageId '" + language + "'): " + uri);
    return;
  }
  auto doc = std::make_unique<Document>(uri, uri_to_path(uri), td.at("version").get<std::int64_t>(),
                                        td.at("text").get<std::string>(), shell ? Language::Shell : Language::Python);
  documents_[uri] = std::move(doc);
  mark_pending(uri);
}

void Server::did_change(const json& params) {
  Document* doc = find(params.at("textDocument"));
  if (doc == nullptr) {
    log_("change to a document that is not open: " + member(params.at("textDocument"), "uri").dump());
    return;
  }
  for (const json& change : params.at("contentChanges")) {
    const std::string& text = change.at("text").get_ref<const std::string&>();
    if (change.contains("range")) {
      const json& r = change.at("range");
      doc->replace(to_position(r.at("start")), to_position(r.at("end")), text, encoding_);
    } else {
      doc->replace_all(text);
    }
  }
  const json& version = member(params.at("textDocument"), "version");
  if (version.is_number_integer()) doc->set_version(version.get<std::int64_t>());
  if (doc->uri().starts_with("file://")) {  // other buffers' facts may follow from it
    index_stale_ = true;
    index_due_ = std::chrono::steady_clock::now() + std::max(kIndexDelay, std::chrono::milliseconds(settings_.debounce_ms));
  }
  mark_pending(doc->uri());
}

std::unique_ptr<ProjectSet> Server::new_index() {
  return std::make_unique<ProjectSet>(caches_, [this](const std::filesystem::path& path) -> std::optional<std::string> {
    for (const auto& [uri, doc] : documents_) {
      if (!uri.starts_with("file://")) continue;
      if (std::filesystem::path(doc->source().path()).lexically_normal() == path) return std::string(doc->text());
    }
    return std::nullopt;
  });
}

void Server::refresh_index() {
  if (!index_stale_) return;
  index_stale_ = false;
  projects_ = new_index();
  // the buffers whose facts the edit changed: linted again now
  bool changed = false;
  for (auto& [uri, doc] : documents_) {
    auto seen = linted_facts_.find(uri);
    if (seen == linted_facts_.end()) continue;  // not linted yet: it is pending
    std::shared_ptr<const Project> project;
    if (fingerprint(facts_of(*doc, project)) == seen->second) continue;
    changed = true;
    if (!caps_.pull_diagnostics) pending_[uri] = std::chrono::steady_clock::now();
  }
  if (changed && caps_.pull_diagnostics && caps_.diagnostic_refresh) request("workspace/diagnostic/refresh", nullptr);
}

const ProjectFacts* Server::facts_of(const Document& doc, std::shared_ptr<const Project>& keep) {
  if (!doc.uri().starts_with("file://")) return nullptr;
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(uri_to_path(doc.uri()), ec).lexically_normal();
  if (ec || !std::filesystem::is_regular_file(path, ec)) return nullptr;
  keep = projects_->project_of(path);
  if (!keep) return nullptr;
  // a launch script: the Python scripts it starts, read from the buffer's text
  if (doc.language() == Language::Shell) return keep->launch_facts_for(path, doc.text());
  return keep->facts_for(path);
}

void Server::did_close(const json& params) {
  std::string uri = params.at("textDocument").at("uri").get<std::string>();
  if (documents_.erase(uri) == 0) return;
  pending_.erase(uri);
  linted_facts_.erase(uri);
  if (uri.starts_with("file://")) {  // the file is read from disk again
    index_stale_ = true;
    index_due_ = std::chrono::steady_clock::now() + kIndexDelay;
  }
  if (!caps_.pull_diagnostics) notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
}

const LintResult& Server::lint_of(Document& doc) {
  // the buffer's file in its project: the same facts the CLI gives it, from
  // the open buffers as they were when the index was last made
  std::shared_ptr<const Project> project;
  const ProjectFacts* facts = facts_of(doc, project);
  std::string facts_seen = fingerprint(facts);
  auto seen = linted_facts_.find(doc.uri());
  if (const LintResult* cached = doc.cached_lint(generation_); cached && seen != linted_facts_.end() &&
                                                                 seen->second == facts_seen)
    return *cached;
  linted_facts_[doc.uri()] = std::move(facts_seen);
  bool excluded = false;
  auto [selection, options] = settings_for_document(doc, &excluded);
  if (excluded) return doc.store_lint(generation_, LintResult{});  // the configuration excludes it: no diagnostics
  LintResult result = lint(doc.source(), doc.tree(), rules_, selection, options, facts);
  if (!result.error.empty()) log_(doc.uri() + ": not linted: " + result.error);
  return doc.store_lint(generation_, std::move(result));
}

json Server::range_of(const Document& doc, std::uint32_t start, std::uint32_t end) const {
  TextPosition a = position_at(doc.text(), doc.source().lines(), start, encoding_);
  TextPosition b = position_at(doc.text(), doc.source().lines(), end, encoding_);
  return {{"start", {{"line", a.line}, {"character", a.character}}}, {"end", {{"line", b.line}, {"character", b.character}}}};
}

json Server::to_lsp(const Document& doc, const Diagnostic& d) const {
  json out = {{"range", range_of(doc, d.start, d.end)},
              {"severity", lsp_severity(d.severity())},
              {"code", d.rule->code},
              {"source", "ddplint"},
              {"message", d.message}};
  // the rule's page in ddplint's rule documentation when it is installed, else the PyTorch page it cites
  if (!docs_uri_.empty()) out["codeDescription"] = {{"href", docs_uri_ + "#" + std::string(d.rule->code)}};
  else if (!d.rule->url.empty()) out["codeDescription"] = {{"href", d.rule->url}};
  if (d.rule->deprecated_api) out["tags"] = {2};  // DiagnosticTag.Deprecated
  // the calls in other files that make the finding per step (paths relative to
  // the server's working folder, as the project index shows them)
  if (!d.related.empty()) {
    json related = json::array();
    for (const RelatedLocation& r : d.related) {
      std::error_code ec;
      std::string path = std::filesystem::absolute(r.path, ec).lexically_normal().generic_string();
      json at = {{"line", r.line > 0 ? r.line - 1 : 0}, {"character", 0}};
      related.push_back({{"location", {{"uri", "file://" + uri_path_encode(path)}, {"range", {{"start", at}, {"end", at}}}}},
                         {"message", r.message}});
    }
    out["relatedInformation"] = std::move(related);
  }
  return out;
}

std::string Server::result_id(const Document& doc) const {
  return std::to_string(generation_) + ":" + std::to_string(doc.version()) + ":" + std::to_string(doc.text().size());
}

void Server::publish(Document& doc) {
  const LintResult& result = lint_of(doc);
  json items = json::array();
  for (const Diagnostic& d : result.diagnostics) items.push_back(to_lsp(doc, d));
  notify("textDocument/publishDiagnostics", {{"uri", doc.uri()}, {"version", doc.version()}, {"diagnostics", std::move(items)}});
}

std::chrono::steady_clock::time_point Server::next_due() const {
  auto due = index_stale_ ? index_due_ : std::chrono::steady_clock::time_point::max();
  for (const auto& [uri, t] : pending_) due = std::min(due, t);
  return due;
}

void Server::publish_due(std::chrono::steady_clock::time_point now,
                         const std::function<bool(const std::string& uri)>& superseded) {
  if (index_stale_ && index_due_ <= now) {
    try {
      refresh_index();  // marks the buffers whose facts changed as due
    } catch (const std::exception& e) {
      log_(std::string("project index failed: ") + e.what());
    }
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second > now || (superseded && superseded(it->first))) {
      ++it;
      continue;
    }
    auto doc = documents_.find(it->first);
    std::string uri = it->first;
    it = pending_.erase(it);
    if (doc == documents_.end() || caps_.pull_diagnostics) continue;
    try {
      publish(*doc->second);
    } catch (const std::exception& e) {
      log_(uri + ": lint failed: " + e.what());
    }
  }
}

// --- requests --------------------------------------------------------------------------

json Server::pull_diagnostics(const json& params) {
  // a notebook's cell: the notebook linted, this cell's part
  const json& cell_uri = member(member(params, "textDocument"), "uri");
  for (const auto& [uri, nb] : notebooks_)
    if (cell_uri.is_string() && nb->cell(cell_uri.get<std::string>()) != nullptr)
      return {{"kind", "full"}, {"items", notebook_diagnostics(*nb)[cell_uri.get<std::string>()]}};
  Document* doc = find(params.at("textDocument"));
  if (doc == nullptr) return {{"kind", "full"}, {"items", json::array()}};
  std::string id = result_id(*doc);
  const json& previous = member(params, "previousResultId");
  if (previous.is_string() && previous.get<std::string>() == id && doc->cached_lint(generation_) != nullptr)
    return {{"kind", "unchanged"}, {"resultId", id}};
  const LintResult& result = lint_of(*doc);
  json items = json::array();
  for (const Diagnostic& d : result.diagnostics) items.push_back(to_lsp(*doc, d));
  return {{"kind", "full"}, {"resultId", id}, {"items", std::move(items)}};
}

// --- notebooks -------------------------------------------------------------------

void Server::notebook_did_open(const json& params) {
  auto nb = std::make_unique<NotebookDocument>(params);
  std::string uri = nb->uri();
  publish_notebook(*nb);
  notebooks_[uri] = std::move(nb);
}

void Server::notebook_did_change(const json& params) {
  std::string uri = params.at("notebookDocument").at("uri").get<std::string>();
  auto it = notebooks_.find(uri);
  if (it == notebooks_.end()) {
    log_("change to a notebook that is not open: " + uri);
    return;
  }
  for (const std::string& gone : it->second->change(params, encoding_))
    if (!caps_.pull_diagnostics) notify("textDocument/publishDiagnostics", {{"uri", gone}, {"diagnostics", json::array()}});
  publish_notebook(*it->second);
}

void Server::notebook_did_close(const json& params) {
  auto it = notebooks_.find(params.at("notebookDocument").at("uri").get<std::string>());
  if (it == notebooks_.end()) return;
  if (!caps_.pull_diagnostics)
    for (const std::string& cell : it->second->cell_uris())
      notify("textDocument/publishDiagnostics", {{"uri", cell}, {"diagnostics", json::array()}});
  notebooks_.erase(it);
}

std::map<std::string, json> Server::notebook_diagnostics(const NotebookDocument& nb) {
  // the notebook's configuration: that of its file, as for a buffer
  Document file(nb.uri(), uri_to_path(nb.uri()), nb.version(), "");
  auto [selection, options] = settings_for_document(file);
  NotebookDocument::Lint result = nb.lint(rules_, selection, options);
  if (!result.error.empty()) log_(nb.uri() + ": not linted: " + result.error);
  std::map<std::string, json> out;
  std::vector<std::string> cells = nb.cell_uris();
  for (std::size_t k = 0; k < cells.size(); ++k) {
    json items = json::array();
    if (const Document* cell = nb.cell(cells[k]))
      for (const Diagnostic& d : result.by_cell[k]) items.push_back(to_lsp(*cell, d));
    out[cells[k]] = std::move(items);
  }
  return out;
}

void Server::publish_notebook(const NotebookDocument& nb) {
  if (caps_.pull_diagnostics) {
    if (caps_.diagnostic_refresh) request("workspace/diagnostic/refresh", nullptr);
    return;
  }
  for (auto& [cell, items] : notebook_diagnostics(nb)) {
    json params = {{"uri", cell}, {"diagnostics", std::move(items)}};
    if (const Document* doc = nb.cell(cell)) params["version"] = doc->version();
    notify("textDocument/publishDiagnostics", std::move(params));
  }
}

json Server::workspace_edit(const Document& doc, const std::vector<Edit>& edits) const {
  json text_edits = json::array();
  for (const Edit& e : edits) text_edits.push_back({{"range", range_of(doc, e.start, e.end)}, {"newText", e.replacement}});
  if (caps_.document_changes)
    return {{"documentChanges",
             {{{"textDocument", {{"uri", doc.uri()}, {"version", doc.version()}}}, {"edits", std::move(text_edits)}}}}};
  return {{"changes", {{doc.uri(), std::move(text_edits)}}}};
}

json Server::code_actions(const json& params) {
  Document* doc = find(params.at("textDocument"));
  json actions = json::array();
  if (doc == nullptr) return actions;
  const json& r = params.at("range");
  std::uint32_t from = offset_at(doc->text(), doc->source().lines(), to_position(r.at("start")), encoding_);
  std::uint32_t to = offset_at(doc->text(), doc->source().lines(), to_position(r.at("end")), encoding_);
  if (from > to) std::swap(from, to);
  const json& only = member(member(params, "context"), "only");
  const LintResult& result = lint_of(*doc);
  const LineIndex& lines = doc->source().lines();

  if (kind_requested(only, "quickfix")) {
    std::set<std::pair<std::uint32_t, std::string_view>> noqa_done;
    // findings on the lines the range touches (a cursor anywhere on the line offers its actions)
    std::uint32_t first_line = lines.line_of(from), last_line = lines.line_of(to);
    for (const Diagnostic& d : result.diagnostics) {
      if (lines.line_of(d.end) < first_line || lines.line_of(d.start) > last_line) continue;
      std::string code(d.rule->code);
      json diagnostic = to_lsp(*doc, d);
      if (d.fix && !d.fix->edits.empty()) {
        bool unsafe = d.fix->applicability == Fix::Applicability::Unsafe;  // may change behaviour: said in the title
        actions.push_back({{"title", "ddplint (" + code + "): " + d.fix->description + (unsafe ? " (unsafe)" : "")},
                           {"kind", "quickfix"},
                           {"diagnostics", {diagnostic}},
                           {"isPreferred", d.fix->applicability == Fix::Applicability::Safe},
                           {"edit", workspace_edit(*doc, d.fix->edits)}});
      }
      std::uint32_t line = comment_line(doc->source(), doc->tree(), lines.line_of(d.start));
      if (!noqa_done.insert({line, d.rule->code}).second) continue;
      if (std::optional<Edit> e = noqa_edit(doc->source(), doc->tree(), line, d.rule->code)) {
        actions.push_back({{"title", "ddplint (" + code + "): Disable for this line"},
                           {"kind", "quickfix"},
                           {"diagnostics", {diagnostic}},
                           {"edit", workspace_edit(*doc, {*e})}});
      }
    }
  }
  if (only.is_array() && kind_requested(only, "source.fixAll.ddplint")) {
    // every safe fix whose edits do not touch another's, in document order
    std::vector<Edit> edits = applicable_edits(result.diagnostics, false);
    if (!edits.empty())
      actions.push_back({{"title", "ddplint: Fix all auto-fixable problems"},
                         {"kind", "source.fixAll.ddplint"},
                         {"edit", workspace_edit(*doc, edits)}});
  }
  return actions;
}

json Server::hover(const json& params) {
  Document* doc = find(params.at("textDocument"));
  if (doc == nullptr) return nullptr;
  std::uint32_t at = offset_at(doc->text(), doc->source().lines(), to_position(params.at("position")), encoding_);
  auto docs_of = [](const RuleInfo& info) {
    return "**" + std::string(info.code) + "** `" + std::string(info.name) + "`\n\n" + std::string(info.docs);
  };
  // a code inside a `# noqa: ...` comment
  TSNode comment = comment_at(doc->tree(), at);
  if (!ts_node_is_null(comment)) {
    std::uint32_t start = ts_node_start_byte(comment);
    std::string_view text = node_text(comment, doc->text());
    for (bool file_level : {false, true}) {
      std::optional<NoqaDirective> d = find_noqa(text, file_level);
      if (!d) continue;
      for (const NoqaDirective::Code& c : d->codes) {
        if (at < start + c.start || at > start + c.end) continue;
        for (const Rule& rule : rules_) {
          if (rule.info.code != c.code) continue;
          return {{"contents", {{"kind", "markdown"}, {"value", docs_of(rule.info)}}},
                  {"range", range_of(*doc, start + c.start, start + c.end)}};
        }
      }
    }
  }
  const LintResult& result = lint_of(*doc);
  for (const Diagnostic& d : result.diagnostics) {
    if (at < d.start || at > d.end) continue;
    return {{"contents", {{"kind", "markdown"}, {"value", docs_of(*d.rule)}}}, {"range", range_of(*doc, d.start, d.end)}};
  }
  return nullptr;
}

}  // namespace ddplint::lsp
