// Blast radius over real repositories: one small project per language (C/C++, Python, JS/TS, Go, Rust, Java),
// checked file by file, plus the size and binary limits, a subdirectory root, a new HEAD, and a commit landing after
// a request observed HEAD.
#include <gtest/gtest.h>

#include "daemon/git/git_repo_signals.h"
#include "daemon/git/repo_location.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

using testing::GitRepo;
using testing::TempDir;
using Files = std::vector<std::string>;

class BlastRadius : public ::testing::Test {
 protected:
  GitRepoSignals& signals(const std::string& root = "", bool exact = false) {
    auto loc = locateProject(root.empty() ? repo.dir() : root, exact);
    EXPECT_TRUE(loc.isOk());
    signals_ = std::make_unique<GitRepoSignals>(loc.value());
    return *signals_;
  }
  void commitAll(const std::map<std::string, std::string>& files) { repo.commit(files, "sources"); }

  TempDir tmp;
  GitRepo repo{tmp.path() + "/repo"};
  std::unique_ptr<GitRepoSignals> signals_;
};

TEST_F(BlastRadius, CAndCpp) {
  commitAll({
      {"src/util.h", "#pragma once\nint util();\n"},
      {"src/util.c", "#include \"util.h\"\nint util() { return 1; }\n"},
      {"src/a.c", "#include <stdio.h>\n#include \"util.h\"\n"},
      {"lib/b.cc", "#include \"src/util.h\"\n#include \"../src/a.h\"\n"},
      {"tests/t.cpp", "#include <util.h>\n#include <gtest/gtest.h>\n"},
      {"src/commented.c", "// #include \"util.h\"\n/*\n#include \"util.h\"\n*/\n"},
      {"other/util.h", "// same base name, different directory\n"},
      {"other/user.c", "#include \"util.h\"\n"},  // resolves beside itself, not to src/
      {"src/a.h", "\n"},
  });
  auto& s = signals();
  EXPECT_EQ(s.dependents("src/util.h"), (Files{"lib/b.cc", "src/a.c", "src/util.c"}));
  EXPECT_EQ(s.blastRadius("src/util.h"), 3);
  EXPECT_EQ(s.dependents("other/util.h"), (Files{"other/user.c"}));
  EXPECT_EQ(s.dependents("src/a.h"), (Files{"lib/b.cc"}));
  EXPECT_EQ(s.blastRadius("src/a.c"), 0);
  EXPECT_EQ(s.blastRadius("missing.h"), 0);
  // <util.h> from tests/ is ambiguous between src/util.h and other/util.h at equal distance: no edge is
  // better than a wrong one.
  EXPECT_EQ(s.blastRadius("tests/t.cpp"), 0);
}

TEST_F(BlastRadius, AngleIncludeResolvesByUniqueSuffix) {
  commitAll({
      {"include/proj/api.h", "\n"},
      {"src/impl.cc", "#include <proj/api.h>\n"},
      {"tools/tool.cc", "#include \"proj/api.h\"\n"},
  });
  EXPECT_EQ(signals().dependents("include/proj/api.h"), (Files{"src/impl.cc", "tools/tool.cc"}));
}

TEST_F(BlastRadius, Python) {
  commitAll({
      {"pkg/__init__.py", "\n"},
      {"pkg/core.py", "def run(): pass\n"},
      {"pkg/helpers.py", "from . import core\n"},
      {"pkg/sub/__init__.py", "\n"},
      {"pkg/sub/deep.py", "from ..core import run\n"},
      {"app.py", "from pkg.core import run\nfrom pkg import helpers\nimport os\n"},
      {"scripts/tool.py", "import pkg.core as c\n"},
      {"scripts/other.py", "# import pkg.core\n\"\"\"\nimport pkg.core\n\"\"\"\nimport pkg\n"},
  });
  auto& s = signals();
  EXPECT_EQ(s.dependents("pkg/core.py"), (Files{"app.py", "pkg/helpers.py", "pkg/sub/deep.py", "scripts/tool.py"}));
  EXPECT_EQ(s.dependents("pkg/helpers.py"), (Files{"app.py"}));
  EXPECT_EQ(s.dependents("pkg/__init__.py"), (Files{"scripts/other.py"}));
}

TEST_F(BlastRadius, PythonSrcLayoutBySuffix) {
  commitAll({
      {"src/mylib/__init__.py", "\n"},
      {"src/mylib/models.py", "\n"},
      {"tests/test_models.py", "from mylib.models import Model\n"},
      {"src/mylib/views.py", "from mylib import models\n"},
  });
  EXPECT_EQ(signals().dependents("src/mylib/models.py"), (Files{"src/mylib/views.py", "tests/test_models.py"}));
}

