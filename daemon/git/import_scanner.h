// Import extraction for blast radius (docs/design.md §8): finds the include/import statements of one source file and
// returns them unresolved. A light lexer per language family, not a parser: it skips comments and string
// contents so commented-out imports do not count, and accepts that exotic syntax (Rust raw strings, JS regex
// literals containing quotes) may occasionally hide or invent an import. Resolution against the tracked files is
// DependencyGraph's job.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memq {

enum class SourceLanguage { kNone, kC, kPython, kJs, kGo, kGoMod, kRust, kJava };

// By file name: .c .h .cc .cpp .hpp ... → kC; .py .pyi → kPython; .js .jsx .ts .tsx .mjs .cjs .mts .cts →
// kJs; .go → kGo; go.mod → kGoMod; .rs → kRust; .java .kt → kJava; anything else kNone (not read).
SourceLanguage languageOf(std::string_view path);

enum class ImportKind {
  kIncludeQuoted,  // C/C++ #include "x.h": spec = x.h
  kIncludeAngle,   // C/C++ #include <x.h>
  kPython,         // spec = module with its leading dots ("a.b", "..pkg", "."); names = from-import names
  kJs,             // spec = the module string ("./x", "../y/index.js", "react")
  kGo,             // spec = import path
  kGoModule,       // from go.mod: spec = the module path
  kRustMod,        // mod x;  spec = x
  kRustUse,        // use crate::a::b::C; spec = "crate::a::b::C" (one per leaf of a use tree; "*" leaves dropped)
  kJava,           // import a.b.C; spec = "a.b.C" or "a.b.*" (static imports keep the member: "a.b.C.m")
};

struct ImportRef {
  ImportKind kind;
  std::string spec;
  std::vector<std::string> names;  // kPython "from m import a, b": {"a", "b"}

  bool operator==(const ImportRef&) const = default;
};

std::vector<ImportRef> scanImports(SourceLanguage language, std::string_view text);

}  // namespace memq
