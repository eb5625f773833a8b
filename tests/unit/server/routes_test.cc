// The REST routes of every route file, in-process: a real cp::Server on a loopback port over an
// SQLite store in a temp dir (the store is the real one: it is small and fast; the services
// behind the routes have their own tests on fakes). What each route file promises at its edge:
// who may call it (401 without a token, 403 for a non-member, a non-admin, another data plane's
// agent), what a good request returns, and that a refusal names its field.
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "common/jwt.h"
#include "common/subprocess.h"
#include "common/tls_relay.h"
#include "common/websocket.h"
#include "fakes/fake_data_plane.h"
#include "server/server.h"
#include "server/store.h"
#include "server/submission_service.h"
#include "server/websocket_upgrade.h"

namespace hpc::cp {
namespace {

using nlohmann::json;

class RoutesTest : public ::testing::Test {
 protected:
  // `tls`: the server terminates TLS itself, with a self-signed certificate for 127.0.0.1 that
  // every client here (and the agent) verifies.
  explicit RoutesTest(bool tls = false) {
    dir_ = std::filesystem::temp_directory_path() / ("hpcplane-routes-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    if (tls) ca_file_ = SelfSignedCertificate(dir_);
    auto store = OpenStore("sqlite:" + (dir_ / "cp.db").string());
    EXPECT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    admin_ = Token("root-admin", Role::kAdmin);
    ann_ = Token("ann", Role::kUser, {"astro"});
    bob_ = Token("bob", Role::kUser, {"bio"});
    agent_ = Token("dp1", Role::kAgent);
    other_agent_ = Token("dp2", Role::kAgent);
    ServerOptions o;
    o.port = 0;
    if (tls) {
      o.tls_cert = ca_file_;
      o.tls_key = (dir_ / "key.pem").string();
    }
    server_ = std::make_unique<Server>(store_.get(), o);
    auto port = server_->Bind();
    EXPECT_TRUE(port.ok()) << port.status().message();
    port_ = *port;
    url_ = fmt::format("{}://127.0.0.1:{}", tls ? "https" : "http", port_);
    thread_ = std::thread([this] { server_->Serve(); });
  }
  ~RoutesTest() override {
    server_->Stop();
    thread_.join();
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string Token(const std::string& subject, Role role, const std::vector<std::string>& projects = {}) {
    auto t = BootstrapToken(store_.get(), subject, role, projects);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return *t;
  }
  struct Answer {
    int status = 0;
    json body;
  };
  // A self-signed certificate for 127.0.0.1 (cert.pem, key.pem in `dir`), made with the openssl
  // command; its path.
  static std::string SelfSignedCertificate(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    const std::string cert = (dir / "cert.pem").string();
    auto made = RunProcess({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", (dir / "key.pem").string(), "-out", cert});
    EXPECT_TRUE(made.ok() && made->exit_code == 0) << (made.ok() ? made->err : made.status().message());
    return cert;
  }
  Answer Call(const std::string& method, const std::string& path, const std::string& token,
              const json& body = nullptr) {
    httplib::Client c(url_);
    if (!ca_file_.empty()) c.set_ca_cert_path(ca_file_.c_str());
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    const std::string data = body.is_null() ? "" : body.dump();
    httplib::Result r = method == "GET"      ? c.Get(path, h)
                        : method == "DELETE" ? c.Delete(path, h)
                        : method == "PUT"    ? c.Put(path, h, data, "application/json")
                                             : c.Post(path, h, data, "application/json");
    if (!r) return {};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  // Data plane dp1 reports Healthy with Slurm, and project astro runs its workspaces there.
  void DataPlaneAndProject() {
    ASSERT_EQ(Call("POST", "/api/v1/dataplanes/dp1/report", agent_,
                   {{"state", "Healthy"}, {"componentVersions", {{"slurm/slurmctld", "26.05.5"}}}})
                  .status,
              200);
    ASSERT_EQ(Call("PUT", "/api/v1/projects/astro", admin_, {{"dataPlane", "dp1"}}).status, 200);
  }

  // Workspace `ws` Ready as the agent reports it, and as `dp` (data plane dp1) runs it: ann's in
  // project astro.
  void ReadyOn(fakes::FakeDataPlane& dp, const std::string& ws) {
    ASSERT_EQ(Call("POST", "/api/v1/dataplanes/dp1/workspaces/" + ws + "/status", agent_, {{"phase", "Ready"}}).status,
              200);
    dp.cluster = "dp1";
    api::Workspace w;
    w.metadata.name = ws;
    w.spec.user.name = "ann";
    w.spec.project = "astro";
    w.status.phase = "Ready";
    dp.workspaces[ws] = w;
  }
  // Ann's workspace in project astro, Ready on `dp`, whose shells are an interactive sh that
  // prompts "ready> "; its id (empty when it could not be launched).
  std::string ReadyWorkspaceWithShell(fakes::FakeDataPlane& dp) {
    DataPlaneAndProject();
    auto launched = Call("POST", "/api/v1/projects/astro/workspaces", ann_, json::object());
    EXPECT_EQ(launched.status, 202) << launched.body.dump();
    if (launched.status != 202) return "";
    const std::string ws = launched.body["id"];
    dp.shell = {"/bin/sh", "-c", "PS1='ready> ' exec /bin/sh -i"};
    ReadyOn(dp, ws);
    return ws;
  }
  // dp1's real agent over `dp`, serving the relay on a thread of its own until Stop.
  struct RunningAgent {
    std::unique_ptr<Agent> agent;
    std::atomic<bool> stop{false};
    std::thread relay;
    void Stop() {
      stop = true;
      if (relay.joinable()) relay.join();
      agent.reset();  // joins what it runs: shells, JupyterLab, sockets
    }
    ~RunningAgent() { Stop(); }
  };
  std::unique_ptr<RunningAgent> StartAgent(fakes::FakeDataPlane& dp) {
    AgentOptions o;
    o.server = url_;
    o.ca_file = ca_file_;
    o.token = agent_;
    o.data_plane = "dp1";
    auto a = std::make_unique<RunningAgent>();
    a->agent = std::make_unique<Agent>(&dp, o);
    a->relay = std::thread([raw = a.get()] {
      while (!raw->stop) EXPECT_TRUE(raw->agent->ServeRelay(std::chrono::seconds(1)).ok());
    });
    return a;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::string url_;      // http://127.0.0.1:port, or https:// with TLS
  std::string ca_file_;  // with TLS: the server's certificate, which clients trust
  std::string admin_, ann_, bob_, agent_, other_agent_;
};

TEST_F(RoutesTest, EveryRouteFileRefusesACallerWithoutAToken) {
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/api/v1/projects/astro/jobs"},          // job_routes
           {"GET", "/api/v1/projects/astro/workspaces"},    // workspace_routes
           {"GET", "/api/v1/flags"},                        // admin_routes
           {"GET", "/api/v1/projects"},                     // console_routes
           {"GET", "/api/v1/dataplanes"},                   // dataplane_routes
           {"GET", "/api/v1/projects/astro/templates"},     // template_routes
           {"GET", "/api/v1/dataplanes/dp1/cancellations"}  // cancel_routes
       }) {
    EXPECT_EQ(Call(method, path, "").status, 401) << method << " " << path;
  }
}

TEST_F(RoutesTest, ProjectRoutesAreForTheProjectsMembers) {
  for (const std::string path :
       {"/api/v1/projects/astro/jobs", "/api/v1/projects/astro/jobs/export", "/api/v1/projects/astro/workspaces",
        "/api/v1/projects/astro", "/api/v1/projects/astro/jobs/stats", "/api/v1/projects/astro/templates"}) {
    EXPECT_EQ(Call("GET", path, bob_).status, 403) << path;
    EXPECT_EQ(Call("GET", path, agent_).status, 403) << path << ": agents belong to no project";
  }
  EXPECT_EQ(Call("GET", "/api/v1/projects/astro/jobs", ann_).status, 200);
  EXPECT_EQ(Call("GET", "/api/v1/projects/astro/jobs", admin_).status, 200) << "admins see every project";
}

TEST_F(RoutesTest, AdminRoutesAreForAdmins) {
  EXPECT_EQ(Call("PUT", "/api/v1/flags/EnableHPCJobs", ann_, {{"value", true}}).status, 403);
  EXPECT_EQ(Call("POST", "/api/v1/tokens", ann_, {{"subject", "eve"}, {"role", "admin"}}).status, 403);
  EXPECT_EQ(Call("GET", "/api/v1/audit", ann_).status, 403);
  EXPECT_EQ(Call("PUT", "/api/v1/projects/astro", ann_, {{"dataPlane", "dp1"}}).status, 403);
  auto flag = Call("PUT", "/api/v1/flags/EnableHPCJobs", admin_, {{"value", true}});
  EXPECT_EQ(flag.status, 200);
  EXPECT_EQ(Call("GET", "/api/v1/flags", ann_).body["flags"][kFlagHpcJobs], true);
  auto audit = Call("GET", "/api/v1/audit", admin_);
  ASSERT_EQ(audit.status, 200);
  EXPECT_EQ(audit.body["entries"][0]["action"], "flag.set");
}

TEST_F(RoutesTest, TokensAreCreatedOnceShownAndRevokedByTheirOwnerOrAnAdmin) {
  auto refused = Call("POST", "/api/v1/tokens", admin_, {{"subject", "Eve"}, {"role", "user"}});
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body["error"]["field"], "subject");
  EXPECT_EQ(Call("POST", "/api/v1/tokens", admin_, {{"subject", "eve"}, {"role", "user"}, {"ttl", "0s"}})
                .body["error"]["field"],
            "ttl");
  auto made = Call("POST", "/api/v1/tokens", admin_, {{"subject", "eve"}, {"role", "user"}, {"projects", {"astro"}}});
  ASSERT_EQ(made.status, 201);
  const std::string id = made.body["id"], secret = made.body["token"];
  EXPECT_EQ(Call("GET", "/api/v1/projects", secret).body["projects"], json::array({"astro"}));
  auto listed = Call("GET", "/api/v1/tokens", secret);
  ASSERT_EQ(listed.body["tokens"].size(), 1u) << "a user sees only their own tokens";
  EXPECT_FALSE(listed.body["tokens"][0].contains("token")) << "never the secret again";
  EXPECT_EQ(Call("DELETE", "/api/v1/tokens/" + id, ann_).status, 404) << "not ann's: not even said to exist";
  EXPECT_EQ(Call("DELETE", "/api/v1/tokens/" + id, secret).status, 200);
  EXPECT_EQ(Call("GET", "/api/v1/projects", secret).status, 401);
}

TEST_F(RoutesTest, AgentRoutesAreForTheirOwnDataPlane) {
  EXPECT_EQ(Call("POST", "/api/v1/dataplanes/dp1/report", other_agent_, {{"state", "Healthy"}}).status, 403);
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/submissions", other_agent_).status, 403);
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/workspaces", ann_).status, 403);
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/cancellations", other_agent_).status, 403);
  auto bad = Call("POST", "/api/v1/dataplanes/dp1/report", agent_, {{"state", "Fine"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["field"], "state");
  DataPlaneAndProject();
  auto planes = Call("GET", "/api/v1/dataplanes", ann_);
  ASSERT_EQ(planes.status, 200);
  EXPECT_EQ(planes.body["dataPlanes"][0]["slurm"]["offered"], true);
  auto jobs = Call("POST", "/api/v1/dataplanes/dp1/jobs", agent_, {{"jobs", {{{"jobId", "x"}}}}});
  EXPECT_EQ(jobs.status, 400);
  EXPECT_EQ(jobs.body["error"]["field"].get<std::string>().rfind("jobs[0]", 0), 0u) << jobs.body.dump();
}

TEST_F(RoutesTest, AWorkspaceIsLaunchedSubmittedToAndStoppedThroughTheApi) {
  DataPlaneAndProject();
  auto w = Call("POST", "/api/v1/projects/astro/workspaces", ann_, json::object());
  ASSERT_EQ(w.status, 202) << w.body.dump();
  const std::string id = w.body["id"];
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/workspaces", agent_).body["workspaces"].size(), 1u);
  EXPECT_EQ(Call("POST", "/api/v1/projects/astro/workspaces", ann_, json::object()).body["error"]["field"], "name");

  const json job = {{"workspace", id}, {"script", "#!/bin/bash\nsrun hostname\n"}};
  EXPECT_EQ(Call("POST", "/api/v1/projects/astro/jobs", ann_, job).status, 403) << "the flag is off";
  ASSERT_EQ(Call("PUT", "/api/v1/flags/EnableHPCJobs", admin_, {{"value", true}}).status, 200);
  auto sub = Call("POST", "/api/v1/projects/astro/jobs", ann_, job);
  ASSERT_EQ(sub.status, 202) << sub.body.dump();
  const std::string sub_id = sub.body["id"];
  EXPECT_EQ(Call("GET", "/api/v1/projects/astro/submissions/" + sub_id, ann_).body["state"], "Pending");
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/submissions", agent_).body["submissions"].size(), 1u);

  EXPECT_EQ(Call("DELETE", "/api/v1/projects/astro/workspaces/" + id, admin_).status, 202);
  EXPECT_EQ(Call("GET", "/api/v1/projects/astro/workspaces/" + id, ann_).body["desired"], "Stopped");
}

TEST_F(RoutesTest, StatisticsAndTemplatesRefuseBadQueriesByField) {
  DataPlaneAndProject();
  auto stats = Call("GET", "/api/v1/projects/astro/jobs/stats?from=100&to=50", ann_);
  EXPECT_EQ(stats.status, 400);
  EXPECT_EQ(stats.body["error"]["field"], "from");
  auto jobs = Call("GET", "/api/v1/projects/astro/jobs?user=Ann", ann_);
  EXPECT_EQ(jobs.status, 400);
  EXPECT_EQ(jobs.body["error"]["field"], "user");
  EXPECT_EQ(Call("PUT", "/api/v1/projects/astro/templates/hello", admin_,
                 {{"script", "#!/bin/bash\nhostname\n"}, {"options", {{"nodes", 1}}}})
                .status,
            201);
  EXPECT_EQ(Call("GET", "/api/v1/projects/astro/templates/hello", ann_).body["name"], "hello");
}

TEST_F(RoutesTest, TheConsoleSignsInWithJsonOnlyAndKnowsItsCaller) {
  httplib::Client c("127.0.0.1", port_);
  auto form = c.Post("/api/v1/session", "token=" + ann_, "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415) << "no cross-site form can sign a browser in";
  auto signin = c.Post("/api/v1/session", json{{"token", ann_}}.dump(), "application/json");
  ASSERT_TRUE(signin);
  EXPECT_EQ(signin->status, 201);
  EXPECT_NE(signin->get_header_value("Set-Cookie").find("HttpOnly"), std::string::npos);
  EXPECT_EQ(Call("GET", "/api/v1/session", ann_).body["subject"], "ann");
  EXPECT_EQ(Call("POST", "/api/v1/session", "", {{"token", agent_}}).status, 403) << "agents have no console";
}

TEST_F(RoutesTest, EveryProjectsJobsAreForAdminsOnly) {
  json jobs = json::array();
  for (int i = 0; i < 3; ++i) {
    jobs.push_back({{"cluster", "c1"},
                    {"jobId", 100 + i},
                    {"submitTime", 1700000000 + i},
                    {"user", "ann"},
                    {"project", i == 2 ? "bio" : "astro"},
                    {"state", "COMPLETED"},
                    {"nodes", 1},
                    {"elapsedSeconds", 3600}});
  }
  ASSERT_EQ(Call("POST", "/api/v1/dataplanes/dp1/jobs", agent_, {{"jobs", jobs}}).status, 200);
  auto all = Call("GET", "/api/v1/jobs", admin_);
  ASSERT_EQ(all.status, 200) << all.body.dump();
  ASSERT_EQ(all.body["jobs"].size(), 3u);
  EXPECT_EQ(all.body["jobs"][0]["project"], "bio") << "newest first, whatever the project";
  EXPECT_EQ(Call("GET", "/api/v1/jobs?user=ann&state=COMPLETED", admin_).body["jobs"].size(), 3u);
  EXPECT_EQ(Call("GET", "/api/v1/jobs?state=FAILED", admin_).body["jobs"].size(), 0u);
  EXPECT_EQ(Call("GET", "/api/v1/projects/astro/jobs", admin_).body["jobs"].size(), 2u) << "a project's stay its own";
  for (const std::string path : {"/api/v1/jobs", "/api/v1/jobs/export", "/api/v1/jobs/stats"}) {
    EXPECT_EQ(Call("GET", path, ann_).status, 403) << path;
    EXPECT_EQ(Call("GET", path, agent_).status, 403) << path;
    EXPECT_EQ(Call("GET", path, "").status, 401) << path;
  }
  auto stats = Call("GET", "/api/v1/jobs/stats?from=1699990000&to=1700010000&bucket=3600", admin_);
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  std::map<std::string, double> per_project;
  for (const auto& u : stats.body["nodeHours"]) per_project[u["project"]] += u["nodeHours"].get<double>();
  EXPECT_EQ(per_project, (std::map<std::string, double>{{"astro", 2.0}, {"bio", 1.0}}))
      << "node-hours per project across all of them";
}

json LiveView(int busy) {
  return {{"collectedAt", 1700000000},
          {"nodes",
           {{{"name", "c1-cpu-0"},
             {"nodeset", "cpu"},
             {"state", "idle"},
             {"flags", {"DRAIN"}},
             {"reason", "disk check"},
             {"cpus", 4},
             {"cpusAllocated", 0},
             {"memoryMiB", 8000},
             {"partitions", {"cpu"}}}}},
          {"partitions", {{{"name", "cpu"}, {"state", "UP"}, {"nodes", 1}, {"cpus", 4}}}},
          {"queue", {{{"jobId", 7}, {"user", "ann"}, {"state", "PENDING"}, {"reason", "Resources"}}}},
          {"queueTotal", 1},
          {"nodesets", {{{"name", "cpu"}, {"desired", 2}, {"current", 2}, {"busy", busy}, {"idle", 2 - busy}}}}};
}

TEST_F(RoutesTest, TheLiveClusterIsPostedByItsAgentAndReadByAdmins) {
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/live", admin_).status, 404) << "nothing reported yet";
  auto put = Call("POST", "/api/v1/dataplanes/dp1/live", agent_, LiveView(1));
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(Call("POST", "/api/v1/dataplanes/dp1/live", other_agent_, LiveView(1)).status, 403)
      << "an agent speaks for its own data plane only";
  EXPECT_EQ(Call("POST", "/api/v1/dataplanes/dp1/live", admin_, LiveView(1)).status, 403);
  for (const std::string path : {"/api/v1/dataplanes/dp1/live", "/api/v1/dataplanes/dp1/nodesets/history"}) {
    EXPECT_EQ(Call("GET", path, ann_).status, 403) << path;
    EXPECT_EQ(Call("GET", path, "").status, 401) << path;
  }
  auto live = Call("GET", "/api/v1/dataplanes/dp1/live", admin_);
  ASSERT_EQ(live.status, 200) << live.body.dump();
  EXPECT_FALSE(live.body["stale"]);
  EXPECT_EQ(live.body["view"]["nodes"][0]["reason"], "disk check");
  EXPECT_EQ(live.body["view"]["nodes"][0]["flags"], json({"DRAIN"}));
  EXPECT_EQ(live.body["view"]["queue"][0]["reason"], "Resources");
  auto history = Call("GET", "/api/v1/dataplanes/dp1/nodesets/history", admin_);
  ASSERT_EQ(history.status, 200) << history.body.dump();
  ASSERT_EQ(history.body["nodesets"]["cpu"].size(), 1u);
  EXPECT_EQ(history.body["nodesets"]["cpu"][0]["busy"], 1);
  EXPECT_EQ(history.body["nodesets"]["cpu"][0]["desired"], 2);
}

// The agent's side: it reads Slurm in the controller pod (here a fake data plane answering as
// Slurm 22.05 does, whose scontrol has no --json) and posts the view the admin then reads.
TEST_F(RoutesTest, TheAgentReportsTheLiveViewAndFallsBackToSinfoWhereScontrolHasNoJson) {
  fakes::FakeDataPlane dp;
  dp.cluster = "dp1";
  dp.nodesets = {{"cpu", 1, 1, 0, 1, 0}};
  dp.controller = [](const std::vector<std::string>& argv) -> Result<std::string> {
    if (argv == std::vector<std::string>{"scontrol", "ping"})
      return std::string("Slurmctld(primary) at dp1-controller is UP\n");
    if (argv[0] == "scontrol") return Status::Errorf("scontrol: exit 1: scontrol: unrecognized option '--json'");
    if (argv == std::vector<std::string>{"sinfo", "--json"}) {
      return std::string(R"({"nodes": [{"name": "dp1-cpu-0", "state": "idle", "state_flags": ["DRAIN"],
        "reason": "fan", "features": "cpu", "partitions": ["cpu"], "cpus": 4, "alloc_cpus": 0,
        "real_memory": 8000, "alloc_memory": 0}], "errors": []})");
    }
    if (argv[0] == "sinfo") return std::string("cpu|up\n");
    // squeue; a job name is the user's bytes, not always UTF-8.
    return std::string("7|ann|astro|cpu|PENDING|Resources|1|1|1700000000|0|10|hello\xff\n");
  };
  AgentOptions o;
  o.server = "http://127.0.0.1:" + std::to_string(port_);
  o.token = agent_;
  Agent agent(&dp, o);
  ASSERT_TRUE(agent.ReportLiveCluster().ok());
  ASSERT_TRUE(agent.ReportLiveCluster().ok());
  int scontrol_calls = 0;
  for (const auto& argv : dp.commands) scontrol_calls += argv[0] == "scontrol" && argv[1] == "show" ? 1 : 0;
  EXPECT_EQ(scontrol_calls, 1) << "the fallback is remembered";
  auto live = Call("GET", "/api/v1/dataplanes/dp1/live", admin_);
  ASSERT_EQ(live.status, 200) << live.body.dump();
  const json& view = live.body["view"];
  EXPECT_EQ(view["controllers"][0]["name"], "dp1-controller");
  EXPECT_EQ(view["controllers"][0]["responding"], true);
  EXPECT_EQ(view["nodes"][0]["nodeset"], "cpu");
  EXPECT_EQ(view["nodes"][0]["reason"], "fan");
  EXPECT_EQ(view["nodes"][0]["memoryMiB"], 8000);
  EXPECT_EQ(view["partitions"][0]["nodes"], 1);
  EXPECT_EQ(view["queue"][0]["reason"], "Resources");
  EXPECT_EQ(view["queue"][0]["name"], "hello\xEF\xBF\xBD") << "a byte that is not UTF-8 is replaced, not thrown on";
  EXPECT_EQ(view["nodesets"][0]["idle"], 1);
}

TEST_F(RoutesTest, AMalformedLiveViewIsRefusedNamingItsFieldAndKeepsTheLastGoodOne) {
  ASSERT_EQ(Call("POST", "/api/v1/dataplanes/dp1/live", agent_, LiveView(2)).status, 200);
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"nodes", {{{"name", "n"}, {"cpus", -1}}}}}, "nodes[0].cpus"},
      {{{"nodes", {{{"name", 5}}}}}, "nodes[0].name"},
      {{{"queue", "lots"}}, "queue"},
      {{{"nodesets", {{{"name", "../etc"}}}}}, "nodesets[0].name"},
      {{{"nodes", {{{"reason", std::string(600, 'x')}}}}}, "nodes[0].reason"},
      {{{"queue", {{{"jobId", 1}}}}, {"queueTotal", 0}}, "queueTotal"},
      {json::array(), "body"},
  };
  for (const auto& [body, field] : bad) {
    auto r = Call("POST", "/api/v1/dataplanes/dp1/live", agent_, body);
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.body["error"].value("field", ""), field) << body.dump() << " -> " << r.body.dump();
  }
  auto live = Call("GET", "/api/v1/dataplanes/dp1/live", admin_);
  EXPECT_EQ(live.body["view"]["nodesets"][0]["busy"], 2) << "a refused view changes nothing";
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/nodesets/history?from=10&to=5", admin_).body["error"]["field"], "from");
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/nodesets/history?from=0&to=99999999", admin_).status, 400)
      << "beyond the history kept";
}

