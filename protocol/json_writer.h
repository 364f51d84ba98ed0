// JsonWriter: appends compact JSON text to a string, byte for byte what serializeMessage (nlohmann's compact dump,
// invalid UTF-8 replaced by U+FFFD, no ASCII escaping) gives for the same value, without building a nlohmann tree
// first. Owns only the text form of each JSON value (string escaping, number format, separators); what a record
// holds, and the key order (serializeMessage sorts object keys byte-wise), is the caller's to write.
//
// Used for the largest replies memqd sends (recall and search results): building the tree and then dumping it cost
// more than the writing itself.
// Thread-safety: none; one writer per string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memq {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void beginObject();
  void endObject();
  void beginArray();
  void endArray();
  // An object member's key; the member's value is whatever is written next.
  void key(std::string_view name);

  void string(std::string_view text);
  void integer(std::int64_t value);
  void number(double value);  // NaN and infinities are written as null, as nlohmann does
  void boolean(bool value);
  void null();
  // A value that is already JSON text in serializeMessage's form (e.g. a small nlohmann value dumped apart).
  void raw(std::string_view json);

 private:
  void separate();

  std::string& out_;
  bool needComma_ = false;  // a value was written at the current level: the next one needs ','
};

// Appends `text` as a JSON string literal (quotes included), escaped exactly as serializeMessage escapes it.
void appendJsonString(std::string& out, std::string_view text);

}  // namespace memq
