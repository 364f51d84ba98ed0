// What the MemoryStore tests share: a temp directory holding a project root and the data directory, the embedder
// and actor every store and save uses, options for a store on a real file there, and a save normalised as the
// service normalises it. Each suite derives from StoreFixture and adds its own helpers.
#pragma once

#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/store/memory_store.h"
#include "tests/unit/store/store_test_access.h"

namespace memq::testing {

class StoreFixture : public ::testing::Test {
 protected:
  explicit StoreFixture(std::string tag) : tag_(std::move(tag)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("memq-" + tag_ + "-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_ / "root");
    root_ = (dir_ / "root").string();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A project-scope store's options on `<dataDir>/memory.db`.
  StoreOptions optionsAt(const std::filesystem::path& dataDir) const {
    StoreOptions o;
    o.path = (dataDir / "memory.db").string();
    o.scope = "project";
    o.projectRoot = root_;
    o.embedder = &embedder_;
    return o;
  }

  // `in` normalised against the project root, its files referenced without blob ids, saved by actor_.
  Result<SaveOutcome> saveInput(MemoryStore& store, const SaveInput& in) {
    auto n = normalizeSave(in, root_);
    EXPECT_TRUE(n.isOk()) << n.status().toString();
    if (!n.isOk()) return n.status();
    std::vector<FileRef> refs;
    for (const auto& f : n->files) refs.push_back({f, std::nullopt});
    return store.save(*n, refs, actor_);
  }

  static int64_t count(MemoryStore& store, const std::string& sql) {
    return MemoryStoreTestAccess::database(store).execAndGet(sql).getInt64();
  }

  HashbagEmbedder embedder_;
  std::filesystem::path dir_;
  std::string root_;
  Actor actor_{"agent", "test"};
  std::unique_ptr<MemoryStore> store_;

 private:
  std::string tag_;
};

}  // namespace memq::testing
