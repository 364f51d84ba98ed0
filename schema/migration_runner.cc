// The migration runner shared by the SQLite and PostgreSQL backends; see migration_runner.h.
#include "migration_runner.h"

namespace memq {

namespace {

Status refuseNewer(const std::string& what, int recorded, int latest) {
  return Status(ErrorCode::kStorageError,
                what + " was written by a newer memq (schema version " + std::to_string(recorded) +
                    "; this memqd knows up to " + std::to_string(latest) + "); upgrade memq to open it");
}

}  // namespace

int latestVersion(const std::vector<Migration>& migrations) {
  return migrations.empty() ? 0 : migrations.back().version;
}

Status runMigrations(MigrationBackend& backend, const std::vector<Migration>& migrations, int maxVersion,
                     const std::string& what) {
  const int latest = latestVersion(migrations);
  auto current = backend.recordedVersion();
  if (!current) return current.status();
  if (*current > latest) return refuseNewer(what, *current, latest);
  const int target = maxVersion < 0 ? latest : maxVersion;
  if (*current >= target) return Status::ok();
  Status failed = backend.begin();
  // Re-read under the write lock: another process may have migrated meanwhile.
  if (failed.isOk()) {
    current = backend.recordedVersion();
    if (!current) failed = current.status();
  }
  if (failed.isOk() && *current > latest) failed = refuseNewer(what, *current, latest);
  for (const auto& m : migrations) {
    if (!failed.isOk()) break;
    if (m.version <= *current || m.version > target) continue;
    failed = backend.apply(m);
  }
  if (failed.isOk()) failed = backend.commit();
  if (!failed.isOk()) backend.rollback();
  return failed;
}

}  // namespace memq
