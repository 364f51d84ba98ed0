// DependencyGraph: who depends on whom among the tracked files of one tree, from their import statements
// (ImportScanner), and the blast radius derived from it (docs/design.md §8). Only import-proven edges count: the
// reference's radius also counted inferred-identifier, co-change, barrel and sibling edges, which is why hubs
// dominated it.
//
// Resolution rules, per language (paths are repository-relative):
//  C/C++   #include "x.h": relative to the including file's directory, then from the repository top, then the
//          unique tracked path ending in /x.h (ties broken by the longest shared directory prefix with the
//          includer; still tied = unresolved). #include <x.h>: the last two steps only.
//  Python  import a.b / from a.b import c: a/b/c.py (a submodule), else a/b.py or a/b/__init__.py, looked up
//          beside the importer, then from the top, then by unique suffix; from .x / from .. are relative to the
//          importer's package.
//  JS/TS   only relative specifiers ('./x', '../y'): the exact file, then + .ts .tsx .js .jsx .mjs .cjs .mts
//          .cts .d.ts, then /index.* ; a '.js' specifier also finds the '.ts' source (TS ESM style).
//  Go      import path → a directory, through the module path of a tracked go.mod when one prefixes it, else the
//          longest tracked directory that is a suffix of the import path (only for paths whose first element
//          has a dot, so the standard library never matches); every non-test .go file of it is a dependency.
//  Rust    mod x; → x.rs or x/mod.rs beside the declaring module; use crate::a::b / self:: / super:: (and a
//          bare first segment, tried as crate-relative) → the longest existing module file a/b.rs, a/b/mod.rs,
//          a.rs, a/mod.rs. The crate root is the nearest directory holding lib.rs or main.rs.
//  Java    import a.b.C (and Kotlin) → the unique tracked a/b/C.java or .kt by suffix; a.b.C.Inner and static
//          members fall back to the enclosing class file; a.b.* → every file of the matching directory.
//
// Thread-safety: immutable after build(); safe to share.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/git/import_scanner.h"

namespace memq {

struct SourceImports {
  std::string path;  // repository-relative
  std::vector<ImportRef> imports;
};

class DependencyGraph {
 public:
  // trackedPaths: every file of the tree. sources: the files whose imports were read. repoPrefix: the project
  // root inside the repository ("" = the top); only dependencies between two files inside it are kept, and the
  // graph's paths are root-relative.
  static std::shared_ptr<const DependencyGraph> build(const std::vector<std::string>& trackedPaths,
                                                      const std::vector<SourceImports>& sources,
                                                      const std::string& repoPrefix);

  // Distinct files (root-relative, sorted) that depend on `path`.
  const std::vector<std::string>& dependents(const std::string& path) const;
  int radius(const std::string& path) const { return static_cast<int>(dependents(path).size()); }

  // 95th percentile of the radii of the files that have any dependent (0 when none has).
  int p95Radius() const { return p95_; }

  // Radius squashed into [0, 1]: log1p(radius) / log1p(max(p95, 1)), capped at 1. The logarithm makes the 10th
  // importer worth much less than the first; normalising by this repository's own 95th percentile makes "as
  // depended-on as the top 5% of files" the ceiling, so a hub (a type barrel, a utils header) imported by
  // hundreds of files scores no higher than a file imported by a few dozen.
  double damped(int radius) const;

  size_t edgeCount() const { return edges_; }

 private:
  std::unordered_map<std::string, std::vector<std::string>> dependents_;
  int p95_ = 0;
  size_t edges_ = 0;
};

// The same damping as DependencyGraph::damped, for a given percentile (exposed for tests and for callers that
// keep their own statistics).
double dampBlastRadius(int radius, int p95Radius);

}  // namespace memq
