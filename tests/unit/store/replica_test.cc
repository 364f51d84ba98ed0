// A team replica's writes (MemoryStore::applyReplicated): a page of journal rows applied at once must leave the
// same similar edges as the same rows applied one page each (one row at a time, each entering the active index
// before the next): the page's rows link to each other and to the rows before it, a row an earlier change of the
// page hid, superseded or purged is no one's neighbour after that change (a purged row's pk taken by a new row
// included), and the replica's seq is the page's last.
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <barrier>
#include <cstdio>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/unit/store/store_fixture.h"

namespace memq::testing {
namespace {

using Edges = std::vector<std::tuple<std::string, std::string, double>>;

class ReplicaTest : public StoreFixture {
 protected:
  ReplicaTest() : StoreFixture("replica") {}

  std::unique_ptr<MemoryStore> openReplica(const std::string& name) {
    StoreOptions o = optionsAt(dir_ / name);
    o.scope = "team";
    auto s = MemoryStore::open(o);
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(*s) : nullptr;
  }

  static std::string idOf(int i) {
    char id[40];
    std::snprintf(id, sizeof id, "00000000-0000-4000-8000-%012d", i);
    return id;
  }

  // Memory i as the server holds it: two families of texts (words shared within a family, none across), so edges
  // form within a family and the 0.4 threshold and the top 8 both cut.
  static Memory memory(int i, MemoryState state = MemoryState::kActive) {
    static const char* kWords[] = {"cache", "deploy", "staging", "flag", "worker", "queue", "retry", "timeout"};
    Memory m;
    m.id = idOf(i);
    m.summary = i % 2 ? std::string("the staging deploy needs the no-cache flag for ") + kWords[i % 8] + " " +
                            kWords[(i / 3) % 8]
                      : std::string("parser rejects unicode escapes in ") + kWords[(i / 2) % 8] + " literal " +
                            std::to_string(i % 5);
    m.details = "item " + std::to_string(i);
    m.source = "user";
    m.createdAt = m.updatedAt = m.lastUsedAt = "2026-01-01T00:00:00.000Z";
    m.state = state;
    m.contentHash = std::string(60, 'a') + std::to_string(1000 + i);
    return m;
  }

  static ReplicatedChange change(int64_t seq, const std::string& action, Memory m) {
    return ReplicatedChange{seq, "2026-01-01T00:00:00.000Z", "alice", action, std::move(m)};
  }

  static ReplicatedChange purge(int64_t seq, int i) {
    Memory gone;
    gone.id = idOf(i);
    ReplicatedChange c = change(seq, "purge", gone);
    c.purged = true;
    return c;
  }

  static Edges edges(MemoryStore& store) {
    SQLite::Statement q(MemoryStoreTestAccess::database(store),
                        "SELECT a.id, b.id, e.weight FROM memory_edges e JOIN memories a ON a.pk = e.src_pk "
                        "JOIN memories b ON b.pk = e.dst_pk WHERE e.kind = 'similar' ORDER BY 1, 2");
    Edges out;
    while (q.executeStep()) {
      out.emplace_back(q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getDouble());
    }
    return out;
  }
};

TEST_F(ReplicaTest, APageLinksItsRowsAsOneRowAtATimeWould) {
  // Page 1: 20 memories. Page 2: 30 more, with a hide of memory 5, a supersede of memory 7 (by memory 30) and
  // purges of memory 19 (the highest pk: the next new row takes it) and memory 11 among them; a journal row carries
  // the memory's state now, so each of a memory's rows in a page has its final state.
  std::vector<ReplicatedChange> first, second;
  int64_t seq = 0;
  for (int i = 0; i < 20; ++i) first.push_back(change(++seq, "create", memory(i)));
  second.push_back(purge(++seq, 19));
  for (int i = 20; i < 50; ++i) {
    second.push_back(change(++seq, "create", memory(i)));
    if (i == 24) second.push_back(purge(++seq, 11));
    if (i == 29) second.push_back(change(++seq, "hide", memory(5, MemoryState::kHidden)));
    if (i == 39) {
      Memory replaced = memory(7, MemoryState::kSuperseded);
      replaced.supersededBy = idOf(30);
      second.push_back(change(++seq, "supersede", replaced));
    }
  }
  auto paged = openReplica("paged");
  auto single = openReplica("single");
  ASSERT_TRUE(paged && single);
  for (auto* page : {&first, &second}) {
    auto applied = paged->applyReplicated(*page);
    ASSERT_TRUE(applied.isOk()) << applied.status().toString();
    EXPECT_EQ(applied->size(), page->size());
    for (const auto& c : *page) ASSERT_TRUE(single->applyReplicated({c}).isOk());
  }
  const Edges got = edges(*paged);
  EXPECT_EQ(got, edges(*single));
  // The page's rows are linked to each other (both ends in page 2), and no edge ends at a row hidden or superseded.
  size_t withinSecondPage = 0;
  for (const auto& [a, b, weight] : got) {
    if (a > idOf(19) && b > idOf(19)) ++withinSecondPage;
    EXPECT_NE(a, idOf(5));
    EXPECT_NE(b, idOf(5));
    EXPECT_NE(a, idOf(7));
    EXPECT_NE(b, idOf(7));
    for (int gone : {11, 19}) {
      EXPECT_NE(a, idOf(gone));
      EXPECT_NE(b, idOf(gone));
    }
    EXPECT_GE(weight, 0.4);
  }
  EXPECT_GT(withinSecondPage, 20u);
  auto lastSeq = paged->replicaSeq();
  ASSERT_TRUE(lastSeq.isOk()) << lastSeq.status().toString();
  EXPECT_EQ(*lastSeq, seq);
}

TEST_F(ReplicaTest, TwoWritersOfOneReplicaApplyEachChangeOnce) {
  // Two connections to one replica file (two memqd of one data dir, each with its sync thread) handed the same page
  // at the same moment: the one that waits for the other's transaction must see the seq it committed, not the one
  // it read before it waited, and apply nothing twice.
  for (int round = 0; round < 8; ++round) {
    const std::string name = "shared-" + std::to_string(round);
    auto first = openReplica(name);
    auto second = openReplica(name);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    std::vector<ReplicatedChange> page;
    for (int i = 1; i <= 12; ++i) page.push_back(change(i, "create", memory(i)));
    std::barrier start(2);
    Result<std::vector<ReplicatedChange>> a = Status::internal("not run"), b = Status::internal("not run");
    std::thread other([&] {
      start.arrive_and_wait();
      b = second->applyReplicated(page);
    });
    start.arrive_and_wait();
    a = first->applyReplicated(page);
    other.join();
    ASSERT_TRUE(a.isOk()) << a.status().toString();
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    EXPECT_EQ(a->size() + b->size(), page.size()) << "round " << round;
    EXPECT_EQ(count(*first, "SELECT COUNT(*) FROM memory_events"), 12) << "round " << round;
    EXPECT_EQ(count(*first, "SELECT COUNT(*) FROM memories"), 12) << "round " << round;
  }
}

}  // namespace
}  // namespace memq::testing
