// The SQL migrations compiled into memq (generated at build time): schema/migrations/ for a scope's SQLite file,
// schema/team/ for the team scope's PostgreSQL server. migration_runner.h applies either set.
#pragma once

#include <string_view>
#include <vector>

namespace memq {

struct Migration {
  int version;             // the NNNN prefix of the file name
  std::string_view name;   // file name without extension
  std::string_view sql;    // the whole script, applied in one transaction with the others
};

// All migrations of schema/migrations/, ascending by version.
const std::vector<Migration>& embeddedMigrations();
// All migrations of schema/team/, ascending by version.
const std::vector<Migration>& embeddedTeamMigrations();

}  // namespace memq
