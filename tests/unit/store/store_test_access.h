// MemoryStoreTestAccess: what the store tests reach inside a MemoryStore (the connection, to check the rows and
// break them, also under the background applier; the applier, to wait for it; the mirror, to count its rebuilds),
// through the friend MemoryStore declares for them.
#pragma once

#include <SQLiteCpp/Database.h>

#include "daemon/store/memory_store.h"
#include "daemon/store/recall_mirror.h"
#include "daemon/store/save_pipeline.h"
#include "daemon/store/store_sql.h"

namespace memq {

class MemoryStoreTestAccess {
 public:
  // The store's connection, taken back from the background applier first.
  static SQLite::Database& database(MemoryStore& store) {
    store.takeDatabase();
    return store.sql_->database();
  }
  // Returns once every save handed to the background applier is written into the open transaction (not
  // committed); a no-op without one. For tests that copy the files as a crash would leave them.
  static void waitForAppliedSaves(MemoryStore& store) { store.takeDatabase(); }
  // Waits until the background applier has nothing left to do, without taking the connection back; true when it
  // failed (the next call then rebuilds the in-memory indexes and replays its saves).
  static bool waitForApplierIdle(MemoryStore& store) { return store.saves_->waitForApplierIdle(); }
  // The store's connection left with the background applier (not taken back): for a test that ends the applier's
  // open transaction while the applier is idle (waitForApplierIdle), as SQLite does by itself after some errors.
  static SQLite::Database& connectionLeftToTheApplier(MemoryStore& store) { return store.sql_->database(); }
  // How many times the store's mirror read every row (RecallMirror::rowLoads).
  static uint64_t mirrorRowLoads(MemoryStore& store) { return store.mirror_->rowLoads(); }
};

}  // namespace memq
