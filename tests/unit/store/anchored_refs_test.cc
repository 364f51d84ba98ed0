// The anchored refs recall reads (MemoryStore::anchoredRefsOn) come from the mirror, not from SQLite: these tests
// check that they are always the ones the tables hold — after saves with and without kept versions, re-anchoring,
// detaching, state changes and a commit by another connection — in the documented order (by path as asked, then
// pk), with the kept versions' content, and never a ref of a row that is not active; and that a read pass reads
// one snapshot.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/store/store_fixture.h"

namespace memq::testing {
namespace {

class AnchoredRefsTest : public StoreFixture {
 protected:
  AnchoredRefsTest() : StoreFixture("anchored-refs") {}

  void SetUp() override {
    StoreFixture::SetUp();
    auto s = MemoryStore::open(optionsAt(dir_ / "data"));
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    store_ = std::move(*s);
  }

  std::string save(const std::string& summary, const std::vector<FileRef>& refs) {
    SaveInput in;
    in.summary = summary;
    for (const auto& r : refs) in.files.push_back(r.path);
    auto n = normalizeSave(in, root_);
    EXPECT_TRUE(n.isOk()) << n.status().toString();
    auto r = store_->save(*n, refs, actor_);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? r->id : std::string();
  }
  int64_t pk(const std::string& id) { return *store_->pkOf(id); }

  // What the tables hold (every active row's anchored refs, read by SQL), cut to `paths` and `pks` and ordered as
  // anchoredRefsOn promises.
  std::vector<AnchoredRef> fromTables(const std::vector<std::string>& paths, const std::vector<int64_t>& pks) {
    auto all = store_->activeAnchoredRefs();
    EXPECT_TRUE(all.isOk()) << all.status().toString();
    std::vector<AnchoredRef> out;
    for (const auto& path : paths) {
      for (const auto& ref : *all) {
        if (ref.path == path && std::count(pks.begin(), pks.end(), ref.pk) != 0) out.push_back(ref);
      }
    }
    std::stable_sort(out.begin(), out.end(), [&](const AnchoredRef& a, const AnchoredRef& b) {
      auto place = [&](const std::string& p) { return std::find(paths.begin(), paths.end(), p) - paths.begin(); };
      return place(a.path) != place(b.path) ? place(a.path) < place(b.path) : a.pk < b.pk;
    });
    return out;
  }

  void expectAsTheTables(const std::vector<std::string>& paths, const std::vector<int64_t>& pks) {
    auto got = store_->anchoredRefsOn(paths, pks);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    const auto want = fromTables(paths, pks);
    ASSERT_EQ(got->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE("ref " + std::to_string(i));
      EXPECT_EQ((*got)[i].pk, want[i].pk);
      EXPECT_EQ((*got)[i].path, want[i].path);
      EXPECT_EQ((*got)[i].anchor.lines, want[i].anchor.lines);
      EXPECT_EQ((*got)[i].anchor.blob, want[i].anchor.blob);
      ASSERT_EQ((*got)[i].anchor.keptContent == nullptr, want[i].anchor.keptContent == nullptr);
      if (want[i].anchor.keptContent) {
        EXPECT_EQ(*(*got)[i].anchor.keptContent, *want[i].anchor.keptContent);
      }
    }
  }

