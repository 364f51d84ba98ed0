// Unit tests of the git layer's pure parts: ignore globs, the co-change tallies and neighbour table, import
// scanning per language, and blast-radius damping. No repository involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "daemon/git/cochange_counts.h"
#include "daemon/git/cochange_snapshot.h"
#include "daemon/git/dependency_graph.h"
#include "daemon/git/import_scanner.h"
#include "daemon/git/path_filter.h"

namespace memq {
namespace {

TEST(PathFilter, DefaultsCatchLockfilesGeneratedFilesAndVendoredTrees) {
  PathFilter f(defaultIgnoreGlobs());
  for (const char* p : {"package-lock.json", "web/package-lock.json", "yarn.lock", "a/b/Cargo.lock", "go.sum",
                        "poetry.lock", "composer.lock", "Gemfile.lock", "pnpm-lock.yaml", "x.lock", "app.min.js",
                        "css/site.min.css", "bundle.js.map", "__snapshots__/a.test.ts.snap",
                        "node_modules/react/index.js", "web/node_modules/x/y.js", "dist/app.js", "pkg/dist/a.js",
                        "vendor/github.com/x/y.go"}) {
    EXPECT_TRUE(f.ignored(p)) << p;
  }
  for (const char* p : {"src/lock.c", "locksmith.py", "main.js", "distance.c", "src/vendors.ts", "mapper.cc",
                        "dist", "vendor.go", "my_node_modules/a.js"}) {
    EXPECT_FALSE(f.ignored(p)) << p;
  }
}

TEST(PathFilter, PathPatternsAndDirectoryPaths) {
  PathFilter f({"docs/*.md", "third_party/gen/", "CHANGELOG*"});
  EXPECT_TRUE(f.ignored("docs/a.md"));
  EXPECT_FALSE(f.ignored("docs/sub/a.md"));  // FNM_PATHNAME: '*' stays in one directory
  EXPECT_FALSE(f.ignored("src/docs/a.md"));
  EXPECT_TRUE(f.ignored("third_party/gen/deep/x.c"));
  EXPECT_FALSE(f.ignored("third_party/other/x.c"));
  EXPECT_TRUE(f.ignored("CHANGELOG.md"));
  EXPECT_TRUE(f.ignored("sub/CHANGELOG"));
  EXPECT_NE(PathFilter({"a"}).fingerprint(), PathFilter({"b"}).fingerprint());
}

// The reference's broken neighbour query returned b:54 and 0:7 for these pairs; grouped by
// partner, d must come first.
TEST(CoChangeSnapshot, GroupsByPartnerAndRanksByStrength) {
  CoChangeCounts counts;
  counts.head = "h";
  for (int i = 0; i < 2; ++i) counts.addCommit({"a", "b"});
  for (int i = 0; i < 2; ++i) counts.addCommit({"a", "c"});
  for (int i = 0; i < 50; ++i) counts.addCommit({"a", "d"});
  for (int i = 0; i < 7; ++i) counts.addCommit({"0", "a"});
  auto snap = CoChangeSnapshot::build(counts, "", 2, nullptr);
  auto n = snap->neighbors("a", 10);
  ASSERT_EQ(n.size(), 4u);
  const double changesA = 61;
  EXPECT_EQ(n[0].path, "d");
  EXPECT_EQ(n[0].count, 50);
  EXPECT_DOUBLE_EQ(n[0].strength, 50 / std::sqrt(changesA * 50));
  EXPECT_EQ(n[1].path, "0");
  EXPECT_EQ(n[1].count, 7);
  // b and c tie on strength and count: path order decides.
  EXPECT_EQ(n[2].path, "b");
  EXPECT_EQ(n[3].path, "c");
  EXPECT_DOUBLE_EQ(n[2].strength, n[3].strength);
  EXPECT_EQ(snap->neighbors("a", 1).size(), 1u);
  EXPECT_EQ(snap->pairCount(), 4u);
}

TEST(CoChangeSnapshot, StrengthOutranksRawCount) {
  CoChangeCounts counts;
  // x and y always change together (2 of 2); z co-changes with x 3 times but also changes alone a lot.
  for (int i = 0; i < 2; ++i) counts.addCommit({"x", "y"});
  for (int i = 0; i < 3; ++i) counts.addCommit({"x", "z"});
  for (int i = 0; i < 30; ++i) counts.addCommit({"z"});
  auto n = CoChangeSnapshot::build(counts, "", 2, nullptr)->neighbors("x", 5);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].path, "y");
  EXPECT_DOUBLE_EQ(n[0].strength, 2 / std::sqrt(5.0 * 2));
  EXPECT_EQ(n[1].path, "z");
  EXPECT_DOUBLE_EQ(n[1].strength, 3 / std::sqrt(5.0 * 33));
}

