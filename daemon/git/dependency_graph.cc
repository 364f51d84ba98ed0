// Import resolution and blast radius; see dependency_graph.h.
#include "daemon/git/dependency_graph.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "daemon/model/file_path.h"
#include "daemon/util/split.h"

namespace memq {
namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool startsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string dirOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash));
}
std::string_view baseOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}
std::string join(const std::string& dir, std::string_view rel) {
  if (dir.empty()) return std::string(rel);
  if (rel.empty()) return dir;
  return dir + "/" + std::string(rel);
}

// Lexically normalised ("a/./b/../c" → "a/c"); nullopt when it climbs above the top.
std::optional<std::string> normalise(std::string_view path) {
  std::string out;
  if (!lexicallyNormalize(path, out)) return std::nullopt;
  return out;
}

size_t sharedDirPrefix(std::string_view a, std::string_view b) {
  size_t shared = 0;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '/') shared = i + 1;
    ++i;
  }
  return shared;
}

// The last two components of `path` ("c/d.py" of "a/b/c/d.py"), or the whole of a path of one component.
std::string_view lastTwoOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return path;
  const size_t before = path.rfind('/', slash - 1);
  return before == std::string_view::npos ? path : path.substr(before + 1);
}

// The tracked files, indexed for the lookups resolution needs. Every lookup is by a key of the path it wants (its
// base name, its last two components, a directory's last component), never a walk over every file or directory:
// a repository's build resolves hundreds of thousands of imports (a Go monorepo's external ones, Python's
// `__init__.py` modules), and a walk per import made the graph's build grow with their product.
class PathIndex {
 public:
  explicit PathIndex(const std::vector<std::string>& tracked) {
    for (const std::string& p : tracked) {
      files_.insert(p);
      byBase_[std::string(baseOf(p))].push_back(p);
      if (p.find('/') != std::string::npos) byLastTwo_[std::string(lastTwoOf(p))].push_back(p);
      byDir_[dirOf(p)].push_back(p);
    }
    for (const auto& [dir, files] : byDir_) {
      if (!dir.empty()) dirsByBase_[std::string(baseOf(dir))].push_back(&dir);
    }
  }

  bool has(const std::string& p) const { return files_.count(p) != 0; }
  const std::vector<std::string>* filesIn(const std::string& dir) const {
    auto it = byDir_.find(dir);
    return it == byDir_.end() ? nullptr : &it->second;
  }
  bool hasDir(const std::string& dir) const { return byDir_.count(dir) != 0; }

  // The tracked directories equal to `rel` or ending in "/rel" (`rel` not empty).
  std::vector<const std::string*> dirsBySuffix(const std::string& rel) const {
    std::vector<const std::string*> out;
    auto it = dirsByBase_.find(std::string(baseOf(rel)));
    if (it == dirsByBase_.end()) return out;
    for (const std::string* dir : it->second) {
      if (*dir == rel || (dir->size() > rel.size() && endsWith(*dir, rel) && (*dir)[dir->size() - rel.size() - 1] == '/')) {
        out.push_back(dir);
      }
    }
    return out;
  }

  // The tracked path equal to `rel` or ending in "/rel"; several → the one closest to `from`; tie → none.
  std::optional<std::string> bySuffix(const std::string& rel, const std::string& from) const {
    // Such a path shares rel's base name, and when rel has two components or more, its last two as well.
    const bool nested = rel.find('/') != std::string::npos;
    const auto& index = nested ? byLastTwo_ : byBase_;
    auto it = index.find(std::string(nested ? lastTwoOf(rel) : baseOf(rel)));
    if (it == index.end()) return std::nullopt;
    std::vector<const std::string*> hits;
    for (const std::string& p : it->second) {
      if (p == rel || (p.size() > rel.size() && endsWith(p, rel) && p[p.size() - rel.size() - 1] == '/')) {
        hits.push_back(&p);
      }
    }
    return closest(hits, from);
  }

  static std::optional<std::string> closest(const std::vector<const std::string*>& hits, const std::string& from) {
    if (hits.empty()) return std::nullopt;
    if (hits.size() == 1) return *hits[0];
    size_t best = 0;
    const std::string* winner = nullptr;
    bool tie = false;
    for (const std::string* p : hits) {
      const size_t shared = sharedDirPrefix(*p, from);
      if (winner == nullptr || shared > best) {
        best = shared;
        winner = p;
        tie = false;
      } else if (shared == best) {
        tie = true;
      }
    }
    if (tie) return std::nullopt;
    return *winner;
  }

