// Status and Result<T>: ordinary failures are return values, not exceptions.
// Exceptions from parsers and libraries are caught at the edges and turned into a Status
// whose message says what failed and where.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace hpc {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }
  template <typename... Args>
  static Status Errorf(fmt::format_string<Args...> f, Args&&... args) {
    return Status(fmt::format(f, std::forward<Args>(args)...));
  }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }
  // Prefixes context so errors read outside-in: "nodeset \"gpu\": spec.maxReplicas: ...".
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(context + ": " + *message_);
  }

 private:
  explicit Status(std::string m) : message_(std::move(m)) {}
  std::optional<std::string> message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace hpc

#define HPC_CONCAT_INNER(a, b) a##b
#define HPC_CONCAT(a, b) HPC_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::hpc::Status _st = (expr);               \
    if (!_st.ok()) return _st;                \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(HPC_CONCAT(_res_, __LINE__), lhs, expr)
