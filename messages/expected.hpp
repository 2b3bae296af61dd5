#pragma once
// Errors as values at every boundary (DESIGN.md §9): a parse, a decode, a subprocess or a config lookup
// returns expected<T>, never throws across the boundary. The message says what went wrong and what to do.
#include <string>
#include <utility>
#include <variant>

namespace crucible {

/// An error a user can act on: what failed, and where (a key path, a file, a candidate id).
struct error {
  std::string message;
};

/// T or an error. Deliberately small (C++17 has no std::expected; CAF's expected needs CAF in every unit).
template <class T>
class expected {
 public:
  expected(T value) : v_(std::move(value)) {}
  expected(error e) : v_(std::move(e)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const error& err() const { return std::get<1>(v_); }
  const std::string& message() const { return err().message; }

 private:
  std::variant<T, error> v_;
};

/// Success or an error, for operations with no result.
template <>
class expected<void> {
 public:
  expected() = default;
  expected(error e) : ok_(false), err_(std::move(e)) {}

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const error& err() const { return err_; }
  const std::string& message() const { return err_.message; }

 private:
  bool ok_ = true;
  error err_;
};

using status = expected<void>;

inline error make_error(std::string message) {
  return error{std::move(message)};
}

}  // namespace crucible
