// The migration runner shared by the SQLite and PostgreSQL backends; see migration_runner.h.
#include "migration_runner.h"

namespace memq {

namespace {

Status refuseNewer(const std::string& what, int recorded, int latest) {
  return Status(ErrorCode::kStorageError,
                what + " was written by a newer memq (schema version " + std::to_string(recorded) +
                    "; this memqd knows up to " + std::to_string(latest) + "); upgrade memq to open it");
}

// The runner applies `migrations` in list order and takes the last as the newest, so two scripts with one number
// (two branches merged) or out of order would both run, or one be skipped, without a word. The build refuses such
// a set (embed_migrations.cmake); this refuses it again, before the backend is touched.
Status checkStrictlyIncreasing(const std::vector<Migration>& migrations, const std::string& what) {
  for (size_t i = 1; i < migrations.size(); ++i) {
    const Migration& before = migrations[i - 1];
    const Migration& m = migrations[i];
    if (m.version > before.version) continue;
    return Status::internal("cannot migrate " + what + ": the migrations built into this memq are not in strictly " +
                            "increasing order of version: " + std::string(m.name) + " (version " +
                            std::to_string(m.version) + ") follows " + std::string(before.name) + " (version " +
                            std::to_string(before.version) + "); the build is broken, not the database");
  }
  return Status::ok();
}

}  // namespace

int latestVersion(const std::vector<Migration>& migrations) {
  return migrations.empty() ? 0 : migrations.back().version;
}

Status runMigrations(MigrationBackend& backend, const std::vector<Migration>& migrations, int maxVersion,
                     const std::string& what) {
  MEMQ_RETURN_IF_ERROR(checkStrictlyIncreasing(migrations, what));
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
