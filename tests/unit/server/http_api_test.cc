// What every REST route shares: failed sign-in limits, 405 answers, CSV that spreadsheets
// cannot run, and the agent's match of an API submission to its job.
#include <map>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "agent/agent.h"
#include "messages/job_record.h"
#include "server/http_api.h"
#include "server/route_table.h"
#include "server/sessions.h"

#include <nlohmann/json.hpp>

#include "server/openapi.h"
#include "server/route_table.h"
#include "server/server.h"

namespace hpc::cp {
namespace {

// Each code has one HTTP status, and an invalid argument's field reaches the JSON error.
TEST(HttpErrors, StatusCodesMapToHttpAndCarryTheirField) {
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kNotFound), 404);
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kConflict), 409);
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kUnavailable), 503);
  EXPECT_EQ(http::HttpStatusFor(StatusCode::kUnknown), 500);
  httplib::Response res;
  http::Error(res, Status::InvalidArgument("options.time", "unknown option"));
  EXPECT_EQ(res.status, 400);
  auto body = nlohmann::json::parse(res.body);
  EXPECT_EQ(body["error"]["field"], "options.time");
  EXPECT_EQ(body["error"]["message"], "options.time: unknown option");
}

TEST(SignInLimiter, LimitsAnAddressForTheRestOfItsWindowOnly) {
  http::SignInLimiter limiter(3, 60);
  EXPECT_EQ(limiter.RetryAfter("10.0.0.1", 1000), 0);
  EXPECT_FALSE(limiter.Failed("10.0.0.1", 1000));
  EXPECT_FALSE(limiter.Failed("10.0.0.1", 1010));
  EXPECT_TRUE(limiter.Failed("10.0.0.1", 1020));  // the third trips it
  EXPECT_EQ(limiter.RetryAfter("10.0.0.1", 1020), 40);
  EXPECT_EQ(limiter.RetryAfter("10.0.0.2", 1020), 0);  // other addresses are not affected
  EXPECT_EQ(limiter.RetryAfter("10.0.0.1", 1060), 0);  // a new window
  EXPECT_FALSE(limiter.Failed("10.0.0.1", 1060));
}

TEST(RouteTable, AllowListsTheMethodsOfEveryRouteMatchingThePath) {
  httplib::Server s;
  RouteTable routes(s);
  routes.Get("/api/v1/tokens", [](const httplib::Request&, httplib::Response&) {});
  routes.Post("/api/v1/tokens", [](const httplib::Request&, httplib::Response&) {});
  routes.Delete(R"(/api/v1/tokens/([0-9a-f]{16}))", [](const httplib::Request&, httplib::Response&) {});
  EXPECT_EQ(routes.Allow("/api/v1/tokens"), "GET, POST");
  EXPECT_EQ(routes.Allow("/api/v1/tokens/0123456789abcdef"), "DELETE");
  EXPECT_EQ(routes.Allow("/api/v1/tokens/xyz"), "");
}

// A route's template shows each group of its pattern as {}: optional ones too, escaped
// parentheses never (they are the path's own characters).
TEST(RouteTable, TemplatesShowEveryGroupAndNothingElse) {
  httplib::Server s;
  RouteTable routes(s);
  auto none = [](const httplib::Request&, httplib::Response&) {};
  routes.Get(R"(/p/([a-z]+)/lab(/.*)?)", none);
  routes.Get(R"(/q\(x\)/([0-9]+))", none);
  const auto all = routes.All();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].tmpl, "/p/{}/lab{}");
  EXPECT_EQ(all[0].groups, (std::vector<std::string>{"([a-z]+)", "(/.*)?"}));
  EXPECT_EQ(all[1].tmpl, R"(/q\(x\)/{})");
  EXPECT_EQ(all[1].pattern, R"(/q\(x\)/([0-9]+))");
  EXPECT_EQ(all[1].groups, std::vector<std::string>{"([0-9]+)"});
}