// A job's output reaches the console only through its data plane's agent, which the control
// plane never dials: the agent's long poll takes the request and posts the answer back.
TEST_F(RoutesTest, AJobsOutputIsRelayedThroughItsAgentToItsUserAndAdminsOnly) {
  DataPlaneAndProject();
  const std::string carl = Token("carl", Role::kUser, {"astro"});
  json job = {{"cluster", "c1"},    {"jobId", 12}, {"submitTime", 1700000000}, {"user", "ann"}, {"project", "astro"},
              {"state", "RUNNING"}, {"nodes", 1}};
  ASSERT_EQ(Call("POST", "/api/v1/dataplanes/dp1/jobs", agent_, {{"jobs", {job}}}).status, 200);
  fakes::FakeDataPlane dp;
  dp.controller = [](const std::vector<std::string>&) -> Result<std::string> {
    return std::string(
        "JobId=12 UserId=ann(1001) JobState=RUNNING SubmitTime=1700000000 BatchHost=c1-cpu-0 "
        "StdOut=/datasets/astro/slurm-12.out\n");
  };
  dp.job_pods = {"c1-cpu-0", "c1-login"};
  std::atomic<int> reads{0};
  dp.in_pod = [&](const std::string&, const std::vector<std::string>& argv) -> Result<ProcessResult> {
    ProcessResult r;
    r.exit_code = argv[4] == "/datasets/astro/slurm-12.out" ? 0 : 3;
    r.out = "6 0\nhello\n";
    ++reads;
    return r;
  };
  AgentOptions o;
  o.server = "http://127.0.0.1:" + std::to_string(port_);
  o.token = agent_;
  o.data_plane = "dp1";
  Agent agent(&dp, o);
  std::atomic<bool> stop{false};
  std::thread relay([&] {
    while (!stop) EXPECT_TRUE(agent.ServeRelay(std::chrono::seconds(1)).ok());
  });
  const std::string path = "/api/v1/projects/astro/jobs/dp1/c1/12/output?submitTime=1700000000";
  auto out = Call("GET", path, ann_);
  EXPECT_EQ(out.status, 200) << out.body.dump();
  EXPECT_EQ(out.body["text"], "hello\n");
  EXPECT_EQ(out.body["path"], "/datasets/astro/slurm-12.out");
  EXPECT_EQ(out.body["nextOffset"], 6);
  EXPECT_EQ(Call("GET", path + "&offset=0&stream=stderr", admin_).status, 200) << "admins read any job's output";
  const int read_by_owner_and_admin = reads;
  EXPECT_EQ(Call("GET", path, carl).status, 403) << "another member of the project";
  EXPECT_EQ(Call("GET", path, bob_).status, 403) << "not a member";
  EXPECT_EQ(reads, read_by_owner_and_admin) << "a refused caller makes the agent read nothing";
  EXPECT_EQ(Call("GET", path + "&stream=stdin", ann_).body["error"]["field"], "stream");
  EXPECT_EQ(Call("GET", path + "&limit=0", ann_).body["error"]["field"], "limit");
  EXPECT_EQ(Call("GET", "/api/v1/projects/astro/jobs/dp1/c1/13/output?submitTime=1700000000", ann_).status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/relay?wait=0", other_agent_).status, 403);
  EXPECT_EQ(Call("GET", "/api/v1/dataplanes/dp1/relay?wait=0", ann_).status, 403);
  EXPECT_EQ(Call("POST", "/api/v1/dataplanes/dp1/relay/" + std::string(32, 'a'), agent_, {{"text", "forged"}}).status,
            404)
      << "an answer needs a request waiting for it";
  dp.controller = [](const std::vector<std::string>&) -> Result<std::string> {
    return std::string("JobId=12 UserId=ann(1001) JobState=RUNNING SubmitTime=1700000000 StdOut=/tmp/gone\n");
  };
  auto gone = Call("GET", path, ann_);
  EXPECT_EQ(gone.status, 404);
  EXPECT_NE(gone.body["error"]["message"].get<std::string>().find("/tmp/gone does not exist"), std::string::npos)
      << gone.body.dump();
  stop = true;
  relay.join();
}

// A terminal in the browser, end to end but for the pod: the real server, the real agent serving
// it through the relay, and a real shell on a pseudo-terminal here standing for the login pod's.
TEST_F(RoutesTest, ATerminalRunsTheOwnersShellThroughTheAgentAndEndsWhenClosed) {
  DataPlaneAndProject();
  const std::string carl = Token("carl", Role::kUser, {"astro"});
  auto launched = Call("POST", "/api/v1/projects/astro/workspaces", ann_, json::object());
  ASSERT_EQ(launched.status, 202) << launched.body.dump();
  const std::string ws = launched.body["id"];
  const std::string open_path = "/api/v1/projects/astro/workspaces/" + ws + "/terminals";
  EXPECT_EQ(Call("POST", open_path, ann_, json::object()).status, 409) << "not Ready yet";
  fakes::FakeDataPlane dp;
  ReadyOn(dp, ws);
  auto agent = StartAgent(dp);
  EXPECT_EQ(Call("POST", open_path, carl, json::object()).status, 403) << "another member";
  EXPECT_EQ(Call("POST", open_path, admin_, json::object()).status, 403) << "not even an admin: the shell is ann's";
  EXPECT_EQ(Call("POST", open_path, bob_, json::object()).status, 403);
  EXPECT_EQ(Call("POST", open_path, ann_, {{"cols", 1}}).body["error"]["field"], "cols");
  EXPECT_TRUE(dp.shells_started.empty()) << "no refused request started a shell";

  auto opened = Call("POST", open_path, ann_, {{"cols", 80}, {"rows", 24}});
  ASSERT_EQ(opened.status, 201) << opened.body.dump();
  const std::string term = "/api/v1/terminals/" + opened.body["id"].get<std::string>();
  uint64_t offset = 0;
  std::string screen;
  json last;
  // Reads until `text` is on screen (or the session closed, or `patience` passed).
  auto until = [&](const std::string& text, std::chrono::seconds patience = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (screen.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      last = Call("GET", term + "/output?wait=1&offset=" + std::to_string(offset), ann_).body;
      if (!last.is_object() || !last.contains("next")) return false;
      screen += *jwt::Base64Decode(last["data"].get<std::string>());
      offset = last["next"];
      if (last["closed"] == true) break;
    }
    return screen.find(text) != std::string::npos;
  };
  auto type = [&](const std::string& keys) { return Call("POST", term + "/input", ann_, {{"data", keys}}).status; };
  ASSERT_EQ(type("echo $((6*7))\n"), 200);
  EXPECT_TRUE(until("42")) << screen;
  ASSERT_EQ(Call("POST", term + "/input", ann_, {{"resize", {{"cols", 120}, {"rows", 40}}}}).status, 200);
  ASSERT_EQ(type("stty size\n"), 200);
  EXPECT_TRUE(until("40 120")) << "the resize reached the terminal: " << screen;
  ASSERT_EQ(type("sleep 100\n"), 200);
  // A Ctrl-C that arrives between bash forking the sleep and handing it the terminal reaches
  // bash, not the sleep: each try interrupts (and flushes the line typed after it) until the
  // echo runs, which it never does while the sleep holds the terminal.
  bool interrupted = false;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!interrupted && std::chrono::steady_clock::now() < give_up) {
    ASSERT_EQ(type("\x03"), 200);
    ASSERT_EQ(type("echo after-$((1+1))\n"), 200);
    interrupted = until("after-2", std::chrono::seconds(2));
  }
  EXPECT_TRUE(interrupted) << "Ctrl-C interrupted the sleep: " << screen;
  EXPECT_EQ(Call("POST", term + "/input", ann_, {{"data", std::string(65537, 'x')}}).body["error"]["field"], "data")
      << "a paste larger than the input queue is refused whole, not cut";
  EXPECT_EQ(Call("POST", term + "/input", ann_, {{"resize", {{"cols", 5000}, {"rows", 40}}}}).body["error"]["field"],
            "cols");
  EXPECT_EQ(Call("GET", term + "/output?wait=0", bob_).status, 404) << "another user sees no such terminal";
  EXPECT_EQ(Call("POST", term + "/input", carl, {{"data", "id\n"}}).status, 404);
  EXPECT_EQ(Call("DELETE", term, carl).status, 404);

  ASSERT_EQ(Call("DELETE", term, ann_).status, 200);
  until("\x01never");  // reads to the end
  EXPECT_EQ(last["closed"], true);
  EXPECT_EQ(last["reason"], "closed by its user");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto audit = Call("GET", "/api/v1/audit", admin_).body.dump();
  EXPECT_NE(audit.find("terminal.open"), std::string::npos);
  EXPECT_NE(audit.find("terminal.close"), std::string::npos);
  agent->Stop();  // joins every pump: the shell is gone by then
  EXPECT_LT(std::chrono::steady_clock::now(), deadline) << "the agent stopped promptly";
}