 private:
  std::unordered_set<std::string> files_;
  std::unordered_map<std::string, std::vector<std::string>> byBase_;
  std::unordered_map<std::string, std::vector<std::string>> byLastTwo_;  // files in a directory only
  std::unordered_map<std::string, std::vector<std::string>> byDir_;
  // Each directory of byDir_ but the top, by its last component (its key in byDir_, which no insert moves).
  std::unordered_map<std::string, std::vector<const std::string*>> dirsByBase_;
};

class Resolver {
 public:
  Resolver(const PathIndex& index, const std::vector<SourceImports>& sources) : index_(index) {
    for (const SourceImports& s : sources) {
      for (const ImportRef& r : s.imports) {
        if (r.kind == ImportKind::kGoModule) goModules_.push_back({dirOf(s.path), r.spec});
      }
    }
    // Longest module path first, so nested modules win over the module that contains them.
    std::sort(goModules_.begin(), goModules_.end(),
              [](const GoModule& a, const GoModule& b) { return a.module.size() > b.module.size(); });
  }

  // Appends the files `ref` (written in `from`) refers to.
  void resolve(const std::string& from, const ImportRef& ref, std::vector<std::string>& out) const {
    switch (ref.kind) {
      case ImportKind::kIncludeQuoted:
      case ImportKind::kIncludeAngle: return include(from, ref, out);
      case ImportKind::kPython: return python(from, ref, out);
      case ImportKind::kJs: return js(from, ref.spec, out);
      case ImportKind::kGo: return go(from, ref.spec, out);
      case ImportKind::kGoModule: return;
      case ImportKind::kRustMod: return rustMod(from, ref.spec, out);
      case ImportKind::kRustUse: return rustUse(from, ref.spec, out);
      case ImportKind::kJava: return java(from, ref.spec, out);
    }
  }

 private:
  struct GoModule {
    std::string dir;
    std::string module;
  };

  bool add(const std::optional<std::string>& p, std::vector<std::string>& out) const {
    if (!p || !index_.has(*p)) return false;
    out.push_back(*p);
    return true;
  }

  void include(const std::string& from, const ImportRef& ref, std::vector<std::string>& out) const {
    if (ref.kind == ImportKind::kIncludeQuoted && add(normalise(join(dirOf(from), ref.spec)), out)) return;
    auto top = normalise(ref.spec);
    if (!top || top->empty()) return;
    if (add(top, out)) return;
    add(index_.bySuffix(*top, from), out);
  }

  // A Python module path ("a/b") to its file: beside the importer, then from the top, then by suffix.
  std::optional<std::string> pythonModule(const std::string& rel, const std::string& from, bool searchWide) const {
    const std::string dir = dirOf(from);
    for (const char* suffix : {".py", "/__init__.py", ".pyi", "/__init__.pyi"}) {
      auto p = normalise(join(dir, rel + suffix));
      if (p && index_.has(*p)) return p;
    }
    if (!searchWide) return std::nullopt;
    for (const char* suffix : {".py", "/__init__.py", ".pyi", "/__init__.pyi"}) {
      if (index_.has(rel + suffix)) return rel + suffix;
    }
    for (const char* suffix : {".py", "/__init__.py"}) {
      if (auto p = index_.bySuffix(rel + suffix, from)) return p;
    }
    return std::nullopt;
  }

  void python(const std::string& from, const ImportRef& ref, std::vector<std::string>& out) const {
    std::string_view spec = ref.spec;
    size_t dots = 0;
    while (dots < spec.size() && spec[dots] == '.') ++dots;
    std::string module(spec.substr(dots));
    std::replace(module.begin(), module.end(), '.', '/');
    if (dots > 0) {
      // Relative: one dot is the importer's own package (its directory), each further dot one level up.
      std::string base = dirOf(from);
      for (size_t i = 1; i < dots; ++i) {
        if (base.empty()) return;
        base = dirOf(base);
      }
      const std::string pkg = join(base, module);
      bool any = false;
      for (const std::string& name : ref.names) {
        any |= add(pythonAt(join(pkg, name)), out);
      }
      if (!any) add(pythonAt(pkg), out);
      return;
    }
    if (module.empty()) return;
    bool any = false;
    for (const std::string& name : ref.names) {
      any |= add(pythonModule(module + "/" + name, from, true), out);
    }
    if (any) return;
    // import a.b.c: the most specific module that exists.
    std::string m = module;
    while (!m.empty()) {
      if (add(pythonModule(m, from, true), out)) return;
      m = dirOf(m);
    }
  }