TEST(CsvExport, FieldsThatStartLikeFormulasAreNeutralised) {
  JobRecord r;
  r.name = "=cmd|' /C calc'!A0";
  r.exit_code = "0:0";
  r.node_list = "+w-0";
  r.tres = "@SUM(1)";
  r.job_id = 7;
  std::string line = ToCsvLine(r);
  EXPECT_NE(line.find("'=cmd|' /C calc'!A0"), std::string::npos) << line;
  EXPECT_NE(line.find(",'+w-0,"), std::string::npos) << line;
  EXPECT_NE(line.find(",'@SUM(1),"), std::string::npos) << line;
  EXPECT_NE(line.find(",0:0,"), std::string::npos) << line;
  r.name = "-1+1";
  EXPECT_NE(ToCsvLine(r).find(",'-1+1,"), std::string::npos);
}

// Guards the agent taking a job of another user that carries a submission's comment.
TEST(MatchSubmittedJob, OnlyTheSubmissionsOwnUsersJobCounts) {
  const std::string listing =
      "41|1700000000|mallory|hpcplane-submission:abc\n"
      "42|1700000001|ann|hpcplane-submission:abcd\n"
      "43|1700000002|ann|hpcplane-submission:abc\n";
  auto found = MatchSubmittedJob(listing, "abc", "ann");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->first, 43);
  EXPECT_EQ(found->second, 1700000002);
  EXPECT_FALSE(MatchSubmittedJob(listing, "abc", "ben").has_value());
  EXPECT_FALSE(MatchSubmittedJob("garbage\n||\n", "abc", "ann").has_value());
}

// Console sessions: random ids and CSRF tokens, found until they expire, gone when deleted,
// and bounded in number.
TEST(SessionTable, SessionsExpireAreDeletedAndStayBounded) {
  SessionTable t(100, 3);
  auto a = t.Create("digest-a", 1000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->id.size(), 64u);
  EXPECT_NE(a->id, a->csrf);
  EXPECT_EQ(t.Find(a->id, 1099)->token_digest, "digest-a");
  EXPECT_FALSE(t.Find(a->id, 1100).has_value());  // expired
  EXPECT_FALSE(t.Find("nope", 1000).has_value());
  auto b = t.Create("digest-b", 1000);
  t.Delete(b->id);
  EXPECT_FALSE(t.Find(b->id, 1001).has_value());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(t.Create("d" + std::to_string(i), 2000 + i)->id);
  EXPECT_FALSE(t.Find(ids[0], 2010).has_value());  // the oldest went when the fourth came
  EXPECT_TRUE(t.Find(ids[4], 2010).has_value());
}

TEST(SessionTable, CookieValueFindsTheNamedCookieOnly) {
  EXPECT_EQ(CookieValue("a=1; hpcplane_session=abc; b=2", kSessionCookie), "abc");
  EXPECT_EQ(CookieValue("hpcplane_session=x", kSessionCookie), "x");
  EXPECT_EQ(CookieValue("hpcplane_session_other=x; hpcplane_sessionx=y", kSessionCookie), "");
  EXPECT_EQ(CookieValue("", kSessionCookie), "");
}

// The OpenAPI document is JSON and documents what the console uses.
TEST(OpenApi, DocumentsTheConsoleRoutes) {
  auto doc = OpenApiBase();
  for (const char* path : {"/session", "/projects", "/projects/{project}/jobs/stats", "/projects/{project}/jobs"}) {
    EXPECT_TRUE(doc["paths"].contains(path)) << path;
  }
  EXPECT_TRUE(doc["components"]["securitySchemes"].contains("session"));
}

// The route table of a server with every route of the API.
class OpenApiRoutes : public ::testing::Test {
 protected:
  OpenApiRoutes() { AddApiRoutes(routes_, &auth_, nullptr, &relay_, &terminals_, &tunnels_, 30, false); }
  httplib::Server server_;
  RouteTable routes_{server_};
  http::SignInLimiter limiter_;
  http::Auth auth_{nullptr, &limiter_};
  RelayHub relay_;
  TerminalHub terminals_;
  TunnelHub tunnels_;
};

// The served path of a documented one: under /api/v1 unless its item says it is served beside.
std::string Served(const std::string& path, const nlohmann::json& item) {
  return (item.contains("servers") ? "" : "/api/v1") + path;
}

