// The method table: each method of Service bound the same way — its params read into its request type
// (request_params.h), the Service call, its result written as the reply (reply_json.h). No logic lives here beyond
// that; see daemon/service for what each method does. The transport's own methods (subscribe, daemon/*) are the
// server's and are answered here.
#include <type_traits>

#include "daemon/server/dispatcher.h"
#include "daemon/server/reply_json.h"
#include "daemon/server/request_params.h"

namespace memq {

namespace {

using json = nlohmann::json;

// The request and result types of a Service method `Result<Reply> (const CallContext&, const Request&)`.
template <typename Method>
struct ServiceMethodTypes;
template <typename Reply_, typename Request_>
struct ServiceMethodTypes<Result<Reply_> (Service::*)(const CallContext&, const Request_&)> {
  using Request = Request_;
  using Reply = Reply_;
};

// The results with a replyText (save, get, recall, search) are written as text; the rest are built as a tree
// (replyJson).
template <typename Reply>
constexpr bool kWrittenAsText = requires(const Reply& r) { replyText(r); };

// Binds Service method `method`: params → request → call → reply, errors passed on as the Status they are.
template <auto method>
MethodEntry serviceMethod(bool needsInitialize = false) {
  using Types = ServiceMethodTypes<decltype(method)>;
  auto call = [](HandlerEnv& env, const CallContext& ctx, const json& params) -> Result<typename Types::Reply> {
    typename Types::Request request;
    MEMQ_RETURN_IF_ERROR(readParams(params, request));
    return (env.service.*method)(ctx, request);
  };
  if constexpr (kWrittenAsText<typename Types::Reply>) {
    return MethodEntry::writingText(
        [call](HandlerEnv& env, const CallContext& ctx, const json& params) -> Result<std::string> {
          auto result = call(env, ctx, params);
          if (!result) return result.status();
          return replyText(*result);
        },
        needsInitialize);
  } else {
    return MethodEntry([call](HandlerEnv& env, const CallContext& ctx, const json& params) -> Result<json> {
      auto result = call(env, ctx, params);
      if (!result) return result.status();
      return replyJson(*result);
    }, needsInitialize);
  }
}

MethodTable buildTable() {
  MethodTable t;
  // initialize acts on the connection itself rather than within a request context.
  t["initialize"] = MethodEntry([](HandlerEnv& env, const CallContext&, const json& params) -> Result<json> {
    InitializeRequest request;
    MEMQ_RETURN_IF_ERROR(readParams(params, request));
    auto result = env.service.initialize(env.client, request);
    if (!result) return result.status();
    return replyJson(*result);
  });
  t["memory/save"] = serviceMethod<&Service::save>();
  t["memory/get"] = serviceMethod<&Service::get>();
  t["memory/update"] = serviceMethod<&Service::update>();
  t["memory/list"] = serviceMethod<&Service::list>();
  t["memory/search"] = serviceMethod<&Service::search>();
  t["memory/recall"] = serviceMethod<&Service::recall>();
  t["memory/hide"] = serviceMethod<&Service::hide>();
  t["memory/restore"] = serviceMethod<&Service::restore>();
  t["memory/pin"] = serviceMethod<&Service::pin>();
  t["memory/unpin"] = serviceMethod<&Service::unpin>();
  t["memory/supersede"] = serviceMethod<&Service::supersede>();
  t["memory/reject"] = serviceMethod<&Service::reject>();
  t["memory/unreject"] = serviceMethod<&Service::unreject>();
  t["memory/purge"] = serviceMethod<&Service::purge>();
  t["memory/attach"] = serviceMethod<&Service::attach>();
  t["memory/detach"] = serviceMethod<&Service::detach>();
  // Hint state is per identified connection: these need initialize first.
  t["hints/for_tool"] = serviceMethod<&Service::hintsForTool>(/*needsInitialize=*/true);
  t["hints/turn"] = serviceMethod<&Service::hintsTurn>(/*needsInitialize=*/true);
  t["repo/cochange"] = serviceMethod<&Service::repoCochange>();
  t["repo/blast_radius"] = serviceMethod<&Service::repoBlastRadius>();
  t["repo/refresh"] = serviceMethod<&Service::repoRefresh>();
  t["review/clusters"] = serviceMethod<&Service::reviewClusters>();
  t["review/stale"] = serviceMethod<&Service::reviewStale>();
  t["review/dead"] = serviceMethod<&Service::reviewDead>();
  t["audit/list"] = serviceMethod<&Service::auditList>();
  t["export"] = serviceMethod<&Service::exportJsonl>();
  t["import"] = serviceMethod<&Service::importJsonl>();
  t["stats"] = serviceMethod<&Service::stats>();
  t["team/connect"] = serviceMethod<&Service::teamConnect>();
  t["team/status"] = serviceMethod<&Service::teamStatus>();
  t["team/disconnect"] = serviceMethod<&Service::teamDisconnect>();
  t["subscribe"] = MethodEntry([](HandlerEnv& env, const CallContext&, const json& params) -> Result<json> {
    SubscribeRequest request;
    MEMQ_RETURN_IF_ERROR(readParams(params, request));
    MutexLock lock(env.client.mutex);
    env.client.subscribed = true;
    env.client.subscribedScopes = {request.scopes.begin(), request.scopes.end()};
    return json{{"subscribed", true}};
  });
  t["daemon/status"] = MethodEntry([](HandlerEnv& env, const CallContext&, const json&) -> Result<json> {
    return env.hooks.status ? env.hooks.status() : json::object();
  });
  t["daemon/shutdown"] = MethodEntry([](HandlerEnv& env, const CallContext&, const json&) -> Result<json> {
    if (env.hooks.shutdown) env.hooks.shutdown();
    return json{{"ok", true}};
  });
  return t;
}

}  // namespace

const MethodTable& methodTable() {
  static const MethodTable kTable = buildTable();
  return kTable;
}

}  // namespace memq