  const std::shared_ptr<const std::string> dirtyA_ = std::make_shared<const std::string>("one\ntwo\nthree\nfour\n");
  const std::string dirtyBlobA_ = std::string(40, 'a');
  const std::string committedBlob_ = std::string(40, 'b');
};

TEST_F(AnchoredRefsTest, AfterSavesReAnchoringAndDetachingTheMirrorAnswersAsTheTables) {
  const std::string a = save("kept version of a.c", {{"src/a.c", std::nullopt, FileAnchor{{{2, 3}}, dirtyBlobA_, dirtyA_}}});
  const std::string b = save("committed a.c and a plain b.c",
                             {{"src/a.c", std::nullopt, FileAnchor{{{1, 1}}, committedBlob_, nullptr}},
                              {"src/b.c", std::nullopt, std::nullopt}});
  const std::string c = save("both files anchored",
                             {{"src/a.c", std::nullopt, FileAnchor{{{4, 4}}, dirtyBlobA_, dirtyA_}},
                              {"src/b.c", std::nullopt, FileAnchor{{{7, 9}}, committedBlob_, nullptr}}});
  const std::vector<int64_t> all = {pk(c), pk(a), pk(b)};
  expectAsTheTables({"src/b.c", "src/a.c"}, all);
  expectAsTheTables({"src/a.c"}, {pk(b)});
  expectAsTheTables({"src/zzz.c"}, all);

  // Re-anchored to another kept version: the old one goes from the tables and must go from the answer.
  const auto dirtyB = std::make_shared<const std::string>("x\ny\n");
  ASSERT_TRUE(store_->attach(c, {{"src/a.c", std::nullopt, FileAnchor{{{1, 2}}, std::string(40, 'd'), dirtyB}}},
                             actor_).isOk());
  ASSERT_TRUE(store_->detach(b, {"src/a.c"}, actor_).isOk());
  expectAsTheTables({"src/a.c", "src/b.c"}, all);
  auto refs = store_->anchoredRefsOn({"src/a.c"}, {pk(c)});
  ASSERT_TRUE(refs.isOk());
  ASSERT_EQ(refs->size(), 1u);
  ASSERT_NE((*refs)[0].anchor.keptContent, nullptr);
  EXPECT_EQ(*(*refs)[0].anchor.keptContent, *dirtyB);
}

TEST_F(AnchoredRefsTest, RowsThatAreNotActiveGiveNoRefsUntilRestored) {
  const std::string a = save("hidden later", {{"src/a.c", std::nullopt, FileAnchor{{{1, 1}}, committedBlob_, nullptr}}});
  const std::string b = save("rejected later", {{"src/a.c", std::nullopt, FileAnchor{{{2, 2}}, dirtyBlobA_, dirtyA_}}});
  const std::string c = save("stays", {{"src/a.c", std::nullopt, FileAnchor{{{3, 3}}, committedBlob_, nullptr}}});
  ASSERT_TRUE(store_->hide(a, std::string("outdated"), actor_).isOk());
  ASSERT_TRUE(store_->reject(b, "wrong", actor_).isOk());
  auto refs = store_->anchoredRefsOn({"src/a.c"}, {pk(a), pk(b), pk(c)});
  ASSERT_TRUE(refs.isOk());
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ((*refs)[0].pk, pk(c));
  expectAsTheTables({"src/a.c"}, {pk(a), pk(b), pk(c)});

  ASSERT_TRUE(store_->restore(a, actor_).isOk());
  expectAsTheTables({"src/a.c"}, {pk(a), pk(b), pk(c)});
  refs = store_->anchoredRefsOn({"src/a.c"}, {pk(a), pk(b), pk(c)});
  ASSERT_TRUE(refs.isOk());
  EXPECT_EQ(refs->size(), 2u);
}

TEST_F(AnchoredRefsTest, ACommitByAnotherConnectionIsSeenByTheNextRead) {
  const std::string a = save("anchored", {{"src/a.c", std::nullopt, FileAnchor{{{1, 1}}, committedBlob_, nullptr}}});
  ASSERT_TRUE(store_->anchoredRefsOn({"src/a.c"}, {pk(a)}).isOk());  // the mirror is loaded
  {
    SQLite::Database other((dir_ / "data" / "memory.db").string(), SQLite::OPEN_READWRITE);
    // As memq's own writes of a ref do, the row is touched with it (migration 0011 counts rows' changes).
    other.exec("UPDATE memory_files SET anchor_lines = '5-6' WHERE path = 'src/a.c'");
    other.exec("UPDATE memories SET updated_at = updated_at WHERE id = '" + a + "'");
  }
  auto refs = store_->anchoredRefsOn({"src/a.c"}, {pk(a)});
  ASSERT_TRUE(refs.isOk());
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ((*refs)[0].anchor.lines, (LineRanges{{5, 6}}));
}

TEST_F(AnchoredRefsTest, AReadPassReadsOneSnapshotAndTheNextPassSeesAnotherConnectionsCommit) {
  const std::string a = save("anchored", {{"src/a.c", std::nullopt, FileAnchor{{{1, 1}}, committedBlob_, nullptr}}});
  auto linesNow = [&] {
    auto refs = store_->anchoredRefsOn({"src/a.c"}, {pk(a)});
    EXPECT_TRUE(refs.isOk());
    return refs.isOk() && refs->size() == 1 ? (*refs)[0].anchor.lines : LineRanges{};
  };
  store_->beginReadPass();
  EXPECT_EQ(linesNow(), (LineRanges{{1, 1}}));
  {
    SQLite::Database other((dir_ / "data" / "memory.db").string(), SQLite::OPEN_READWRITE);
    // As memq's own writes of a ref do, the row is touched with it (migration 0011 counts rows' changes).
    other.exec("UPDATE memory_files SET anchor_lines = '5-6' WHERE path = 'src/a.c'");
    other.exec("UPDATE memories SET updated_at = updated_at WHERE id = '" + a + "'");
  }
  EXPECT_EQ(linesNow(), (LineRanges{{1, 1}}));  // the pass's snapshot
  store_->endReadPass();
  store_->beginReadPass();
  EXPECT_EQ(linesNow(), (LineRanges{{5, 6}}));
  store_->endReadPass();
}

}  // namespace
}  // namespace memq::testing