TEST(CoChangeSnapshot, PairsBelowMinCountAreCountedButNotServed) {
  CoChangeCounts counts;
  counts.addCommit({"a", "b"});
  EXPECT_EQ(counts.pairCount("a", "b"), 1);
  EXPECT_TRUE(CoChangeSnapshot::build(counts, "", 2, nullptr)->neighbors("a", 5).empty());
  counts.addCommit({"a", "b"});
  EXPECT_EQ(CoChangeSnapshot::build(counts, "", 2, nullptr)->neighbors("a", 5).size(), 1u);
  counts.removeCommit({"a", "b"});
  EXPECT_EQ(counts.pairCount("a", "b"), 1);
  counts.removeCommit({"a", "b"});
  EXPECT_EQ(counts.pairCount("a", "b"), 0);
  EXPECT_TRUE(counts.pairs().empty());
}

TEST(CoChangeSnapshot, MapsToASubdirectoryRootAndDropsOutsidersAndRejectedFiles) {
  CoChangeCounts counts;
  for (int i = 0; i < 2; ++i) counts.addCommit({"sub/a.c", "sub/b.c", "top.c", "sub/gone.c", "subway.c"});
  auto keep = [](const std::string& p) { return p != "sub/gone.c"; };
  auto snap = CoChangeSnapshot::build(counts, "sub", 2, keep);
  auto n = snap->neighbors("a.c", 10);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].path, "b.c");
  EXPECT_TRUE(snap->neighbors("sub/a.c", 10).empty());
  EXPECT_TRUE(snap->neighbors("gone.c", 10).empty());
}

TEST(ImportScanner, LanguageByFileName) {
  EXPECT_EQ(languageOf("a/b.cc"), SourceLanguage::kC);
  EXPECT_EQ(languageOf("x.H"), SourceLanguage::kC);
  EXPECT_EQ(languageOf("m.py"), SourceLanguage::kPython);
  EXPECT_EQ(languageOf("c.tsx"), SourceLanguage::kJs);
  EXPECT_EQ(languageOf("main.go"), SourceLanguage::kGo);
  EXPECT_EQ(languageOf("sub/go.mod"), SourceLanguage::kGoMod);
  EXPECT_EQ(languageOf("lib.rs"), SourceLanguage::kRust);
  EXPECT_EQ(languageOf("A.java"), SourceLanguage::kJava);
  EXPECT_EQ(languageOf("README.md"), SourceLanguage::kNone);
  EXPECT_EQ(languageOf("Makefile"), SourceLanguage::kNone);
  EXPECT_EQ(languageOf(".h"), SourceLanguage::kNone);
}

std::vector<std::string> specs(const std::vector<ImportRef>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) out.push_back(r.spec);
  return out;
}

TEST(ImportScanner, CIncludesSkipCommentedOnes) {
  auto refs = scanImports(SourceLanguage::kC,
                          "#include \"a.h\"\n  #  include <sys/b.h>\n// #include \"no1.h\"\n/*\n#include \"no2.h\"\n*/\n"
                          "#import \"objc.h\"\nint x; /* open\n#include \"no3.h\"\n */\n#define X \"#include\"\n");
  ASSERT_EQ(specs(refs), (std::vector<std::string>{"a.h", "sys/b.h", "objc.h"}));
  EXPECT_EQ(refs[0].kind, ImportKind::kIncludeQuoted);
  EXPECT_EQ(refs[1].kind, ImportKind::kIncludeAngle);
}

