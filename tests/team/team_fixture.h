// What the team server tests share: one throwaway PostgreSQL cluster per test binary (tests/common/pg_cluster.h),
// started by a gtest environment before the first suite and stopped after the last, and per test a database of its own owned by the non-superuser `memq_owner` and
// migrated by it, with the login roles the tests act as: alice and bob (memq_team_writer), rita (memq_team_reader), mona (memq_team_maintainer).
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "common/pg_cluster.h"
#include "daemon/team/team_client.h"

namespace memq::test {

class TeamFixture : public ::testing::Test {
 protected:
  friend class TeamClusterEnvironment;
  void SetUp() override {
    // Not skipped: `make test` installs the server, so a missing one is a broken setup, not an optional test.
    ASSERT_TRUE(cluster_ && startError_.empty()) << startError_;
    db_ = databaseName();
    ASSERT_EQ(cluster_->createDatabase(db_, "memq_owner"), "");
    owner_ = connectAs("memq_owner");
    ASSERT_TRUE(owner_);
    Status migrated = owner_->migrate();
    ASSERT_TRUE(migrated.isOk()) << migrated.toString();
    if (!rolesMade_) {
      ASSERT_EQ(cluster_->createRole("alice", {"memq_team_writer"}), "");
      ASSERT_EQ(cluster_->createRole("bob", {"memq_team_writer"}), "");
      ASSERT_EQ(cluster_->createRole("rita", {"memq_team_reader"}), "");
      ASSERT_EQ(cluster_->createRole("mona", {"memq_team_maintainer"}), "");
      rolesMade_ = true;
    }
  }

  // A connected client for `role` on this test's database (null, with a failure recorded, if it cannot connect).
  std::unique_ptr<TeamClient> connectAs(const std::string& role, const std::string& db = "") {
    auto c = TeamClient::connect(cluster_->conninfo(db.empty() ? db_ : db, role));
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c ? std::move(*c) : nullptr;
  }
  // Raw SQL as `role` (the superuser by default) on this test's database.
  SqlOutcome sql(const std::string& statement, const std::string& role = "memq_admin") {
    return runSql(cluster_->conninfo(db_, role), statement);
  }
  // The first cell of the first row of a superuser query, as text ("" for none).
  std::string scalar(const std::string& statement) {
    SqlOutcome r = sql(statement);
    EXPECT_TRUE(r.ok) << statement << ": " << r.message;
    return r.rows.empty() || r.rows[0].empty() ? "" : r.rows[0][0].value_or("");
  }

  static SaveInput text(const std::string& summary, const std::string& details = "") {
    SaveInput in;
    in.summary = summary;
    in.details = details;
    return in;
  }

  static inline PgCluster* cluster_ = nullptr;
  static inline std::string startError_;
  static inline bool rolesMade_ = false;
  std::string db_;
  std::unique_ptr<TeamClient> owner_;

 private:
  // The test's own database: its suite and name, lowercased, within PostgreSQL's 63-byte identifiers.
  static std::string databaseName() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("t_") + info->test_suite_name() + "_" + info->name();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    return name.substr(0, 63);
  }
};

// Starts the cluster once for the binary; TearDown stops it and removes its directory.
class TeamClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    spdlog::set_level(spdlog::level::warn);  // every test connects several times; the connect lines are noise here
    TeamFixture::cluster_ = new PgCluster();
    TeamFixture::startError_ = TeamFixture::cluster_->start();
    // CREATEROLE: the first migration creates the group roles.
    if (TeamFixture::startError_.empty()) {
      TeamFixture::startError_ = TeamFixture::cluster_->createRole("memq_owner", {}, "CREATEROLE");
    }
  }
  void TearDown() override {
    delete TeamFixture::cluster_;
    TeamFixture::cluster_ = nullptr;
  }
};

}  // namespace memq::test
