// Each method's params read into its request type (daemon/service/service_types.h): the one place JSON params
// become typed values. The dispatcher has validated them against the method's schema first (schema/methods), so
// these read what is there with the documented defaults; what a schema cannot say (an enum read into an enum, a
// memory/list `state`) is refused here as InvalidParams naming the field.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "daemon/service/service_types.h"
#include "protocol/status.h"

namespace memq {

// subscribe's params: the scopes whose memory/changed notifications the connection wants (empty: all).
struct SubscribeRequest {
  std::vector<std::string> scopes;
};

// The common params of any method but initialize (initialize sets the connection's values instead).
Result<CommonParams> readCommonParams(const nlohmann::json& params);

Status readParams(const nlohmann::json& params, InitializeRequest& out);
Status readParams(const nlohmann::json& params, SaveInput& out);
Status readParams(const nlohmann::json& params, MemoryRef& out);
Status readParams(const nlohmann::json& params, UpdateRequest& out);
Status readParams(const nlohmann::json& params, ListFilter& out);
Status readParams(const nlohmann::json& params, SearchRequest& out);
Status readParams(const nlohmann::json& params, RecallParams& out);
Status readParams(const nlohmann::json& params, StateChangeRequest& out);
Status readParams(const nlohmann::json& params, SupersedeRequest& out);
Status readParams(const nlohmann::json& params, PurgeRequest& out);
Status readParams(const nlohmann::json& params, FilesChange& out);
Status readParams(const nlohmann::json& params, HintsRequest& out);
Status readParams(const nlohmann::json& params, NoParams& out);
Status readParams(const nlohmann::json& params, CochangeRequest& out);
Status readParams(const nlohmann::json& params, FileRequest& out);
Status readParams(const nlohmann::json& params, ClusterRequest& out);
Status readParams(const nlohmann::json& params, ReviewRequest& out);
Status readParams(const nlohmann::json& params, AuditFilter& out);
Status readParams(const nlohmann::json& params, ExportRequest& out);
Status readParams(const nlohmann::json& params, ImportRequest& out);
Status readParams(const nlohmann::json& params, SubscribeRequest& out);
Status readParams(const nlohmann::json& params, TeamConnectRequest& out);

}  // namespace memq