// Every route the API serves is in the OpenAPI document with its method, and every operation
// the document describes is served: a route added or removed on one side only fails here.
TEST_F(OpenApiRoutes, TheDocumentAndTheRouteTableDescribeTheSameOperations) {
  auto doc = OpenApiDocument(routes_);
  std::set<std::pair<std::string, std::string>> documented, served;
  for (auto it = doc["paths"].begin(); it != doc["paths"].end(); ++it) {
    const std::string path = std::regex_replace(Served(it.key(), it.value()), std::regex(R"(\{[A-Za-z]+\})"), "{}");
    for (const char* m : {"get", "put", "post", "delete", "patch"}) {
      if (it.value().contains(m)) documented.emplace(m, path);
    }
  }
  for (const auto& [method, tmpl] : routes_.Routes()) {
    if (tmpl.rfind("/api/v1/", 0) != 0 && tmpl.find("/lab") == std::string::npos) continue;  // the console's files
    std::string lower = method;
    for (auto& c : lower) c = static_cast<char>(std::tolower(c));
    served.emplace(lower, tmpl);
    EXPECT_TRUE(documented.count({lower, tmpl})) << method << " " << tmpl << " is not documented";
  }
  for (const auto& [method, path] : documented) {
    if (path == "/metrics" || path == "/api/v1/openapi.json") continue;  // the server's own, beside the table's
    EXPECT_TRUE(served.count({method, path})) << method << " " << path << " is documented but not served";
  }
  EXPECT_GT(served.size(), 50u);
}

// Each path value is declared once, with the pattern its route matches it against (a value
// that does not match is answered 404, as the document says), and every operation has an id,
// the answers of authentication, and a JSON body for each error.
TEST_F(OpenApiRoutes, PathValuesCarryTheirRoutesPatternsAndEveryErrorItsBody) {
  auto doc = OpenApiDocument(routes_);
  const auto& project = doc["paths"]["/projects/{project}/jobs/{dataPlane}/{cluster}/{jobId}"];
  ASSERT_TRUE(project.contains("parameters"));
  std::map<std::string, nlohmann::json> values;
  for (const auto& p : project["parameters"]) values[p["name"]] = p;
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(values["project"]["in"], "path");
  EXPECT_EQ(values["project"]["required"], true);
  EXPECT_EQ(values["project"]["schema"]["pattern"], "^([a-z][a-z0-9-]*)$");
  EXPECT_EQ(values["jobId"]["schema"]["type"], "integer");
  // Every path value of every path: the pattern its route matches it against, or a whole number.
  size_t values_seen = 0;
  for (auto it = doc["paths"].begin(); it != doc["paths"].end(); ++it) {
    for (const auto& p : it.value().value("parameters", nlohmann::json::array())) {
      if (p.value("in", "") != "path") continue;
      ++values_seen;
      const auto& schema = p["schema"];
      EXPECT_TRUE(schema.contains("pattern") || schema.value("type", "") == "integer")
          << it.key() << " {" << p["name"] << "} has no pattern: " << schema.dump();
    }
  }
  EXPECT_GT(values_seen, 60u);
  std::set<std::string> ids;
  for (auto it = doc["paths"].begin(); it != doc["paths"].end(); ++it) {
    for (const char* m : {"get", "put", "post", "delete", "patch"}) {
      if (!it.value().contains(m)) continue;
      const auto& op = it.value()[m];
      const std::string where = std::string(m) + " " + it.key();
      ASSERT_TRUE(op.contains("operationId")) << where;
      EXPECT_TRUE(ids.insert(op["operationId"]).second) << where << ": operationId " << op["operationId"];
      const bool open = op.contains("security") && op["security"].empty();
      if (!open) {
        EXPECT_TRUE(op["responses"].contains("401")) << where;
        EXPECT_TRUE(op["responses"].contains("429")) << where;
      }
      if (it.key().find('{') != std::string::npos) {
        EXPECT_TRUE(op["responses"].contains("404")) << where;
      }
      for (auto r = op["responses"].begin(); r != op["responses"].end(); ++r) {
        if (std::stoi(r.key()) >= 400) {
          EXPECT_EQ(r.value()["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Error")
              << where << " " << r.key();
        }
      }
      // (JupyterLab's proxy, beside /api/v1, checks the session's Origin instead: its document says so.)
      if (std::string(m) != "get" && !open && !it.value().contains("servers")) {
        EXPECT_EQ(op["security"][1]["csrf"], nlohmann::json::array()) << where << ": the session needs its CSRF header";
      }
    }
  }
}

}  // namespace
}  // namespace hpc::cp