TEST_F(BlastRadius, JavaScriptAndTypeScript) {
  commitAll({
      {"web/lib/api.ts", "export const get = 1;\n"},
      {"web/app.tsx", "import { get } from './lib/api'\n"},
      {"web/pages/home.ts", "import api from \"../lib/api.js\";\n"},
      {"web/server.js", "const api = require('./lib/api')\n"},
      {"web/reexport.ts", "export * from './lib/api';\n"},
      {"web/lazy.ts", "const m = await import('./lib/api');\n"},
      {"web/comment.ts", "// import x from './lib/api'\n"},
      {"web/components/index.ts", "export {}\n"},
      {"web/main.ts", "import c from './components'\nimport React from 'react'\n"},
      {"web/style.mjs", "import './lib/api.ts'\n"},
  });
  auto& s = signals();
  EXPECT_EQ(s.dependents("web/lib/api.ts"),
            (Files{"web/app.tsx", "web/lazy.ts", "web/pages/home.ts", "web/reexport.ts", "web/server.js",
                   "web/style.mjs"}));
  EXPECT_EQ(s.blastRadius("web/lib/api.ts"), 6);
  EXPECT_EQ(s.dependents("web/components/index.ts"), (Files{"web/main.ts"}));
}

TEST_F(BlastRadius, Go) {
  commitAll({
      {"go.mod", "module example.com/proj\n\ngo 1.21\n"},
      {"store/store.go", "package store\n"},
      {"store/query.go", "package store\n"},
      {"store/store_test.go", "package store\n"},
      {"cmd/main.go", "package main\nimport (\n\t\"fmt\"\n\ts \"example.com/proj/store\"\n)\n"},
      {"api/api.go", "package api\nimport \"example.com/proj/store\"\n"},
      {"fmt/fmt.go", "package fmt\n"},  // a local directory named like the standard library's fmt
  });
  auto& s = signals();
  EXPECT_EQ(s.dependents("store/store.go"), (Files{"api/api.go", "cmd/main.go"}));
  EXPECT_EQ(s.dependents("store/query.go"), (Files{"api/api.go", "cmd/main.go"}));
  EXPECT_EQ(s.blastRadius("store/store_test.go"), 0);
  EXPECT_EQ(s.blastRadius("fmt/fmt.go"), 0);
}

TEST_F(BlastRadius, GoWithoutGoModBySuffix) {
  commitAll({
      {"internal/util/util.go", "package util\n"},
      {"main.go", "package main\nimport \"github.com/acme/tool/internal/util\"\n"},
  });
  EXPECT_EQ(signals().dependents("internal/util/util.go"), (Files{"main.go"}));
}

TEST_F(BlastRadius, Rust) {
  commitAll({
      {"rs/Cargo.toml", "[package]\nname = \"x\"\n"},
      {"rs/src/lib.rs", "mod parser;\npub mod util;\nmod extra;\n"},
      {"rs/src/parser.rs", "use crate::util::helpers::clean;\nuse super::util;\n"},
      {"rs/src/util/mod.rs", "pub mod helpers;\n"},
      {"rs/src/util/helpers.rs", "pub fn clean() {}\nuse std::io;\n"},
      {"rs/src/extra.rs", "use crate::{parser, util::helpers::*};\n"},
      {"rs/src/bin/cli.rs", "fn main() {}\n"},
  });
  auto& s = signals();
  EXPECT_EQ(s.dependents("rs/src/util/helpers.rs"), (Files{"rs/src/extra.rs", "rs/src/parser.rs", "rs/src/util/mod.rs"}));
  EXPECT_EQ(s.dependents("rs/src/util/mod.rs"), (Files{"rs/src/lib.rs", "rs/src/parser.rs"}));
  EXPECT_EQ(s.dependents("rs/src/parser.rs"), (Files{"rs/src/extra.rs", "rs/src/lib.rs"}));
  EXPECT_EQ(s.blastRadius("rs/src/lib.rs"), 0);
}

