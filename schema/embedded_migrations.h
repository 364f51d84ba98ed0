// The SQL migrations compiled into memqd (generated from schema/migrations/ at build time).
#pragma once

#include <string_view>
#include <vector>

namespace memq {

struct Migration {
  int version;             // the NNNN prefix of the file name
  std::string_view name;   // file name without extension
  std::string_view sql;    // the whole script, applied in one transaction with the others
};

// All migrations, ascending by version.
const std::vector<Migration>& embeddedMigrations();

}  // namespace memq
