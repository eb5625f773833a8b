// What every control plane route shares: JSON answers and errors ({"error": {code, message,
// field}}), request bodies as JSON objects, and the authentication and authorisation checks.
// Each check answers the request itself (401/403/400/503) and returns false or nullopt, so a
// handler reads `if (!check) return;`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/sessions.h"
#include "server/store.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace hpc::cp::http {

void Error(httplib::Response& res, int code, const std::string& message, const std::string& field = "");
// A "field: why" message as a 400 naming the field.
// The HTTP status for a Status's code: invalid argument 400, unauthenticated 401, permission
// denied 403, not found 404, exists/conflict/precondition 409, unavailable 503, else 500.
int HttpStatusFor(StatusCode code);
// A JSON error from a Status: its code's HTTP status, its message, and its field when it has one.
void Error(httplib::Response& res, const Status& status);
void Ok(httplib::Response& res, const nlohmann::json& body, int code = 200);

// A whole decimal integer in [min, max]; nullopt for anything else (signs, spaces, overflow).
std::optional<int64_t> ParseInteger(const std::string& text, int64_t min, int64_t max);
// Query parameter `name` into *out when present and not empty; an invalid argument naming it
// when it is not an integer in [min, max].
Status IntegerQuery(const httplib::Request& req, const std::string& name, int64_t min, int64_t max, int64_t* out);
// The same, answering the 400 itself: false after it.
bool IntegerParam(const httplib::Request& req, httplib::Response& res, const std::string& name, int64_t min,
                  int64_t max, int64_t* out);

// The request body as a JSON object, or a 400 naming what is wrong.
std::optional<nlohmann::json> Body(const httplib::Request& req, httplib::Response& res);

// Failed sign-ins per client address: after `max_failures` within `window_seconds`, further
// failures from the address are answered 429 until its window ends (valid tokens still pass).
class SignInLimiter {
 public:
  explicit SignInLimiter(int max_failures = 10, int64_t window_seconds = 60)
      : max_failures_(max_failures), window_(window_seconds) {}
  // Seconds the address must still wait; 0 when it may try.
  int64_t RetryAfter(const std::string& address, int64_t now);
  // Records a failure; true when this one reaches the limit.
  bool Failed(const std::string& address, int64_t now);

 private:
  struct Window {
    int64_t start = 0;
    int failures = 0;
  };
  const int max_failures_;
  const int64_t window_;
  std::mutex mu_;
  std::map<std::string, Window> windows_;
};

// A project, data plane or user name as the API takes it: a lowercase letter, then up to 62
// lowercase letters, digits or '-'.
bool ValidName(const std::string& s);

// Authentication and the audit log, shared by every route.
class Auth {
 public:
  Auth(Store* store, SignInLimiter* limiter, SessionTable* sessions = nullptr)
      : store_(store), limiter_(limiter), sessions_(sessions) {}
  Store* store() const { return store_; }
  SessionTable* sessions() const { return sessions_; }
  // The caller named by the bearer token, or by the console's session cookie when there is no
  // Authorization header (a state-changing request then needs the session's X-CSRF-Token); or
  // an answer: 401 (none, unknown, expired, revoked), 403 (CSRF), 429 (a failure from an
  // address with too many already), 503 (store away).
  std::optional<Principal> Authenticate(const httplib::Request& req, httplib::Response& res);
  // For an application the console proxies (JupyterLab), whose own script sends no
  // X-CSRF-Token: a bearer token, or the console's session cookie, a state-changing request then
  // having to come from this site (its Origin names the request's Host). An Authorization header
  // of another scheme (the application's own) is not the caller's credential here.
  std::optional<Principal> AuthenticateProxied(const httplib::Request& req, httplib::Response& res);
  // The same for a token known by its digest (sign-in).
  std::optional<Principal> AuthenticateDigest(const std::string& digest, const httplib::Request& req,
                                              httplib::Response& res);
  // The live console session of the request's cookie, if any.
  std::optional<Session> SessionOf(const httplib::Request& req);
  // For routes /api/v1/dataplanes/{name}/...: the body of a request from that data plane's own
  // agent (401/403/400 answered otherwise).
  std::optional<nlohmann::json> AgentBody(const httplib::Request& req, httplib::Response& res);
  // One audit entry; a store failure is logged, never fails the request it describes.
  void Audit(const std::string& actor, const httplib::Request& req, const std::string& action,
             const std::string& target, const std::string& detail = "");

 private:
  // True for the one caller that records this token's use this minute.
  bool ClaimTouch(const std::string& digest, int64_t now);
  Store* store_;
  SignInLimiter* limiter_;
  SessionTable* sessions_;
  std::mutex touch_mu_;
  std::map<std::string, int64_t> touched_;  // token digest -> when this server last recorded its use
};

// Route wrappers: the handler runs only for a caller the request authenticates (else 401, 403
// for CSRF, 429 or 503 is answered), and only when the caller may use the route: a member of the
// project the path names in its first group (/api/v1/projects/{project}/...), or an admin.
using CallerHandler = std::function<void(const Principal&, const httplib::Request&, httplib::Response&)>;
using ProjectHandler =
    std::function<void(const Principal&, const std::string& project, const httplib::Request&, httplib::Response&)>;
std::function<void(const httplib::Request&, httplib::Response&)> Authenticated(Auth* auth, CallerHandler h);
std::function<void(const httplib::Request&, httplib::Response&)> InProject(Auth* auth, ProjectHandler h);
std::function<void(const httplib::Request&, httplib::Response&)> AdminOnly(Auth* auth, CallerHandler h);

bool RequireProject(const Principal& p, const std::string& project, httplib::Response& res);
bool RequireAgentFor(const Principal& p, const std::string& data_plane, httplib::Response& res);
bool RequireAdmin(const Principal& p, httplib::Response& res);

// Times in queries are unix seconds up to the year 9999.
inline constexpr int64_t kMaxUnixSeconds = 253402300799;

// JSON answers carry their charset. It also keeps cpp-httplib 0.11 from compressing them: it
// compresses exactly "application/json" for any client that accepts Brotli (every browser), at
// Brotli's slowest quality, on each request: 7.7 s for the live view of 10,000 queued jobs that
// takes 0.1 s uncompressed.
inline constexpr const char* kJsonContentType = "application/json; charset=utf-8";

// For routes /api/v1/projects/{project}/jobs/{dataPlane}/{cluster}/{jobId}[/...] (?submitTime=):
// the project's job, or an answer (400 bad submitTime, 404 no such job in the project, 503).
std::optional<JobRecord> ProjectJob(Store* store, const httplib::Request& req, const std::string& project,
                                    httplib::Response& res);

// The data plane if it is Healthy, reports slurm/slurmctld and reported within
// `unreachable_after` seconds; otherwise a 409 naming it (503 if the store is away).
bool RequireSlurmDataPlane(Store* store, const std::string& name, int unreachable_after, httplib::Response& res);

// For what only a workspace's own user reaches (a terminal, JupyterLab; not even an admin):
// workspace `id` of `project` when it is the caller's, Ready, and its data plane is up; otherwise
// an answer (404, 403 naming the owner and `what`, 409, 503).
std::optional<WorkspaceRecord> OwnersReadyWorkspace(Store* store, const Principal& p, const std::string& project,
                                                    const std::string& id, const std::string& what,
                                                    int unreachable_after, httplib::Response& res);

}  // namespace hpc::cp::http