  // An exact package-relative module location (no searching): relative imports are unambiguous.
  std::optional<std::string> pythonAt(const std::string& path) const {
    if (path.empty()) return std::nullopt;
    for (const char* suffix : {".py", "/__init__.py", ".pyi", "/__init__.pyi"}) {
      if (index_.has(path + suffix)) return path + suffix;
    }
    return std::nullopt;
  }

  void js(const std::string& from, const std::string& spec, std::vector<std::string>& out) const {
    std::optional<std::string> base;
    if (startsWith(spec, "./") || startsWith(spec, "../") || spec == "." || spec == "..") {
      base = normalise(join(dirOf(from), spec));
    } else if (startsWith(spec, "/")) {
      base = normalise(spec.substr(1));
    }
    if (!base) return;  // a package, or an alias we cannot see
    static const char* kExt[] = {".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts"};
    if (!base->empty() && add(base, out)) return;
    for (const char* e : kExt) {
      if (add(*base + e, out)) return;
    }
    // TS sources imported with the extension they compile to.
    static const std::pair<const char*, const char*> kCompiled[] = {
        {".js", ".ts"}, {".js", ".tsx"}, {".jsx", ".tsx"}, {".mjs", ".mts"}, {".cjs", ".cts"}};
    for (const auto& [js, ts] : kCompiled) {
      if (endsWith(*base, js) && add(base->substr(0, base->size() - std::string_view(js).size()) + ts, out)) return;
    }
    for (const char* e : kExt) {
      if (add(join(*base, std::string("index") + e), out)) return;
    }
  }

  void goPackage(const std::string& from, const std::string& dir, std::vector<std::string>& out) const {
    const auto* files = index_.filesIn(dir);
    if (files == nullptr) return;
    for (const std::string& f : *files) {
      if (endsWith(f, ".go") && !endsWith(f, "_test.go") && f != from) out.push_back(f);
    }
  }

  void go(const std::string& from, const std::string& path, std::vector<std::string>& out) const {
    for (const GoModule& m : goModules_) {
      if (path == m.module) return goPackage(from, m.dir, out);
      if (startsWith(path, m.module) && path.size() > m.module.size() && path[m.module.size()] == '/') {
        return goPackage(from, join(m.dir, std::string_view(path).substr(m.module.size() + 1)), out);
      }
    }
    const size_t firstSlash = path.find('/');
    if (firstSlash == std::string::npos || path.substr(0, firstSlash).find('.') == std::string::npos) return;
    // No go.mod claims it: the longest tracked directory the import path ends with, tried from the whole path
    // down to its last component.
    for (std::string_view rest = path; !rest.empty();) {
      if (const std::string dir(rest); index_.hasDir(dir)) return goPackage(from, dir, out);
      const size_t slash = rest.find('/');
      if (slash == std::string_view::npos) return;
      rest = rest.substr(slash + 1);
    }
  }

  // The directory holding the submodules of the module defined by `file`.
  static std::string rustChildDir(const std::string& file) {
    const std::string_view base = baseOf(file);
    if (base == "mod.rs" || base == "lib.rs" || base == "main.rs") return dirOf(file);
    return join(dirOf(file), base.substr(0, base.size() - 3));
  }

  bool rustModuleFile(const std::string& modPath, std::vector<std::string>& out) const {
    return add(modPath + ".rs", out) || add(join(modPath, "mod.rs"), out);
  }

  void rustMod(const std::string& from, const std::string& name, std::vector<std::string>& out) const {
    rustModuleFile(join(rustChildDir(from), name), out);
  }

  std::optional<std::string> rustCrateRoot(const std::string& from) const {
    std::string dir = dirOf(from);
    while (true) {
      if (index_.has(join(dir, "lib.rs")) || index_.has(join(dir, "main.rs"))) return dir;
      if (dir.empty()) return std::nullopt;
      dir = dirOf(dir);
    }
  }