TEST(ImportScanner, PythonImportForms) {
  auto refs = scanImports(SourceLanguage::kPython,
                          "import os, a.b as ab\n"
                          "from pkg.core import run, stop as s\n"
                          "from . import sibling\n"
                          "from ..up import (x,\n    y)\n"
                          "def f():\n    import lazy.mod  # comment\n"
                          "\"\"\"\nimport not_me\n\"\"\"\n"
                          "x = 1; import after_semicolon\n"
                          "from star import *\n");
  ASSERT_EQ(specs(refs), (std::vector<std::string>{"os", "a.b", "pkg.core", ".", "..up", "lazy.mod",
                                                   "after_semicolon", "star"}));
  EXPECT_EQ(refs[2].names, (std::vector<std::string>{"run", "stop"}));
  EXPECT_EQ(refs[3].names, (std::vector<std::string>{"sibling"}));
  EXPECT_EQ(refs[4].names, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(refs[7].names.empty());
}

// A parenthesis inside a string literal once held the logical line open, so every import after it was missed.
TEST(ImportScanner, PythonParenthesesInStringsDoNotHideLaterImports) {
  auto refs = scanImports(SourceLanguage::kPython, "x = re.compile(r\"\\(\")\nimport foo\nfrom bar import baz\n");
  ASSERT_EQ(specs(refs), (std::vector<std::string>{"foo", "bar"}));
  EXPECT_EQ(refs[1].names, (std::vector<std::string>{"baz"}));
}

TEST(ImportScanner, PythonStringsAndCommentsOfEveryFormCountNoParentheses) {
  auto refs = scanImports(SourceLanguage::kPython,
                          "y = ')' + \"it's (\" + '\\'(' + u\"(\"  # a comment ( too\n"
                          "import first\n"
                          "z = b'''(\n''' ; import after_triple\n"
                          "w = f\"{x}(\" + Rb\"\\\"(\"\n"
                          "v = \"\"\"(\"\"\"\n"
                          "from qux import (a,  # why (\n    b)\n"
                          "s = \"unterminated (\n"
                          "import last\n");
  ASSERT_EQ(specs(refs), (std::vector<std::string>{"first", "after_triple", "qux", "last"}));
  EXPECT_EQ(refs[2].names, (std::vector<std::string>{"a", "b"}));
}

TEST(ImportScanner, JsImportForms) {
  auto refs = scanImports(SourceLanguage::kJs,
                          "import a from './a';\nimport { b } from \"../b\"\nimport './side-effect'\n"
                          "import type { T } from './types'\nexport * from './re'\nexport { c } from './c'\n"
                          "const d = require('./d')\nconst e = await import(`./e`)\n"
                          "// import no from './no1'\n/* require('./no2') */\nconst s = \"import x from './no3'\"\n"
                          "Array.from('abc'); obj.require('./no4')\n");
  EXPECT_EQ(specs(refs), (std::vector<std::string>{"./a", "../b", "./side-effect", "./types", "./re", "./c", "./d",
                                                   "./e"}));
}

TEST(ImportScanner, GoImportForms) {
  auto refs = scanImports(SourceLanguage::kGo,
                          "package main\nimport \"fmt\"\nimport (\n\t\"os\"\n\ts \"example.com/p/store\"\n"
                          "\t_ \"example.com/p/init\"\n\t. `example.com/p/dot`\n)\n// import \"no\"\n"
                          "func f() { x := 'a'; _ = \"import\" }\n");
  EXPECT_EQ(specs(refs), (std::vector<std::string>{"fmt", "os", "example.com/p/store", "example.com/p/init",
                                                   "example.com/p/dot"}));
  auto mod = scanImports(SourceLanguage::kGoMod, "// c\nmodule example.com/p // trailing\n\ngo 1.21\n");
  ASSERT_EQ(mod.size(), 1u);
  EXPECT_EQ(mod[0].kind, ImportKind::kGoModule);
  EXPECT_EQ(mod[0].spec, "example.com/p");
}

TEST(ImportScanner, RustModsAndUseTrees) {
  auto refs = scanImports(SourceLanguage::kRust,
                          "mod a;\npub mod b;\nmod inline_mod { }\npub(crate) mod c;\n"
                          "use crate::x::y::Z;\nuse super::w as ww;\nuse std::{io, fmt::Write};\n"
                          "use crate::{p, q::{r, s::*}};\nfn f<'a>(x: &'a str) -> char { 'c' }\n"
                          "// use crate::no;\nuse ::abs::path;\n");
  ASSERT_EQ(specs(refs), (std::vector<std::string>{"a", "b", "c", "crate::x::y::Z", "super::w", "std::io",
                                                   "std::fmt::Write", "crate::p", "crate::q::r", "crate::q::s",
                                                   "abs::path"}));
  EXPECT_EQ(refs[0].kind, ImportKind::kRustMod);
  EXPECT_EQ(refs[3].kind, ImportKind::kRustUse);
}

// A hostile file (1 MiB of `{` after `use`) must not recurse a frame per brace: memqd scans tracked files on the
// request path, and a stack overflow would end it. The imports before it are still found.
TEST(ImportScanner, ARustUseNestedAMillionDeepNeitherOverflowsNorHidesTheOtherImports) {
  const std::string text = "use crate::before;\nuse " + std::string(1u << 20, '{') + "\nuse crate::after;\n";
  const auto refs = scanImports(SourceLanguage::kRust, text);
  const auto found = specs(refs);
  EXPECT_NE(std::find(found.begin(), found.end(), "crate::before"), found.end());
  const auto nested = scanImports(SourceLanguage::kRust, "use a::{b::{c::{d, e::{f}}}};\n");
  EXPECT_EQ(specs(nested), (std::vector<std::string>{"a::b::c::d", "a::b::c::e::f"}));
}

TEST(ImportScanner, JavaAndKotlinImports) {
  auto refs = scanImports(SourceLanguage::kJava,
                          "package a.b;\nimport a.model.User;\nimport static a.util.Strings.join;\nimport a.web.*;\n"
                          "// import no.Thing;\nimport kotlin.collections.List as L\nclass X { char c = '\"'; }\n");
  EXPECT_EQ(specs(refs),
            (std::vector<std::string>{"a.model.User", "a.util.Strings.join", "a.web.*", "kotlin.collections.List"}));
}

TEST(BlastDamping, LogarithmicAndCappedAtTheRepositoryP95) {
  EXPECT_EQ(dampBlastRadius(0, 10), 0.0);
  EXPECT_DOUBLE_EQ(dampBlastRadius(10, 10), 1.0);
  EXPECT_DOUBLE_EQ(dampBlastRadius(500, 10), 1.0);  // a hub is worth no more than the 95th percentile
  EXPECT_NEAR(dampBlastRadius(1, 10), std::log(2.0) / std::log(11.0), 1e-12);
  double prev = 0;
  for (int r = 1; r <= 10; ++r) {
    const double d = dampBlastRadius(r, 10);
    EXPECT_GT(d, prev);
    // Diminishing returns: each further dependent adds less than the one before.
    if (r > 1) {
      EXPECT_LT(d - prev, dampBlastRadius(r - 1, 10) - (r > 2 ? dampBlastRadius(r - 2, 10) : 0.0));
    }
    prev = d;
  }
  EXPECT_DOUBLE_EQ(dampBlastRadius(1, 0), 1.0);  // no statistics yet: any dependent is "fully" depended on
}

TEST(DependencyGraph, PercentileOfNonZeroRadii) {
  std::vector<std::string> tracked;
  std::vector<SourceImports> sources;
  // hub.h included by 20 files, each of l0..l19.h included by one file.
  tracked.push_back("hub.h");
  for (int i = 0; i < 20; ++i) {
    const std::string lib = "l" + std::to_string(i) + ".h";
    const std::string src = "s" + std::to_string(i) + ".c";
    tracked.push_back(lib);
    tracked.push_back(src);
    sources.push_back({src, {{ImportKind::kIncludeQuoted, "hub.h", {}}, {ImportKind::kIncludeQuoted, lib, {}}}});
  }
  auto g = DependencyGraph::build(tracked, sources, "");
  EXPECT_EQ(g->radius("hub.h"), 20);
  EXPECT_EQ(g->radius("l3.h"), 1);
  // 21 radii; the 95th percentile is the 20th smallest, a leaf: the hub alone is the top 5%, so it is capped.
  EXPECT_EQ(g->p95Radius(), 1);
  EXPECT_DOUBLE_EQ(g->damped(20), 1.0);
  EXPECT_DOUBLE_EQ(g->damped(1), 1.0);
  EXPECT_EQ(g->edgeCount(), 40u);
}

}  // namespace
}  // namespace memq
