#include "server/console_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "server/console_assets.h"
#include "server/http_api.h"
#include "server/route_table.h"

namespace hpc::cp {
using http::kMaxUnixSeconds;
using nlohmann::json;

namespace {

// At most this many buckets in one statistics answer.
constexpr int64_t kMaxBuckets = 1000;

// The page may load only its own files and talk only to its own server; nothing inline, nothing
// framed. The terminal page alone may have inline styles: xterm.js's renderer sizes the
// terminal's cells with style elements it writes (scripts stay its own files only).
void SecurityHeaders(httplib::Response& res, bool inline_styles = false) {
  res.set_header("Content-Security-Policy",
                 fmt::format("default-src 'none'; script-src 'self'; style-src 'self'{}; img-src 'self' data:; "
                             "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
                             inline_styles ? " 'unsafe-inline'" : ""));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-cache");
}

void Serve(const std::string& name, httplib::Response& res, bool inline_styles = false) {
  const ConsoleAsset* a = FindConsoleAsset(name);
  if (!a) return http::Error(res, Status::NotFound("no such console file: " + name));
  SecurityHeaders(res, inline_styles);
  res.set_content(a->data, a->size, a->content_type);
}

json PrincipalJson(const Principal& p) {
  return {{"subject", p.subject}, {"role", RoleName(p.role)}, {"projects", p.projects}};
}

std::string SessionCookie(const std::string& value, int64_t max_age, bool secure) {
  return fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}", kSessionCookie, value, max_age,
                     secure ? "; Secure" : "");
}

using httplib::Request;
using httplib::Response;

// Sign in: an API token in, a session cookie out. Failures count against the address like a bad
// bearer token (429 past the limit) and are audited.
void SignIn(http::Auth* auth, bool secure_cookies, const Request& req, Response& res) {
  // JSON only: a cross-site HTML form cannot send it, so no other site can sign a browser in
  // under its own token (login CSRF).
  if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
    return http::Error(res, 415, "sign-in takes a JSON body (Content-Type: application/json)", "body");
  }
  auto body = http::Body(req, res);
  if (!body) return;
  if (!body->contains("token") || !(*body)["token"].is_string() || (*body)["token"].get<std::string>().empty()) {
    return http::Error(res, Status::InvalidArgument("", "token is required (an API token)").WithField("token"));
  }
  const std::string digest = jwt::Sha256Hex((*body)["token"].get<std::string>());
  auto p = auth->AuthenticateDigest(digest, req, res);
  if (!p) return;
  if (p->role == Role::kAgent || p->role == Role::kMetrics) {
    return http::Error(res, Status::PermissionDenied(
                                fmt::format("a token of role {} cannot sign in to the console", RoleName(p->role))));
  }
  auto session = auth->sessions()->Create(digest, jwt::UnixNow());
  if (!session.ok()) return http::Error(res, StoreUnavailable(session.status()));
  auth->Audit(p->subject, req, "session.create", p->subject);
  res.set_header("Set-Cookie", SessionCookie(session->id, auth->sessions()->ttl_seconds(), secure_cookies));
  json out = PrincipalJson(*p);
  out["csrfToken"] = session->csrf;
  out["expiresAt"] = session->expires_at;
  http::Ok(res, out, 201);
}

// The projects the caller may open: admins every configured one, others their own.
void ListProjects(ProjectStore* store, const Principal& p, Response& res) {
  if (p.role == Role::kAgent) return http::Error(res, Status::PermissionDenied("agents have no projects"));
  std::vector<std::string> names = p.projects;
  if (p.role == Role::kAdmin) {
    auto all = store->ProjectNames();
    if (!all.ok()) return http::Error(res, StoreUnavailable(all.status()));
    names = *all;
  }
  http::Ok(res, {{"projects", names}});
}