// A stand-in JupyterLab here: answers under its base path, an echoing WebSocket at api/echo, and
// its token as the only way in (what the agent sends; never the caller's own credentials).
struct FakeLab {
  FakeLab(std::string base_url, std::string lab_token) : base(std::move(base_url)), token(std::move(lab_token)) {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu);
        seen.push_back(req.headers);
      }
      if (req.get_header_value("Authorization") != "token " + token) {
        res.status = 403;
        return;
      }
      if (req.path == base + "api/echo" && ws::IsUpgrade({req.headers.begin(), req.headers.end()})) {
        auto self = std::make_shared<std::shared_ptr<ws::Connection>>();
        ServeWebSocket(
            req, res, [self](std::string data, bool binary) { (*self)->Send(std::move(data), binary); },
            [](const ws::CloseInfo&) {}, [self](const std::shared_ptr<ws::Connection>& c) { *self = c; });
        return;
      }
      if (req.path == base + "api/status") return res.set_content("{}", "application/json");
      if (req.path == base + "hello") return res.set_content("hi " + req.get_param_value("name"), "text/plain");
      if (req.method == "POST") return res.set_content(req.body, req.get_header_value("Content-Type"));
      res.status = 404;
    };
    http.Get(".*", handle);
    http.Post(".*", handle);
    port = http.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { http.listen_after_bind(); });
  }
  ~FakeLab() {
    http.stop();
    thread.join();
  }
  std::vector<httplib::Headers> Seen() {
    std::lock_guard<std::mutex> lock(mu);
    return seen;
  }
  std::string base, token;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  std::mutex mu;
  std::vector<httplib::Headers> seen;
};

