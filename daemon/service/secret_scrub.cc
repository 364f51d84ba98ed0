// The secret scrub of request text; see secret_scrub.h.
#include "daemon/service/secret_scrub.h"

#include <algorithm>

#include "daemon/secrets/secret_scanner.h"

namespace memq {

std::optional<SecretsMode> parseSecretsMode(std::string_view text) {
  if (text == "redact") return SecretsMode::kRedact;
  if (text == "refuse") return SecretsMode::kRefuse;
  return std::nullopt;
}

Status SecretScrubber::scrub(std::string& text, const std::string& field) {
  std::vector<std::string> kinds;
  std::string redacted = redactSecrets(text, &kinds);
  if (kinds.empty()) return Status::ok();
  if (mode_ == SecretsMode::kRefuse) {
    std::vector<std::string> distinct;
    for (const auto& k : kinds) {
      if (std::find(distinct.begin(), distinct.end(), k) == distinct.end()) distinct.push_back(k);
    }
    std::string names;
    for (const auto& k : distinct) names += (names.empty() ? "" : ", ") + k;
    return Status(ErrorCode::kInvalidParams,
                  "a credential was found in " + field + " (" + names +
                      "); this memqd refuses to store credentials (--secrets=refuse), so nothing was changed",
                  nlohmann::json{{"field", field}, {"kinds", distinct}});
  }
  for (const auto& k : kinds) redactions_.push_back({k, field});
  text = std::move(redacted);
  return Status::ok();
}

Status SecretScrubber::scrub(std::optional<std::string>& text, const std::string& field) {
  return text ? scrub(*text, field) : Status::ok();
}

Status SecretScrubber::scrubEach(std::vector<std::string>& texts, const std::string& field) {
  for (size_t i = 0; i < texts.size(); ++i) {
    MEMQ_RETURN_IF_ERROR(scrub(texts[i], field + "[" + std::to_string(i) + "]"));
  }
  return Status::ok();
}

}  // namespace memq