TEST_F(BlastRadius, Java) {
  const std::string base = "java/src/main/java/com/acme/";
  commitAll({
      {base + "model/User.java", "package com.acme.model;\npublic class User {}\n"},
      {base + "model/Role.java", "package com.acme.model;\npublic class Role {}\n"},
      {base + "service/UserService.java", "package com.acme.service;\nimport com.acme.model.User;\nimport java.util.List;\n"},
      {base + "web/Controller.java", "package com.acme.web;\nimport com.acme.model.*;\nimport static com.acme.service.UserService.find;\n"},
      {"kt/App.kt", "import com.acme.model.User\n"},
  });
  auto& s = signals();
  EXPECT_EQ(s.dependents(base + "model/User.java"),
            (Files{base + "service/UserService.java", base + "web/Controller.java", "kt/App.kt"}));
  EXPECT_EQ(s.dependents(base + "model/Role.java"), (Files{base + "web/Controller.java"}));
  EXPECT_EQ(s.dependents(base + "service/UserService.java"), (Files{base + "web/Controller.java"}));
}

TEST_F(BlastRadius, HugeAndBinaryBlobsAreNotScanned) {
  std::string huge = "#include \"lib.h\"\n" + std::string((1 << 20) + 10, ' ');
  std::string binary = std::string("#include \"lib.h\"\n") + std::string(64, '\0');
  commitAll({{"lib.h", "\n"}, {"small.c", "#include \"lib.h\"\n"}, {"huge.c", huge}, {"blob.c", binary}});
  EXPECT_EQ(signals().dependents("lib.h"), (Files{"small.c"}));
}

TEST_F(BlastRadius, SubdirectoryRootSeesOnlyItsOwnFiles) {
  commitAll({
      {"svc/core.h", "\n"},
      {"svc/a.c", "#include \"core.h\"\n"},
      {"svc/sub/b.c", "#include \"../core.h\"\n"},
      {"outside.c", "#include \"svc/core.h\"\n"},
  });
  auto& s = signals(repo.dir() + "/svc", /*exact=*/true);
  EXPECT_EQ(s.dependents("core.h"), (Files{"a.c", "sub/b.c"}));
  EXPECT_EQ(s.blastRadius("core.h"), 2);
  EXPECT_EQ(s.blastRadius("svc/core.h"), 0);
}

TEST_F(BlastRadius, FollowsHeadAndDampsAgainstTheRepository) {
  commitAll({{"hub.h", "\n"}, {"x.h", "\n"}, {"a.c", "#include \"hub.h\"\n"}});
  GitSignalsOptions opts;
  opts.headCheckInterval = std::chrono::milliseconds(0);
  GitRepoSignals s(locateProject(repo.dir()).value(), opts);
  EXPECT_EQ(s.blastRadius("hub.h"), 1);
  std::map<std::string, std::string> more;
  for (int i = 0; i < 20; ++i) more["f" + std::to_string(i) + ".c"] = "#include \"hub.h\"\n";
  more["g.c"] = "#include \"x.h\"\n";
  commitAll(more);
  EXPECT_EQ(s.blastRadius("hub.h"), 21);
  EXPECT_EQ(s.blastRadius("x.h"), 1);
  // Two files have dependents: the 95th percentile is the hub's 21, so the leaf header is far from 1.
  EXPECT_DOUBLE_EQ(s.blastDamped(21), 1.0);
  EXPECT_NEAR(s.blastDamped(1), std::log(2.0) / std::log(22.0), 1e-12);
  EXPECT_EQ(s.blastDamped(0), 0.0);
}

// An agent commits while a hook's recall runs: the request observed HEAD before the commit, the graph's build reads
// the new HEAD. The later lookups of that request (and of the interval) must take the graph built, not build it again
// per queried file because it does not match their older observation.
TEST_F(BlastRadius, ACommitAfterHeadWasObservedBuildsTheGraphOnce) {
  commitAll({{"hub.h", "\n"}, {"a.c", "#include \"hub.h\"\n"}});
  GitSignalsOptions opts;
  opts.headCheckInterval = std::chrono::hours(1);
  GitRepoSignals s(locateProject(repo.dir()).value(), opts);
  s.observeHeadNow();
  const std::string observed = s.head();
  commitAll({{"b.c", "#include \"hub.h\"\n"}});
  ASSERT_NE(repo.rev("HEAD"), observed);

  EXPECT_EQ(s.blastRadius("hub.h"), 2);  // built from HEAD as it is, never older than the observation
  EXPECT_EQ(s.blastRadius("a.c"), 0);
  EXPECT_EQ(s.blastRadius("b.c"), 0);
  EXPECT_EQ(s.dependencyGraphBuilds(), 1);
  EXPECT_EQ(s.head(), repo.rev("HEAD")) << "the build moved the observation to the HEAD it read";
}

}  // namespace
}  // namespace memq
