// A short list of the values last used, by key: what ProjectSet and CacheSet
// keep so that memory does not grow with the number of projects in a run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace ddplint {

/// At most `capacity` (key, value) pairs, the most recently used last. Not
/// thread-safe: its owner holds a lock around it.
template <class Key, class Value>
class RecentlyUsed {
 public:
  explicit RecentlyUsed(std::size_t capacity) : capacity_(capacity) {}
  /// The value for `key`, now the most recently used; when there is none,
  /// `make()` makes it, and the least recently used pair goes if the list is full.
  template <class Make>
  Value& get(const Key& key, Make&& make) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == key; });
    if (it != entries_.end()) {
      auto e = std::move(*it);
      entries_.erase(it);
      entries_.push_back(std::move(e));
    } else {
      if (entries_.size() >= capacity_) entries_.erase(entries_.begin());
      entries_.emplace_back(key, make());
    }
    return entries_.back().second;
  }

 private:
  std::size_t capacity_;
  std::vector<std::pair<Key, Value>> entries_;
};

}  // namespace ddplint
