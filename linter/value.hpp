// Value: what the semantic model knows about an expression's value at lint time.
#pragma once

#include <cstdint>
#include <string>

namespace ddplint {

/// A constant resolved from the source, or Unknown. Unknown is a first-class
/// answer: a rule that needs a value and gets Unknown stays silent.
struct Value {
  enum class Kind { Unknown, Int, Float, Str, Bool, None };
  Kind kind = Kind::Unknown;
  std::int64_t i = 0;  ///< valid for Int (and Bool: 0/1)
  double f = 0;        ///< valid for Float
  std::string s;       ///< valid for Str

  static Value unknown() { return {}; }
  static Value integer(std::int64_t v) { return {Kind::Int, v, 0, {}}; }
  static Value floating(double v) { return {Kind::Float, 0, v, {}}; }
  static Value string(std::string v) { return {Kind::Str, 0, 0, std::move(v)}; }
  static Value boolean(bool v) { return {Kind::Bool, v ? 1 : 0, 0, {}}; }
  static Value none() { return {Kind::None, 0, 0, {}}; }

  bool known() const { return kind != Kind::Unknown; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double as_double() const { return kind == Kind::Float ? f : static_cast<double>(i); }
  /// Python truthiness; only meaningful when known().
  bool truthy() const {
    switch (kind) {
      case Kind::Int: case Kind::Bool: return i != 0;
      case Kind::Float: return f != 0;
      case Kind::Str: return !s.empty();
      default: return false;
    }
  }
};

}  // namespace ddplint