// JupyterLab end to end but for the pod: the real server proxying it, the real agent starting it
// (a stand-in here) and relaying its HTTP requests and WebSockets.
TEST_F(RoutesTest, JupyterLabIsItsOwnersAloneOverHttpAndWebSocketsThroughTheAgent) {
  DataPlaneAndProject();
  const std::string carl = Token("carl", Role::kUser, {"astro"});
  auto launched = Call("POST", "/api/v1/projects/astro/workspaces", ann_, json::object());
  ASSERT_EQ(launched.status, 202) << launched.body.dump();
  const std::string ws = launched.body["id"];
  fakes::FakeDataPlane dp;
  ReadyOn(dp, ws);
  auto agent = StartAgent(dp);
  const std::string base = "/projects/astro/workspaces/" + ws + "/lab/";
  httplib::Client c("127.0.0.1", port_);
  auto get = [&](const std::string& path, const std::string& token) {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return c.Get(path, h);
  };
  EXPECT_EQ(get(base + "hello", "")->status, 401);
  EXPECT_EQ(get(base + "hello", carl)->status, 403) << "another member";
  EXPECT_EQ(get(base + "hello", admin_)->status, 403) << "not even an admin: JupyterLab is ann's";
  EXPECT_EQ(get(base + "hello", bob_)->status, 403);
  EXPECT_TRUE(dp.labs_started.empty()) << "no refused request started JupyterLab";
  auto none = get(base + "hello", ann_);
  EXPECT_EQ(none->status, 409) << "an environment without JupyterLab";
  EXPECT_NE(none->body.find("no JupyterLab"), std::string::npos) << none->body;

  std::unique_ptr<FakeLab> lab;
  pid_t lab_pid = 0;
  dp.lab = [&](const api::Workspace&, const LabLaunch& launch) -> Result<LabProcess> {
    lab = std::make_unique<FakeLab>(launch.base_url, launch.token);
    ASSIGN_OR_RETURN(PtyProcess p, SpawnOnPty({"sleep", "600"}, 80, 24));
    lab_pid = p.pid;
    return LabProcess{p, "127.0.0.1", lab->port};
  };
  auto hello = get(base + "hello?name=x", ann_);
  ASSERT_EQ(hello->status, 200) << hello->body;
  EXPECT_EQ(hello->body, "hi x");
  ASSERT_TRUE(lab);
  EXPECT_EQ(lab->base, base);
  for (const auto& h : lab->Seen()) {
    EXPECT_EQ(h.count("Cookie"), 0u);
    EXPECT_EQ(h.find("Authorization")->second, "token " + lab->token) << "the lab's own token, never ann's";
  }
  auto bare = get(base.substr(0, base.size() - 1), ann_);
  EXPECT_EQ(bare->status, 302);
  EXPECT_EQ(bare->get_header_value("Location"), base);

  // The console's session: a state-changing request must come from the console's own site.
  auto signin = c.Post("/api/v1/session", json{{"token", ann_}}.dump(), "application/json");
  ASSERT_EQ(signin->status, 201);
  const std::string cookie =
      signin->get_header_value("Set-Cookie").substr(0, signin->get_header_value("Set-Cookie").find(';'));
  auto cross =
      c.Post(base + "save", {{"Cookie", cookie}, {"Origin", "http://elsewhere.example"}}, "{}", "application/json");
  EXPECT_EQ(cross->status, 403) << "a page elsewhere posting with ann's cookie";
  auto same = c.Post(base + "save", {{"Cookie", cookie}, {"Origin", "http://127.0.0.1:" + std::to_string(port_)}},
                     "{\"n\":1}", "application/json");
  EXPECT_EQ(same->status, 200) << same->body;
  EXPECT_EQ(same->body, "{\"n\":1}");

  // A WebSocket through the agent's tunnel: text and binary pass both ways unchanged.
  ws::Loop loop;
  std::vector<std::pair<std::string, bool>> got;
  ws::CloseInfo closed;
  std::shared_ptr<ws::Connection> sock;
  auto opened = loop.Connect(
      "127.0.0.1", std::to_string(port_), base + "api/echo", {{"Authorization", "Bearer " + ann_}},
      std::chrono::seconds(30),
      [&](std::string data, bool binary) {
        got.emplace_back(std::move(data), binary);
        if (got.size() == 2) sock->Close(ws::kNormalClosure, "done");
      },
      [&](const ws::CloseInfo& info) { closed = info; });
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  sock = *opened;
  sock->Send("ping", false);
  sock->Send(std::string("\x00\x01\xff", 3), true);
  loop.Run();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(std::string("ping"), false));
  EXPECT_EQ(got[1], std::make_pair(std::string("\x00\x01\xff", 3), true));
  EXPECT_EQ(closed.code, ws::kNormalClosure);
  // Upgrades refused before any WebSocket: with their HTTP status.
  auto upgrade = [&](const std::string& path, const std::string& token) {
    return c
        .Get(path, {{"Authorization", "Bearer " + token},
                    {"Upgrade", "websocket"},
                    {"Connection", "Upgrade"},
                    {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                    {"Sec-WebSocket-Version", "13"}})
        ->status;
  };
  EXPECT_EQ(upgrade(base + "api/echo", carl), 403) << "another member";
  const std::string tunnel = "/api/v1/dataplanes/dp1/tunnels/" + std::string(32, 'a');
  EXPECT_EQ(upgrade(tunnel, other_agent_), 403) << "another data plane's agent";
  EXPECT_EQ(upgrade(tunnel, agent_), 404) << "no such tunnel";
  EXPECT_EQ(upgrade(tunnel, ann_), 403) << "a user is no agent";
  EXPECT_FALSE(loop.Connect("127.0.0.1", std::to_string(port_), base + "api/echo",
                            {{"Authorization", "Bearer " + carl}}, std::chrono::seconds(30), nullptr, nullptr)
                   .ok());
  EXPECT_EQ(dp.labs_started.size(), 2u) << "one JupyterLab served every request once it started";
  agent->Stop();  // ends JupyterLab
  EXPECT_NE(::kill(lab_pid, 0), 0) << "the agent ended JupyterLab when it stopped";
}

