// Status and Result<T>: the error path inside memq (no exceptions cross a layer boundary).
// A Status carries an ErrorCode, a human message, and optional JSON `data` (for InvalidParams, data.field names
// the offending field). Daemon and client share it; the daemon turns it into a JSON-RPC error exactly once.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "protocol/error_code.h"

namespace memq {

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message, nlohmann::json data = nullptr)
      : code_(code), message_(std::move(message)), data_(std::move(data)) {}

  static Status ok() { return {}; }
  // InvalidParams naming the offending field (data.field), as docs/protocol.md requires.
  static Status invalidField(const std::string& field, const std::string& message) {
    return {ErrorCode::kInvalidParams, message, nlohmann::json{{"field", field}}};
  }
  static Status notFound(const std::string& message) { return {ErrorCode::kNotFound, message}; }
  static Status storage(const std::string& message) { return {ErrorCode::kStorageError, message}; }
  static Status internal(const std::string& message) { return {ErrorCode::kInternalError, message}; }

  bool isOk() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return isOk(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const nlohmann::json& data() const { return data_; }

  std::string toString() const {
    return std::string(errorCodeName(code_)) + ": " + message_;
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  nlohmann::json data_;
};

// Result<T>: either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool isOk() const { return value_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace memq

// Propagate a non-ok Status from an expression returning Status.
#define MEMQ_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::memq::Status memq_status_ = (expr);      \
    if (!memq_status_.isOk()) return memq_status_; \
  } while (0)