// The statistics query: a window (the last 7 days by default) cut into at most kMaxBuckets.
// `project` empty: every project's jobs.
bool StatsFilter(const Request& req, const std::string& project, JobFilter* f, int64_t* bucket, Response& res) {
  f->project = project;
  f->all_projects = project.empty();
  f->user = req.get_param_value("user");
  f->workspace = req.get_param_value("workspace");
  int64_t now = jwt::UnixNow();
  *bucket = 3600;
  f->to = now + 1;
  f->from = now - 7 * 86400;
  if (!http::IntegerParam(req, res, "from", 0, kMaxUnixSeconds, &f->from) ||
      !http::IntegerParam(req, res, "to", 1, kMaxUnixSeconds, &f->to) ||
      !http::IntegerParam(req, res, "bucket", 60, 366 * 86400, bucket)) {
    return false;
  }
  if (f->from >= f->to) {
    http::Error(res, Status::InvalidArgument("", "from must be before to").WithField("from"));
    return false;
  }
  if ((f->to - f->from) / *bucket > kMaxBuckets) {
    http::Error(res, Status::InvalidArgument("", fmt::format("{} buckets of {} s between from and to; at most {}",
                                                             (f->to - f->from) / *bucket, *bucket, kMaxBuckets))
                         .WithField("bucket"));
    return false;
  }
  return true;
}

// Charts: jobs per state per bucket, queue waits, node-hours per user per day; computed by the
// store, so the browser never receives every job.
void ServeJobStats(JobStore* store, const std::string& project, const Request& req, Response& res) {
  JobFilter f;
  int64_t bucket = 0;
  if (!StatsFilter(req, project, &f, &bucket, res)) return;
  auto stats = store->JobStatistics(f, bucket);
  if (!stats.ok()) return http::Error(res, StoreUnavailable(stats.status()));
  json buckets = json::array(), wait = json::array(), usage = json::array();
  for (const auto& b : stats->buckets) {
    buckets.push_back({{"start", b.start}, {"states", b.states}, {"waits", b.waits}});
  }
  for (const auto& [label, n] : stats->wait) wait.push_back({{"range", label}, {"jobs", n}});
  // Node-hours per user within a project, per project across all of them.
  const char* who = f.all_projects ? "project" : "user";
  for (const auto& u : stats->usage) usage.push_back({{who, u.user}, {"day", u.day}, {"nodeHours", u.node_hours}});
  http::Ok(res, {{"from", f.from},
                 {"to", f.to},
                 {"bucket", bucket},
                 {"states", buckets},
                 {"queueWait", wait},
                 {"nodeHours", usage}});
}

}  // namespace

void AddConsoleRoutes(RouteTable& s, http::Auth* auth, bool secure_cookies) {
  Store* store = auth->store();
  s.Get("/", [](const Request&, Response& res) { Serve("index.html", res); });
  s.Get("/terminal", [](const Request&, Response& res) { Serve("terminal.html", res, true); });
  s.Get(R"(/console/([a-z][a-z_-]*\.(?:m?js|css|html)))",
        [](const Request& req, Response& res) { Serve(req.matches[1], res); });
  // Browsers ask for an icon on their own; the console has none, and says so without an error.
  s.Get("/favicon.ico", [](const Request&, Response& res) { res.status = 204; });
  s.Post("/api/v1/session",
         [auth, secure_cookies](const Request& req, Response& res) { SignIn(auth, secure_cookies, req, res); });
  // Who is signed in (the console's first call), with the session's CSRF token, and whether
  // this server serves WebSockets (it does, over TLS too; a client that reads false polls).
  s.Get("/api/v1/session", http::Authenticated(auth, [auth](const Principal& p, const Request& req, Response& res) {
          json out = PrincipalJson(p);
          out["websockets"] = true;
          if (auto session = auth->SessionOf(req)) {
            out["csrfToken"] = session->csrf;
            out["expiresAt"] = session->expires_at;
          }
          http::Ok(res, out);
        }));
  s.Delete("/api/v1/session",
           http::Authenticated(auth, [auth, secure_cookies](const Principal&, const Request& req, Response& res) {
             if (auto session = auth->SessionOf(req)) auth->sessions()->Delete(session->id);
             res.set_header("Set-Cookie", SessionCookie("", 0, secure_cookies));
             http::Ok(res, {{"signedOut", true}});
           }));
  s.Get("/api/v1/projects", http::Authenticated(auth, [store](const Principal& p, const Request&, Response& res) {
          ListProjects(store, p, res);
        }));
  s.Get("/api/v1/jobs/stats", http::AdminOnly(auth, [store](const Principal&, const Request& req, Response& res) {
          ServeJobStats(store, "", req, res);
        }));
  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs/stats)",
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request& req, Response& res) {
          ServeJobStats(store, project, req, res);
        }));
}

}  // namespace hpc::cp
