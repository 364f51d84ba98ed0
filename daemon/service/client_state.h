// ClientState: what memqd remembers about one connection ("tab"): who it is (initialize), which project and scopes
// it reads and writes, its hint state, and whether it subscribed to change notifications.
// Thread-safety: fields are guarded by `mutex`; a connection's requests are served one at a time, but a subagent's
// initialize reads its parent's hint state from another connection.
#pragma once

#include <mutex>
#include <set>
#include <string>

#include "daemon/hints/hint_engine.h"

namespace memq {

enum class ReadScope { kProject, kGlobal, kAll, kNone };
enum class WriteScope { kProject, kGlobal, kNone };

bool parseReadScope(const std::string& s, ReadScope& out);
bool parseWriteScope(const std::string& s, WriteScope& out);
const char* readScopeName(ReadScope s);
const char* writeScopeName(WriteScope s);

struct ClientState {
  std::mutex mutex;
  std::string token;  // handed out by initialize; a subagent passes it as `parent`
  bool initialized = false;
  std::string clientName = "anonymous";
  std::string clientVersion;
  std::string projectRoot;  // as given (a directory inside the project); "" = none
  ReadScope readScope = ReadScope::kAll;
  WriteScope writeScope = WriteScope::kProject;
  std::string source = "agent";
  HintState hints;
  bool subscribed = false;
  std::set<std::string> subscribedScopes;  // empty = all
};

}  // namespace memq