// The terminal over a WebSocket, end to end but for the pod: the browser's socket joined through
// the server's tunnel to the agent's, a real shell on a pseudo-terminal here.
TEST_F(RoutesTest, ATerminalOverAWebSocketRunsTheOwnersShellAndClosesWithWhyItEnded) {
  fakes::FakeDataPlane dp;
  const std::string ws = ReadyWorkspaceWithShell(dp);
  ASSERT_FALSE(ws.empty());
  auto agent = StartAgent(dp);
  const std::string path = "/api/v1/projects/astro/workspaces/" + ws + "/terminal";
  httplib::Client c("127.0.0.1", port_);
  auto upgrade = [&](const std::string& target, const std::string& token, const std::string& origin = "") {
    httplib::Headers h = {{"Authorization", "Bearer " + token},
                          {"Upgrade", "websocket"},
                          {"Connection", "Upgrade"},
                          {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                          {"Sec-WebSocket-Version", "13"}};
    if (!origin.empty()) h.emplace("Origin", origin);
    return c.Get(target, h)->status;
  };
  EXPECT_EQ(upgrade(path, bob_), 403) << "not a member";
  EXPECT_EQ(upgrade(path, admin_), 403) << "not even an admin: the shell is ann's";
  EXPECT_EQ(upgrade(path, ann_, "http://elsewhere.example"), 403) << "a page of another site";
  EXPECT_EQ(upgrade(path + "?cols=5000", ann_), 400);
  EXPECT_EQ(c.Get(path, {{"Authorization", "Bearer " + ann_}})->status, 400) << "not an upgrade";
  EXPECT_TRUE(dp.shells_started.empty()) << "no refused request started a shell";

  ws::Loop loop;
  std::string screen;
  ws::CloseInfo closed;
  std::shared_ptr<ws::Connection> term;
  // Typed in turn, each once the screen shows, after what the step before matched, what the one
  // before should have printed (a prompt after Ctrl-C: a shell drops a line typed ahead of its
  // interrupt).
  std::vector<std::pair<std::string, std::string>> script = {
      {"", "ready> "},
      {"echo $((6*7))\n", "42"},
      {R"({"resize": {"cols": 120, "rows": 40}})", ""},
      {"stty size\n", "40 120"},
      // Ctrl-C once the sleep runs (typed before, it reaches the shell, not the sleep).
      {"sh -c 'echo sleep\"\"ing-now; exec sleep 100'\n", "sleeping-now"},
      {"\x03", "^C"},
      {"", "ready> "},
      {"echo after-$((1+1))\n", "after-2"},
      {"exit 3\n", ""}};
  size_t next = 0, from = 0;
  std::string waiting_for;
  auto advance = [&] {
    while (next < script.size()) {
      const size_t at = waiting_for.empty() ? from : screen.find(waiting_for, from);
      if (at == std::string::npos) return;
      from = at + waiting_for.size();  // what the next step waits for comes after this
      const auto& [keys, expect] = script[next++];
      if (!keys.empty()) term->Send(keys, keys[0] != '{');  // text messages are resizes; keystrokes binary
      waiting_for = expect;
    }
  };
  auto opened = loop.Connect(
      "127.0.0.1", std::to_string(port_), path + "?cols=80&rows=24", {{"Authorization", "Bearer " + ann_}},
      std::chrono::seconds(30),
      [&](std::string data, bool binary) {
        EXPECT_TRUE(binary) << "the terminal's bytes are binary messages";
        screen += data;
        advance();
      },
      [&](const ws::CloseInfo& info) { closed = info; });
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  term = *opened;
  term->CloseAt(std::chrono::system_clock::now() + std::chrono::seconds(20), ws::kNormalClosure, "test timed out");
  advance();
  loop.Run();
  EXPECT_EQ(next, script.size()) << "stuck waiting for " << waiting_for << " in " << screen;
  EXPECT_NE(screen.find("after-2"), std::string::npos) << "Ctrl-C interrupted the sleep: " << screen;
  EXPECT_EQ(closed.code, ws::kNormalClosure);
  EXPECT_EQ(closed.reason, "the shell exited 3") << screen;
  EXPECT_EQ(dp.shells_started.size(), 1u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string audit;
  while (std::chrono::steady_clock::now() < deadline && audit.find("the shell exited 3") == std::string::npos) {
    audit = Call("GET", "/api/v1/audit", admin_).body.dump();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(audit.find("terminal.open"), std::string::npos);
  EXPECT_NE(audit.find("the shell exited 3"), std::string::npos) << "the close is audited with why: " << audit;

  // A terminal opened with a token about to expire closes when it does.
  auto brief = Call("POST", "/api/v1/tokens", admin_,
                    {{"subject", "ann"}, {"role", "user"}, {"projects", {"astro"}}, {"ttl", "2s"}});
  ASSERT_EQ(brief.status, 201) << brief.body.dump();
  ws::CloseInfo expired;
  const auto opened_at = std::chrono::steady_clock::now();
  auto second = loop.Connect("127.0.0.1", std::to_string(port_), path,
                             {{"Authorization", "Bearer " + brief.body["token"].get<std::string>()}},
                             std::chrono::seconds(30), nullptr, [&](const ws::CloseInfo& info) { expired = info; });
  ASSERT_TRUE(second.ok()) << second.status().message();
  (*second)->CloseAt(std::chrono::system_clock::now() + std::chrono::seconds(20), ws::kNormalClosure, "test timed out");
  loop.Run();
  EXPECT_EQ(expired.code, ws::kTokenExpired) << expired.reason;
  EXPECT_LT(std::chrono::steady_clock::now() - opened_at, std::chrono::seconds(5));
  const auto stopping = std::chrono::steady_clock::now();
  agent->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(5)) << "the agent stopped promptly";
}

// Where the server terminates TLS itself: the browser's terminal is a wss:// socket on the same TLS
// session cpp-httplib made, and the agent dials its tunnel to the https:// server over TLS,
// verifying the server's certificate. Both ends carry the shell as over plain HTTP.
class RoutesOverTlsTest : public RoutesTest {
 protected:
  // SIGPIPE as the server's process has it (a peer gone mid-write is an error, not an exit).
  RoutesOverTlsTest() : RoutesTest(/*tls=*/true) { ::signal(SIGPIPE, SIG_IGN); }
};

TEST_F(RoutesOverTlsTest, ATerminalOverWssReachesTheShellThroughTheAgentsTlsTunnel) {
  fakes::FakeDataPlane dp;
  const std::string ws = ReadyWorkspaceWithShell(dp);
  ASSERT_FALSE(ws.empty());
  auto agent = StartAgent(dp);
  const std::string path = "/api/v1/projects/astro/workspaces/" + ws + "/terminal?cols=80&rows=24";
  ws::Loop loop;
  const ws::Endpoint server{"127.0.0.1", std::to_string(port_), true, ca_file_};
  EXPECT_FALSE(loop.Connect("127.0.0.1", std::to_string(port_), path, {{"Authorization", "Bearer " + ann_}},
                            std::chrono::seconds(5), nullptr, nullptr)
                   .ok())
      << "plain ws:// to a TLS listener";
  // Trusting another certificate, or dialling a name the certificate does not carry: refused by
  // the verification, before any request.
  const std::string cert = ca_file_;
  const std::string other = SelfSignedCertificate(dir_ / "other");
  for (const auto& [to, why] : std::vector<std::pair<ws::Endpoint, std::string>>{
           {{"127.0.0.1", std::to_string(port_), true, other}, "a certificate nobody trusted signed"},
           {{"localhost", std::to_string(port_), true, cert}, "a name the certificate does not carry"}}) {
    auto refused =
        loop.Connect(to, path, {{"Authorization", "Bearer " + ann_}}, std::chrono::seconds(5), nullptr, nullptr);
    ASSERT_FALSE(refused.ok()) << why;
    EXPECT_NE(refused.status().message().find("the server's certificate: "), std::string::npos)
        << why << ": " << refused.status().message();
  }
  EXPECT_TRUE(dp.shells_started.empty()) << "no refused socket started a shell";

  std::string screen;
  ws::CloseInfo closed;
  std::shared_ptr<ws::Connection> term;
  int step = 0;
  auto opened = loop.Connect(
      server, path, {{"Authorization", "Bearer " + ann_}}, std::chrono::seconds(30),
      [&](std::string data, bool binary) {
        EXPECT_TRUE(binary);
        screen += data;
        // A large answer too: many TLS records, each a read of the relay, pass whole and in order.
        if (step == 0 && screen.find("ready> ") != std::string::npos) {
          term->Send("head -c 100000 /dev/zero | tr '\\0' x; echo; echo $((6*7))\n", true);
          step = 1;
        } else if (step == 1 && screen.find("42") != std::string::npos) {
          term->Send("exit 3\n", true);
          step = 2;
        }
      },
      [&](const ws::CloseInfo& info) { closed = info; });
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  term = *opened;
  term->CloseAt(std::chrono::system_clock::now() + std::chrono::seconds(20), ws::kNormalClosure, "test timed out");
  loop.Run();
  EXPECT_EQ(step, 2) << screen.substr(screen.size() > 300 ? screen.size() - 300 : 0);
  EXPECT_NE(screen.find(std::string(100000, 'x')), std::string::npos) << "100,000 bytes of output arrived whole";
  EXPECT_EQ(closed.code, ws::kNormalClosure);
  EXPECT_EQ(closed.reason, "the shell exited 3");
  EXPECT_EQ(dp.shells_started.size(), 1u);
  // Both ends closed their TLS sessions cleanly: nothing waited for a drain timeout.
  const auto stopping = std::chrono::steady_clock::now();
  agent->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, ws::TlsRelay::kDrainTimeout) << "the agent stopped promptly";
}

}  // namespace
}  // namespace hpc::cp