  void rustUse(const std::string& from, const std::string& spec, std::vector<std::string>& out) const {
    const std::vector<std::string_view> segs = splitOn(spec, "::");
    std::string base;
    size_t first = 1;
    if (segs[0] == "crate") {
      auto root = rustCrateRoot(from);
      if (!root) return;
      base = *root;
    } else if (segs[0] == "self") {
      base = rustChildDir(from);
    } else if (segs[0] == "super") {
      // super of a.rs is the module whose children live in a.rs's directory; of a/mod.rs, one level higher.
      base = baseOf(from) == "mod.rs" ? dirOf(dirOf(from)) : dirOf(from);
      while (first < segs.size() && segs[first] == "super") {
        base = dirOf(base);
        ++first;
      }
    } else {
      // A bare first segment: an external crate (std, serde) or, since Rust 2018, a module in scope. Only an
      // existing file can make it a dependency, so trying it crate-relative adds no false edges to crates.
      auto root = rustCrateRoot(from);
      if (!root) return;
      base = *root;
      first = 0;
    }
    for (size_t k = segs.size(); k > first; --k) {
      std::string modPath = base;
      for (size_t i = first; i < k; ++i) modPath = join(modPath, segs[i]);
      if (rustModuleFile(modPath, out)) return;
    }
  }

  void java(const std::string& from, const std::string& spec, std::vector<std::string>& out) const {
    const std::vector<std::string_view> segs = splitOn(spec, ".");
    if (segs.size() >= 2 && segs.back() == "*") {
      std::string pkg;
      for (size_t i = 0; i + 1 < segs.size(); ++i) pkg = join(pkg, segs[i]);
      if (pkg.empty()) return;
      auto dir = PathIndex::closest(index_.dirsBySuffix(pkg), from);
      if (!dir) return;
      for (const std::string& f : *index_.filesIn(*dir)) {
        if ((endsWith(f, ".java") || endsWith(f, ".kt")) && f != from) out.push_back(f);
      }
      return;
    }
    // Longest prefix first: a.b.C.Inner and static members a.b.C.m fall back to a/b/C.java. At least a package
    // and a class, so a single common name never matches by suffix.
    const size_t minSegs = segs.size() >= 2 ? 2 : 1;
    for (size_t k = segs.size(); k >= minSegs; --k) {
      std::string rel;
      for (size_t i = 0; i < k; ++i) rel = join(rel, segs[i]);
      for (const char* ext : {".java", ".kt"}) {
        if (add(index_.bySuffix(rel + ext, from), out)) return;
      }
    }
  }

  const PathIndex& index_;
  std::vector<GoModule> goModules_;
};

}  // namespace

double dampBlastRadius(int radius, int p95Radius) {
  if (radius <= 0) return 0.0;
  const double norm = std::log1p(static_cast<double>(std::max(p95Radius, 1)));
  return std::min(1.0, std::log1p(static_cast<double>(radius)) / norm);
}

double DependencyGraph::damped(int radius) const { return dampBlastRadius(radius, p95_); }

const std::vector<std::string>& DependencyGraph::dependents(const std::string& path) const {
  static const std::vector<std::string> kNone;
  auto it = dependents_.find(path);
  return it == dependents_.end() ? kNone : it->second;
}

std::shared_ptr<const DependencyGraph> DependencyGraph::build(const std::vector<std::string>& trackedPaths,
                                                              const std::vector<SourceImports>& sources,
                                                              const std::string& repoPrefix) {
  auto graph = std::make_shared<DependencyGraph>();
  // Resolution sees the whole repository (an import may cross the project root); only the edges between two
  // files inside the root are kept, as with co-change.
  const PathIndex index(trackedPaths);
  const Resolver resolver(index, sources);
  const std::string prefix = repoPrefix.empty() ? "" : repoPrefix + "/";
  auto inRoot = [&](const std::string& p) { return startsWith(p, prefix) && p.size() > prefix.size(); };

  std::vector<std::string> targets;
  for (const SourceImports& s : sources) {
    if (!inRoot(s.path)) continue;
    targets.clear();
    for (const ImportRef& ref : s.imports) resolver.resolve(s.path, ref, targets);
    const std::string from = s.path.substr(prefix.size());
    for (const std::string& t : targets) {
      if (t == s.path || !inRoot(t)) continue;
      graph->dependents_[t.substr(prefix.size())].push_back(from);
    }
  }
  std::vector<int> radii;
  for (auto& [target, deps] : graph->dependents_) {
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    radii.push_back(static_cast<int>(deps.size()));
    graph->edges_ += deps.size();
  }
  if (!radii.empty()) {
    std::sort(radii.begin(), radii.end());
    const size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(radii.size())));
    graph->p95_ = radii[std::max<size_t>(rank, 1) - 1];
  }
  return graph;
}

}  // namespace memq
