// ClientState: what memqd remembers about one connection ("tab"): who it is (initialize), which project and scopes
// it reads and writes, its hint state, whether it subscribed to change notifications, and an import in progress.
// TabHints: a tab's hint state and its working set (the lines it read and edited, working_set.h). A connection owns
// its own unless it named a `tab` at initialize: then it shares the tab's, which outlives the connection, because
// agent hooks connect once per event (Claude Code runs `memq hook` as a new process for every tool call) and
// per-turn dedup, the cooldown, the budget and the working set must span them.
// Thread-safety: ClientState's fields, including which TabHints `hints` points at, are guarded by `mutex`; the state
// inside a TabHints by its own `mutex` (connections sharing a tab may run at the same time), except the working set,
// which locks itself. Never hold two of them.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "daemon/hints/hint_engine.h"
#include "daemon/service/working_set.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

enum class ReadScope { kProject, kGlobal, kAll, kNone };
enum class WriteScope { kProject, kGlobal, kNone };

bool parseReadScope(const std::string& s, ReadScope& out);
bool parseWriteScope(const std::string& s, WriteScope& out);
const char* readScopeName(ReadScope s);
const char* writeScopeName(WriteScope s);

// An import sent in several requests, staged until its last one (transfer.cc).
struct PendingImport;

struct TabHints {
  Mutex mutex;
  HintState state GUARDED_BY(mutex);
  WorkingSet workingSet;  // thread-safe on its own: not guarded by `mutex`
};

struct ClientState {
  Mutex mutex;  // guards every field below
  std::string token GUARDED_BY(mutex);  // handed out by initialize; a subagent passes it as `parent`
  bool initialized GUARDED_BY(mutex) = false;
  std::string clientName GUARDED_BY(mutex) = "anonymous";
  std::string projectRoot GUARDED_BY(mutex);  // as given (a directory inside the project); "" = none
  ReadScope readScope GUARDED_BY(mutex) = ReadScope::kAll;
  WriteScope writeScope GUARDED_BY(mutex) = WriteScope::kProject;
  std::string source GUARDED_BY(mutex) = "agent";
  std::shared_ptr<TabHints> hints GUARDED_BY(mutex) = std::make_shared<TabHints>();  // never null
  std::string tabKey GUARDED_BY(mutex);  // the retained tab `hints` belongs to ("" = the connection's own)
  bool subagentHints GUARDED_BY(mutex) = false;  // `hints` is a subagent's (its budget, its parent's seen set)
  bool subscribed GUARDED_BY(mutex) = false;
  std::set<std::string> subscribedScopes GUARDED_BY(mutex);  // empty = all
  std::shared_ptr<PendingImport> pendingImport GUARDED_BY(mutex);  // an import whose last request has not come yet
  // The connection closed (Service::forget): an initialize still running for it registers no token, since the
  // state is freed once that call returns.
  bool closed GUARDED_BY(mutex) = false;
};

}  // namespace memq
