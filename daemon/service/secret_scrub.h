// SecretScrubber: the one way a request's free text passes the secret scanner before anything stores it, under the
// daemon's SecretsMode (memqd --secrets): redact rewrites each credential and keeps a Redaction {kind, field} per
// finding; refuse fails the request at the first field holding one. Neither a result nor an error quotes the secret.
// Thread-safety: a SecretScrubber belongs to one request.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/status.h"

namespace memq {

enum class SecretsMode { kRedact, kRefuse };

// "redact" | "refuse"; nullopt for anything else.
std::optional<SecretsMode> parseSecretsMode(std::string_view text);

// One credential rewritten out of a field: which kind it was, and the field ("summary", "topics[2]", ...).
struct Redaction {
  std::string kind;
  std::string field;
};

class SecretScrubber {
 public:
  explicit SecretScrubber(SecretsMode mode) : mode_(mode) {}

  // `text` named `field`: rewritten in place (redact), or InvalidParams naming the field and the kinds (refuse).
  Status scrub(std::string& text, const std::string& field);
  Status scrub(std::optional<std::string>& text, const std::string& field);  // nothing to do for nullopt
  // Each element, named field[i].
  Status scrubEach(std::vector<std::string>& texts, const std::string& field);

  // What redact mode rewrote so far, in order. A field that is not a memory's text (a state change's reason, a
  // client's name) is scrubbed the same way, and its findings are simply not reported.
  std::vector<Redaction> takeRedactions() { return std::move(redactions_); }

 private:
  SecretsMode mode_;
  std::vector<Redaction> redactions_;
};

}  // namespace memq
