// Base64 (RFC 4648, standard alphabet, padded): how bytes that need not be UTF-8 travel inside JSON, as the file
// versions memq keeps do in the save journal and in export lines. Pure; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace memq {

std::string base64Encode(std::string_view bytes);
// nullopt for text that is not padded standard base64 (a stray character, a length that is not a multiple of 4).
std::optional<std::string> base64Decode(std::string_view text);

}  // namespace memq
