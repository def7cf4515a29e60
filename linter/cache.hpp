// The cache of a run: per-file project summaries and per-file findings, kept
// in `.ddplint_cache/` at the project root, so that a second run over an
// unchanged project re-analyses only what changed.
//
// Each entry sits in a slot (one per file and kind: the findings of
// `/abs/train.py`, the summary of `engine.py` in round 2 of the fixed point)
// and carries the key of what its value is a function of: the file's bytes,
// the settings and project facts it was computed with. A slot holds one
// entry, so the cache grows with the files, not with their edits. The whole
// folder is for one ddplint build (entries of other builds are never read).
//
// On disk a folder is one pack file, read on first use and written back
// (atomically: a private temporary file renamed into place) when the Cache
// is destroyed. A pack that does not verify (truncated, corrupt, another
// build's) is ignored and rewritten: its entries are recomputed, never
// trusted. Concurrent runs are safe: each writes a whole pack, merged with
// what others wrote since it read; at worst an entry is lost and recomputed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "linter/recent.hpp"

namespace ddplint {

/// A 128-bit key (XXH3-128 of what the entry depends on).
struct CacheKey {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  /// 32 lowercase hex digits.
  std::string hex() const;
  bool operator==(const CacheKey&) const = default;
};

/// Builds a CacheKey from parts. Each part is length-prefixed, so ("ab", "c")
/// and ("a", "bc") give different keys.
class KeyHasher {
 public:
  KeyHasher();
  ~KeyHasher();
  KeyHasher(const KeyHasher&) = delete;
  KeyHasher& operator=(const KeyHasher&) = delete;
  /// Adds one part (any bytes).
  KeyHasher& add(std::string_view part);
  /// Adds one number (as 8 little-endian bytes).
  KeyHasher& add_number(std::uint64_t n);
  /// The key of the parts added so far.
  CacheKey finish() const;

 private:
  void* state_;  // XXH3_state_t
};

/// Bytes of a cache entry, written field by field (little-endian numbers,
/// length-prefixed strings).
class ByteWriter {
 public:
  void number(std::uint64_t n);
  void text(std::string_view s);
  void flag(bool b) { number(b ? 1 : 0); }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

/// Reads what a ByteWriter wrote. Every read checks the bounds: past the end
/// or an over-long length sets failed() and yields 0 or "", so a damaged entry
/// is detected, never read out of bounds.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  std::uint64_t number();
  std::string text();
  bool flag() { return number() != 0; }
  /// A count of items, each at least `min_item_bytes` long: more than could
  /// fit in what is left fails (a damaged count cannot allocate gigabytes).
  std::uint64_t count(std::size_t min_item_bytes = 1);
  bool failed() const { return failed_; }
  /// Marks the bytes as damaged (a value read is out of its range).
  void fail() { failed_ = true; }
  bool at_end() const { return in_.empty(); }

 private:
  std::string_view in_;
  bool failed_ = false;
};

/// What names the build that writes entries: the version and the executable's
/// GNU build ID (the linker's hash of the program, read from its loaded
/// `.note.gnu.build-id`), or else the XXH3-128 hash of its bytes
/// (/proc/self/exe); computed once per process. Empty when neither can be
/// had: no cache is used then (an entry written by another build is never read).
const std::string& executable_build_id();

/// Whether a run keeps a cache, and where.
struct CacheSettings {
  bool enabled = false;   ///< false: nothing is read or written (--no-cache)
  std::string build_id;   ///< executable_build_id() in the CLI; a fixed string in tests
  /// Every project's cache in this folder (--cache-dir, DDPLINT_CACHE_DIR);
  /// empty: `<project root>/.ddplint_cache`.
  std::filesystem::path dir;
  /// The folder for the project at `root` (absolute).
  std::filesystem::path dir_for(const std::filesystem::path& root) const {
    return dir.empty() ? root / ".ddplint_cache" : dir;
  }
};

/// One cache folder. get() and put() are thread-safe and never throw; a
/// folder that cannot be written (read-only, full disk) is silently a cache
/// that misses.
class Cache {
 public:
  /// The cache in `dir` for entries of build `build_id` (non-empty).
  Cache(std::filesystem::path dir, std::string build_id);
  /// Writes the pack back (flush()).
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  /// The payload in `slot` when its key is `key`, else std::nullopt.
  std::optional<std::string> get(std::string_view slot, const CacheKey& key) const;
  /// Stores `payload` under `key` in `slot` (replacing what it held).
  void put(std::string_view slot, const CacheKey& key, std::string payload) const;
  /// Writes the pack when put() changed it: the entries on disk (as another
  /// run may have left them) with this run's puts over them. The first write
  /// creates the folder with a `.gitignore` of `*` and a CACHEDIR.TAG; each
  /// write removes the packs of other builds. False when it could not be written.
  bool flush() const;

  /// The pack file (for tests that damage it).
  std::filesystem::path pack_path() const;
  const std::filesystem::path& dir() const { return dir_; }

  /// Counters since construction: entries found with their key, slots empty
  /// or holding another key, and packs that did not verify.
  std::size_t hits() const;
  std::size_t misses() const;
  std::size_t rejected() const;

 private:
  struct Entry {
    CacheKey key;
    std::string payload;
  };
  using Table = std::unordered_map<std::string, Entry>;
  void load() const;  // with mutex_ held
  bool read_pack(Table& into) const;  // false: missing or not verified
  std::filesystem::path dir_;
  std::string build_id_;
  mutable std::mutex mutex_;
  mutable bool loaded_ = false;
  mutable Table table_;
  mutable std::vector<std::string> dirty_;  // slots put() this run
  mutable std::size_t hits_ = 0, misses_ = 0, rejected_ = 0;
};

/// The cache folders of a run, one Cache each, shared by the projects and
/// the files linted alone. Holds the last kKept folders (an evicted one is
/// written back when its last user lets go).
class CacheSet {
 public:
  static constexpr std::size_t kKept = 16;
  explicit CacheSet(CacheSettings settings) : settings_(std::move(settings)) {}
  /// The cache for the project at `root` (absolute), or null when disabled.
  std::shared_ptr<const Cache> cache_for(const std::filesystem::path& root);
  const CacheSettings& settings() const { return settings_; }

 private:
  CacheSettings settings_;
  std::mutex mutex_;
  RecentlyUsed<std::filesystem::path, std::shared_ptr<const Cache>> kept_{kKept};
};

}  // namespace ddplint
