// The docs drift check: the daemon's method table, the method schemas (schema/methods) and the method pages
// (docs/methods) must describe the same set of methods, and each page must name every param of its schema.
// Factored out of the test so that it can be fed a fake method table and shown to catch drift.
// Thread-safety: a pure function of its arguments and of the files under docsMethodsDir.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace memq::docs {

// "memory/save" → "memory.save.md".
std::string docPageName(const std::string& method);

// Returns one sentence per problem (empty: no drift):
//  - a method in the table without a schema, or a schema without a method in the table;
//  - a method (of either set) without docs/methods/<method with '/' → '.'>.md;
//  - a page that does not mention a param of its method's schema as `name` (in backticks);
//  - a page in docsMethodsDir that belongs to no method.
// schemaParams maps each schema's method name to the names of its params (the properties of its params schema).
std::vector<std::string> checkDocsDrift(const std::set<std::string>& tableMethods,
                                        const std::map<std::string, std::set<std::string>>& schemaParams,
                                        const std::filesystem::path& docsMethodsDir);

// The tests the docs name as covering a guarantee (`Suite.TestName` in backticks, in every .md file directly under
// docsDir) that no test source under testsDir defines (TEST, TEST_F or TEST_P of that suite and name; a parameterised
// test's `Prefix/Suite.Name/Param` is named by its suite and name alone). One sentence per such name, naming the
// file: a renamed or deleted test leaves no row pointing at nothing.
std::vector<std::string> checkNamedTests(const std::filesystem::path& docsDir, const std::filesystem::path& testsDir);

}  // namespace memq::docs
