#include "linter/cache.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#define XXH_INLINE_ALL
#include <xxhash.h>

#ifndef DDPLINT_VERSION
#define DDPLINT_VERSION "dev"
#endif

namespace ddplint {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kMagic = "DDPLINT-CACHE\x03\n";  // then the pack's whole size (8 bytes)
// A pack larger than this is not read (a project at Project::kMaxFiles files
// with a few kB of findings each stays well under it).
constexpr std::uint64_t kMaxPack = 1ull << 30;

std::string hex64(std::uint64_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, n >>= 4) out[static_cast<std::size_t>(i)] = digits[n & 15];
  return out;
}

CacheKey checksum(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return CacheKey{h.high64, h.low64};
}

// The whole file at `path`, up to `limit` bytes (more: std::nullopt). Only
// a regular file is read (a FIFO or a device in its place is not opened for
// reading: it could block or never end). `head`, when given, must be the
// first bytes of the file, followed by its whole size as 8 little-endian
// bytes; a file that does not start so is not read further.
std::optional<std::string> read_all(const fs::path& path, std::uint64_t limit, std::string_view head = {}) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > limit) {
    ::close(fd);
    return std::nullopt;
  }
  std::string out;
  if (!head.empty()) {  // the header first: a big file that is not a pack costs one read
    std::string first(head.size() + 8, '\0');
    std::size_t got = 0;
    while (got < first.size()) {
      ssize_t n = ::read(fd, first.data() + got, first.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    std::uint64_t declared = 0;
    for (int i = 7; got == first.size() && i >= 0; --i)
      declared = (declared << 8) | static_cast<unsigned char>(first[head.size() + static_cast<std::size_t>(i)]);
    if (got != first.size() || std::string_view(first).substr(0, head.size()) != head ||
        declared != static_cast<std::uint64_t>(st.st_size)) {
      ::close(fd);
      return std::string(first.data(), got);  // not a pack: the caller rejects it
    }
    out = std::move(first);
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > limit) {
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return out;
}

bool write_all(const fs::path& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return ::close(fd) == 0;
}

}  // namespace

std::string CacheKey::hex() const { return hex64(high) + hex64(low); }

KeyHasher::KeyHasher() : state_(XXH3_createState()) {
  if (state_ != nullptr) XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}
KeyHasher::~KeyHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

KeyHasher& KeyHasher::add(std::string_view part) {
  add_number(part.size());
  if (state_ != nullptr) XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), part.data(), part.size());
  return *this;
}

KeyHasher& KeyHasher::add_number(std::uint64_t n) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
  if (state_ != nullptr) XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), bytes, sizeof bytes);
  return *this;
}

CacheKey KeyHasher::finish() const {
  if (state_ == nullptr) return {};
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  return CacheKey{h.high64, h.low64};
}

namespace {

// The GNU build ID of the running executable (the linker's hash of its
// output, `.note.gnu.build-id`), read from the loaded program headers: no
// file is read. Empty when the executable has none.
std::string gnu_build_id() {
  std::string id;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& out = *static_cast<std::string*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const char* name = p + sizeof(ElfW(Nhdr));
            const char* desc = name + ((note->n_namesz + 3) & ~3u);
            const char* next = desc + ((note->n_descsz + 3) & ~3u);
            if (next > end) break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              static const char* digits = "0123456789abcdef";
              for (unsigned k = 0; k < note->n_descsz; ++k) {
                auto byte = static_cast<unsigned char>(desc[k]);
                out.push_back(digits[byte >> 4]);
                out.push_back(digits[byte & 15]);
              }
              return 1;
            }
            p = next;
          }
        }
        return 1;  // the first object is the executable: stop there
      },
      &id);
  return id;
}

}  // namespace

const std::string& executable_build_id() {
  static const std::string id = [] {
    std::string build = gnu_build_id();
    if (build.empty()) {  // no note: hash the executable's bytes
      auto bytes = read_all("/proc/self/exe", 1ull << 31);
      if (!bytes || bytes->empty()) return std::string();
      build = checksum(*bytes).hex();
    }
    return std::string(DDPLINT_VERSION) + "-" + build;
  }();
  return id;
}

void ByteWriter::number(std::uint64_t n) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

void ByteWriter::text(std::string_view t) {
  number(t.size());
  out_.append(t);
}

