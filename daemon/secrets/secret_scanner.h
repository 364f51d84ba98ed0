// Secret scanner: finds credentials in free text (a memory's summary, details, topics, session id, a state change's
// reason, a client's name, a file path) so they can be redacted before anything is stored, indexed, logged or
// journalled — or the request refused (memqd --secrets=refuse; a path is always refused, never rewritten).
//
// Detected kinds (the `kind` string is part of the wire contract: it appears in `[REDACTED:kind]` and in a save's
// `redactions[]`):
//   private_key        -----BEGIN ... PRIVATE KEY----- through its END line (or to the end of the text if cut off)
//   aws_access_key     AKIA / ASIA + 16 upper-case letters or digits
//   github_token       ghp_ gho_ ghu_ ghs_ ghr_ + 30 or more, github_pat_ + 22 or more
//   gitlab_token       glpat- + 20 or more
//   slack_token        xoxa- xoxb- xoxp- xoxr- xoxs- + 10 or more
//   openai_key         sk-… / sk-proj-… / sk-ant-… of 20 or more characters with letters and digits
//   stripe_key         sk_live_ / rk_live_ + 20 or more letters and digits
//   google_api_key     AIza + 35 letters, digits, - or _
//   npm_token          npm_ + 36 or more letters and digits, mixing both
//   slack_webhook      hooks.slack.com/services/… or /workflows/… (the path after it is replaced)
//   azure_key          AccountKey=… / SharedAccessKey=… of 20 or more base64 characters (only the value is replaced)
//   jwt                three base64url segments, the first starting eyJ
//   connection_string  scheme://user:password@host (only the password is replaced)
//   password, secret, api_key, token
//                      `name = value`, `name: value`, `"name": "value"` where name ends in one of those words and
//                      the value is long enough, not a placeholder, not code, and of high Shannon entropy (only the
//                      value is replaced)
//                      and the same words as a command-line option: `--password X`, `--db-password=X`, `--token 'X'`
//                      where X is at least 6 bytes, not a placeholder, not another option and not a plain word
//                      Neither takes a file-system path for a credential (`/`, `./`, `../` or `~/`, then only letters,
//                      digits and `._-/`: `passwd: /etc/passwd`, unless a run of 12 or more letters and digits mixes
//                      upper case, lower case and digits, as base64 does), nor the shell's OLDPWD, nor PWD set to an
//                      absolute path (PWD is otherwise an ODBC password).
//
// Invariants:
//  1. Linear in the input; no std::regex (no recursion, no backtracking blow-up on 1 MiB inputs).
//  2. Byte-oriented: works on any bytes, valid UTF-8 or not. Each edge of a finding has an ASCII byte on one side
//     (or is an end of the text), so redacting valid UTF-8 leaves valid UTF-8.
//  3. Findings never overlap; specific kinds win over the generic assignment kinds. The list items of a generic value
//     before a specific finding (`password=Xk9#mQ2vL7w,AKIA…`) are still reported when they look like a credential.
//  4. Idempotent: redacting redacted text changes nothing (a `[REDACTED:…]` value is a placeholder).
//  5. A Finding carries offsets and a kind, never a copy of the secret.
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace memq {

struct SecretFinding {
  std::string kind;
  std::size_t begin = 0;  // byte offset of the secret's first byte
  std::size_t end = 0;    // one past its last byte
};

// Every credential in text, in order of position.
std::vector<SecretFinding> findSecrets(std::string_view text);

// text with every finding replaced by "[REDACTED:kind]"; the kinds replaced, in order, go to *kinds when given.
std::string redactSecrets(std::string_view text, std::vector<std::string>* kinds = nullptr);

// Shannon entropy of the byte distribution of s, in bits per byte (0 for an empty string).
double shannonEntropy(std::string_view s);

// True for values that only stand in for a secret: "changeme", "<password>", "${DB_PASS}", "xxxx", "****", …
bool isPlaceholderSecret(std::string_view value);

}  // namespace memq
