// Glob matching for the co-change ignore list; see path_filter.h.
#include "daemon/git/path_filter.h"

#include <fnmatch.h>

#include <string_view>

namespace memq {

const std::vector<std::string>& defaultIgnoreGlobs() {
  static const std::vector<std::string> kGlobs = {
      "*.lock",        "package-lock.json", "pnpm-lock.yaml", "yarn.lock",    "Cargo.lock",
      "go.sum",        "poetry.lock",       "composer.lock",  "Gemfile.lock", "*.min.js",
      "*.min.css",     "*.map",             "*.snap",         "node_modules/", "dist/",
      "vendor/",
  };
  return kGlobs;
}

PathFilter::PathFilter(std::vector<std::string> globs) : globs_(std::move(globs)) {
  for (const std::string& g : globs_) {
    if (g.empty()) continue;
    if (g.back() == '/') {
      std::string name = g.substr(0, g.size() - 1);
      // "a/b/" has a slash inside: it names a directory by its path, so match everything under it.
      if (name.find('/') != std::string::npos) {
        pathPatterns_.push_back(name + "/*");
      } else if (!name.empty()) {
        dirNames_.push_back(std::move(name));
      }
    } else if (g.find('/') != std::string::npos) {
      pathPatterns_.push_back(g);
    } else if (g.find_first_of("*?[\\") == std::string::npos) {
      exactNames_.push_back(g);
    } else if (g[0] == '*' && g.find_first_of("*?[\\", 1) == std::string::npos) {
      // The common "*.ext" shape is a suffix test; this runs for every changed path of every walked commit.
      nameSuffixes_.push_back(g.substr(1));
    } else {
      namePatterns_.push_back(g);
    }
  }
}

bool PathFilter::ignored(const std::string& path) const {
  std::string_view p(path);
  const size_t slash = p.rfind('/');
  if (!dirNames_.empty() && slash != std::string_view::npos) {
    // Every directory component of the path, compared with each ignored directory name.
    size_t start = 0;
    while (start < slash) {
      size_t end = p.find('/', start);
      std::string_view component = p.substr(start, end - start);
      for (const std::string& d : dirNames_) {
        if (component == d) return true;
      }
      start = end + 1;
    }
  }
  const std::string_view base = slash == std::string_view::npos ? p : p.substr(slash + 1);
  for (const std::string& name : exactNames_) {
    if (base == name) return true;
  }
  for (const std::string& suffix : nameSuffixes_) {
    if (base.size() >= suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
  }
  if (!namePatterns_.empty()) {
    const std::string baseName(base);
    for (const std::string& g : namePatterns_) {
      if (fnmatch(g.c_str(), baseName.c_str(), 0) == 0) return true;
    }
  }
  for (const std::string& g : pathPatterns_) {
    // Without FNM_PATHNAME for the "dir/*" form, so "a/b/*" covers everything below a/b, not just one level.
    const int flags = (g.size() >= 2 && g.compare(g.size() - 2, 2, "/*") == 0) ? 0 : FNM_PATHNAME;
    if (fnmatch(g.c_str(), path.c_str(), flags) == 0) return true;
  }
  return false;
}

std::string PathFilter::fingerprint() const {
  std::string out;
  for (const std::string& g : globs_) {
    out += g;
    out += '\n';
  }
  return out;
}

}  // namespace memq