std::uint64_t ByteReader::number() {
  if (failed_ || in_.size() < 8) {
    failed_ = true;
    return 0;
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(in_[static_cast<std::size_t>(i)]);
  in_.remove_prefix(8);
  return n;
}

std::string ByteReader::text() {
  std::uint64_t size = number();
  if (failed_ || size > in_.size()) {
    failed_ = true;
    return {};
  }
  std::string out(in_.substr(0, size));
  in_.remove_prefix(size);
  return out;
}

std::uint64_t ByteReader::count(std::size_t min_item_bytes) {
  std::uint64_t n = number();
  if (failed_ || (min_item_bytes > 0 && n > in_.size() / min_item_bytes)) {
    failed_ = true;
    return 0;
  }
  return n;
}

Cache::Cache(fs::path dir, std::string build_id) : dir_(std::move(dir)), build_id_(std::move(build_id)) {}

Cache::~Cache() { (void)flush(); }

fs::path Cache::pack_path() const {
  return dir_ / ("pack-" + hex64(XXH3_64bits(build_id_.data(), build_id_.size())));
}

bool Cache::read_pack(Table& into) const {
  auto bytes = read_all(pack_path(), kMaxPack, kMagic);
  if (!bytes) return false;
  std::string_view all(*bytes);
  auto reject = [&] {
    into.clear();
    ++rejected_;
    return false;
  };
  if (all.size() < kMagic.size() + 8 + 16 || !all.starts_with(kMagic)) return reject();
  std::string_view body = all.substr(0, all.size() - 16);
  ByteReader trailer(all.substr(all.size() - 16));
  CacheKey sum{trailer.number(), trailer.number()};
  if (checksum(body) != sum) return reject();
  ByteReader in(body.substr(kMagic.size()));
  if (in.number() != all.size()) return reject();
  if (in.text() != build_id_) return reject();
  std::uint64_t n = in.count(8 + 16 + 8);
  for (std::uint64_t i = 0; i < n && !in.failed(); ++i) {
    std::string slot = in.text();
    CacheKey key{in.number(), in.number()};
    std::string payload = in.text();
    into.insert_or_assign(std::move(slot), Entry{key, std::move(payload)});
  }
  if (in.failed() || !in.at_end()) return reject();
  return true;
}

void Cache::load() const {
  if (loaded_) return;
  loaded_ = true;
  try {
    (void)read_pack(table_);
  } catch (const std::exception&) {
    table_.clear();
  }
}

std::optional<std::string> Cache::get(std::string_view slot, const CacheKey& key) const {
  std::lock_guard lock(mutex_);
  load();
  auto it = table_.find(std::string(slot));
  if (it == table_.end() || it->second.key != key) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return it->second.payload;
}

void Cache::put(std::string_view slot, const CacheKey& key, std::string payload) const {
  std::lock_guard lock(mutex_);
  try {
    load();
    auto [it, fresh] = table_.insert_or_assign(std::string(slot), Entry{key, std::move(payload)});
    (void)fresh;
    dirty_.push_back(it->first);
  } catch (const std::exception&) {
    // out of memory: the entry is not kept
  }
}

bool Cache::flush() const {
  std::lock_guard lock(mutex_);
  if (dirty_.empty()) return true;
  try {
    // what is on disk now (another run may have written since this one read),
    // this run's entries over it
    Table merged;
    (void)read_pack(merged);
    for (const std::string& slot : dirty_)
      if (auto it = table_.find(slot); it != table_.end()) merged.insert_or_assign(slot, it->second);
    dirty_.clear();
    ByteWriter out;
    out.bytes() = std::string(kMagic);
    out.number(0);  // the pack's size, set below
    out.text(build_id_);
    out.number(merged.size());
    for (const auto& [slot, entry] : merged) {
      out.text(slot);
      out.number(entry.key.high);
      out.number(entry.key.low);
      out.text(entry.payload);
    }
    std::uint64_t total = out.bytes().size() + 16;
    for (int i = 0; i < 8; ++i) out.bytes()[kMagic.size() + static_cast<std::size_t>(i)] = static_cast<char>((total >> (8 * i)) & 0xff);
    CacheKey sum = checksum(out.bytes());
    out.number(sum.high);
    out.number(sum.low);
    std::error_code ec;
    const bool fresh = !fs::exists(dir_, ec);
    fs::create_directories(dir_, ec);
    if (ec) return false;
    // a name no other writer uses: process, thread and a counter
    static std::atomic<std::uint64_t> counter{0};
    auto put_atomically = [&](const fs::path& path, std::string_view bytes) {
      fs::path tmp = path;
      tmp += ".tmp." + std::to_string(::getpid()) + "." +
             std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + "." +
             std::to_string(counter.fetch_add(1));
      std::error_code e;
      if (!write_all(tmp, bytes)) {
        fs::remove(tmp, e);
        return false;
      }
      fs::rename(tmp, path, e);
      if (e) fs::remove(tmp, e);
      return !e;
    };
    // the folder's tags, put back whenever one is missing or empty (a full
    // disk, a user's rm): git ignores the folder, backup tools may skip it
    // (not in an existing folder the user named with --cache-dir, such as `.`)
    if (fresh || dir_.filename() == ".ddplint_cache" || fs::exists(dir_ / "CACHEDIR.TAG", ec)) {
      const std::pair<const char*, std::string_view> tags[] = {
          {".gitignore", "# Automatically created by ddplint.\n*\n"},
          {"CACHEDIR.TAG",
           "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by ddplint.\n"}};
      for (const auto& [name, text] : tags) {
        std::error_code e;
        auto size = fs::file_size(dir_ / name, e);
        if (e || size == 0) (void)put_atomically(dir_ / name, text);
      }
    }
    fs::path path = pack_path();
    if (!put_atomically(path, out.bytes())) return false;
    // the packs of other builds are never read again: removed (a run of
    // another build at the same time only loses its entries, recomputed)
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.starts_with("pack-") && it->path() != path && name.find(".tmp.") == std::string::npos) {
        std::error_code rm;
        fs::remove(it->path(), rm);
      }
    }
    return true;
  } catch (const std::exception&) {
    return false;  // a cache that cannot be written is a cache that misses
  }
}

std::size_t Cache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}
std::size_t Cache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}
std::size_t Cache::rejected() const {
  std::lock_guard lock(mutex_);
  return rejected_;
}

std::shared_ptr<const Cache> CacheSet::cache_for(const fs::path& root) {
  if (!settings_.enabled || settings_.build_id.empty()) return nullptr;
  fs::path dir = settings_.dir_for(root);
  std::lock_guard lock(mutex_);
  return kept_.get(dir, [&] { return std::make_shared<const Cache>(dir, settings_.build_id); });
}

}  // namespace ddplint
