// memq's error taxonomy: the JSON-RPC 2.0 standard codes plus memq's own (docs/protocol.md "Errors").
// Owned here because daemon and client both speak these numbers; nothing else lives in this header.
#pragma once

#include <string_view>

namespace memq {

enum class ErrorCode : int {
  kOk = 0,
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kNotFound = -32001,
  kAmbiguous = -32002,
  kConflict = -32003,
  kScopeUnavailable = -32004,
  kBusy = -32005,
  kStorageError = -32006,
  kGitError = -32007,
  kForbidden = -32008,
  kNotInitialized = -32009,
};

// The name used in docs and in human CLI output ("NotFound", "InvalidParams", ...).
constexpr std::string_view errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "Ok";
    case ErrorCode::kParseError: return "ParseError";
    case ErrorCode::kInvalidRequest: return "InvalidRequest";
    case ErrorCode::kMethodNotFound: return "MethodNotFound";
    case ErrorCode::kInvalidParams: return "InvalidParams";
    case ErrorCode::kInternalError: return "InternalError";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kAmbiguous: return "Ambiguous";
    case ErrorCode::kConflict: return "Conflict";
    case ErrorCode::kScopeUnavailable: return "ScopeUnavailable";
    case ErrorCode::kBusy: return "Busy";
    case ErrorCode::kStorageError: return "StorageError";
    case ErrorCode::kGitError: return "GitError";
    case ErrorCode::kForbidden: return "Forbidden";
    case ErrorCode::kNotInitialized: return "NotInitialized";
  }
  return "Unknown";
}

}  // namespace memq
