// The control plane against a real cluster: `hpcplane server` (SQLite) and `hpcplane agent`
// as separate processes on loopback; job records from a workspace terminal with their runtime
// statistics; authentication and authorisation; data planes turning Unreachable; kill -9 of the
// agent, the server and slurmdbd during a 200-job run losing and duplicating nothing.
#include <httplib.h>

#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A cluster with one workspace (user ann, project astro), a control plane and an agent.
struct ControlPlaneEnv {
  TestCluster cluster;
  int port = FreeLoopbackPort();
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  std::unique_ptr<Background> server, agent;

  ControlPlaneEnv()
      : cluster("cp", [] {
          ClusterOptions o;
          o.replicas = 0;
          return o;
        }()) {}

  std::string Dir() const { return cluster.state_dir() + "/controlplane"; }
  std::string Token(const std::string& who) const {
    return Trim(files::Read(Dir() + "/" + who + ".token").value_or(""));
  }

  void StartServer() {
    server = std::make_unique<Background>(
        std::vector<std::string>{HPCPLANE_BIN, "--state-dir", cluster.state_dir(), "server", "--listen",
                                 "127.0.0.1:" + std::to_string(port), "--unreachable-after", "4"},
        cluster.state_dir() + "/server.log");
    ASSERT_TRUE(WaitFor([&] { return httplib::Client(url).Get("/api/v1/dataplanes") != nullptr; }, 20s))
        << server->Log();
  }
  void StartAgent() {
    agent = std::make_unique<Background>(
        std::vector<std::string>{HPCPLANE_BIN, "--state-dir", cluster.state_dir(), "--cluster", cluster.name(), "agent",
                                 "--server", url, "--token-file", Dir() + "/agent.token", "--name", "dp1", "--interval",
                                 "1"},
        cluster.state_dir() + "/agent.log");
  }
  ProcessResult Api(const std::vector<std::string>& args, const std::string& token_file) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--server", url, "--token-file", Dir() + "/" + token_file + ".token"});
    return cluster.Cli(a);
  }
  // With `local_workspace`, ann-astro is launched on the data plane itself; without it the
  // data plane starts with no user and no workspace.
  void Setup(bool local_workspace = true) {
    ASSERT_EQ(cluster.Up().exit_code, 0);
    if (local_workspace) {
      ASSERT_EQ(cluster.Cli({"users", "add", "ann"}).exit_code, 0);
      ASSERT_EQ(cluster
                    .Cli({"workspace", "launch", "--user", "ann", "--project", "astro", "--max-workers", "2",
                          "--idle-timeout", "30s"},
                         120s)
                    .exit_code,
                0);
    }
    StartServer();
    auto admin = "admin";
    ASSERT_EQ(Api({"tokens", "create", "--subject", "dp1", "--role", "agent", "--out", Dir() + "/agent.token"}, admin)
                  .exit_code,
              0);
    ASSERT_EQ(Api({"tokens", "create", "--subject", "ann", "--role", "user", "--project", "astro", "--out",
                   Dir() + "/ann.token"},
                  admin)
                  .exit_code,
              0);
    ASSERT_EQ(Api({"tokens", "create", "--subject", "bob", "--role", "user", "--project", "bio", "--out",
                   Dir() + "/bob.token"},
                  admin)
                  .exit_code,
              0);
    StartAgent();
  }
  // Every job record of project astro, through the paged API.
  std::vector<json> AllJobs() {
    std::vector<json> out;
    std::string cursor;
    for (int page = 0; page < 100; ++page) {
      httplib::Client cli(url);
      cli.set_bearer_token_auth(Token("ann"));
      std::string path = "/api/v1/projects/astro/jobs?limit=50" + (cursor.empty() ? "" : "&cursor=" + cursor);
      auto res = cli.Get(path);
      if (!res || res->status != 200) return out;
      json j = json::parse(res->body);
      for (auto& r : j["jobs"]) out.push_back(r);
      if (j["nextCursor"].is_null()) break;
      cursor = j["nextCursor"];
    }
    return out;
  }
  json DataPlane(const std::string& name) {
    httplib::Client cli(url);
    cli.set_bearer_token_auth(Token("ann"));
    auto res = cli.Get("/api/v1/dataplanes");
    if (!res) return nullptr;
    json all = json::parse(res->body, nullptr, false);
    if (all.is_discarded()) return nullptr;
    for (const auto& dp : all["dataPlanes"]) {
      if (dp["name"] == name) return dp;
    }
    return nullptr;
  }
};

int64_t SubmitInAnnsWorkspace(TestCluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {"workspace", "exec", "ann-astro", "--", "sbatch", "--parsable", "-o", "/dev/null"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  auto r = c.Cli(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return std::atoll(r.out.c_str());
}

const json* Find(const std::vector<json>& jobs, int64_t id) {
  for (const auto& j : jobs) {
    if (j["jobId"] == id) return &j;
  }
  return nullptr;
}

TEST(ControlPlane, TerminalJobsReachTheHistoryWithStatisticsBehindAuth) {
  ControlPlaneEnv env;
  env.Setup();
  int64_t ok = SubmitInAnnsWorkspace(
      env.cluster,
      {"--wrap", "python3 -c 'x=bytearray(60*2**20); import time; t=time.time()\nwhile time.time()-t<7: pass'"});
  int64_t failed = SubmitInAnnsWorkspace(env.cluster, {"--wrap", "exit 3"});
  int64_t array = SubmitInAnnsWorkspace(env.cluster, {"--array=0-1", "--wrap", "true"});
  ASSERT_GT(ok, 0);
  ASSERT_GT(failed, 0);
  ASSERT_GT(array, 0);
  // The array's tasks, each its own record naming the array and its index.
  auto tasks = [&](const std::vector<json>& all) {
    std::set<std::string> done;
    for (const auto& j : all) {
      if (j["arrayJobId"] == array && j["state"] == "COMPLETED") done.insert(j["arrayTaskId"].get<std::string>());
    }
    return done;
  };
  std::vector<json> jobs;
  ASSERT_TRUE(WaitFor(
      [&] {
        jobs = env.AllJobs();
        const json* a = Find(jobs, ok);
        const json* b = Find(jobs, failed);
        return a && b && (*a)["state"] == "COMPLETED" && (*b)["state"] == "FAILED" &&
               tasks(jobs) == std::set<std::string>{"0", "1"};
      },
      120s))
      << env.agent->Log();
  EXPECT_EQ((*Find(jobs, ok))["arrayJobId"], 0) << "a plain job is in no array";
  const json& a = *Find(jobs, ok);
  EXPECT_EQ(a["dataPlane"], "dp1");
  EXPECT_EQ(a["cluster"], env.cluster.name());
  EXPECT_EQ(a["user"], "ann");
  EXPECT_EQ(a["project"], "astro");
  EXPECT_EQ(a["partition"], "ann-astro");
  EXPECT_EQ(a["exitCode"], "0:0");
  EXPECT_EQ(a["nodes"], 1);
  // Four jobs queue at once and the nodeset may grow to two workers: the job runs on
  // whichever came up first, so the record names one of them.
  EXPECT_TRUE(a["nodeList"] == "ann-astro-0" || a["nodeList"] == "ann-astro-1") << a["nodeList"];
  EXPECT_GE(a["elapsedSeconds"].get<int64_t>(), 7);
  // The busy loop is held to the one CPU it asked for, a core it shares with whatever else runs
  // on the machine: some CPU time, and never more than its wall time.
  EXPECT_GE(a["cpuSeconds"].get<int64_t>(), 1);
  EXPECT_LE(a["cpuSeconds"].get<int64_t>(), a["elapsedSeconds"].get<int64_t>() + 1);
  EXPECT_GT(a["maxRssKiB"].get<int64_t>(), 60 * 1024);  // the 60 MiB the job held
  EXPECT_NE(a["tres"].get<std::string>().find("cpu=1"), std::string::npos);
  EXPECT_EQ(a["source"], "terminal");
  EXPECT_EQ((*Find(jobs, failed))["exitCode"], "3:0");
  // One job with its statistics, and the streamed export.
  auto show =
      env.Api({"jobs", "show", "--project", "astro", "dp1/" + env.cluster.name() + "/" + std::to_string(ok)}, "ann");
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("\"maxRssKiB\""), std::string::npos);
  auto csv = env.Api({"jobs", "export", "--project", "astro", "--format", "csv"}, "ann");
  EXPECT_EQ(SplitLines(csv.out).size(), jobs.size() + 1) << csv.out;
  auto ndjson = env.Api({"jobs", "export", "--project", "astro"}, "ann");
  EXPECT_EQ(SplitLines(ndjson.out).size(), jobs.size());

  // Authentication and authorisation.
  httplib::Client cli(env.url);
  EXPECT_EQ(cli.Get("/api/v1/projects/astro/jobs")->status, 401);
  EXPECT_EQ(cli.Get("/api/v1/openapi.json")->status, 401);
  httplib::Client bob(env.url);
  bob.set_bearer_token_auth(env.Token("bob"));
  EXPECT_EQ(bob.Get("/api/v1/projects/astro/jobs")->status, 403);
  EXPECT_EQ(bob.Get("/api/v1/openapi.json")->status, 200);
  httplib::Client agent(env.url);
  agent.set_bearer_token_auth(env.Token("agent"));
  auto bad =
      agent.Post("/api/v1/dataplanes/dp1/jobs",
                 R"({"jobs":[{"cluster":"c","jobId":"x","submitTime":1,"user":"u","state":"S"}]})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["field"], "jobs[0].jobId") << bad->body;
  EXPECT_EQ(agent.Post("/api/v1/dataplanes/dp1/report", "{not json", "application/json")->status, 400);
  EXPECT_EQ(agent.Post("/api/v1/dataplanes/other/report", R"({"state":"Healthy"})", "application/json")->status, 403);
  httplib::Client ann(env.url);
  ann.set_bearer_token_auth(env.Token("ann"));
  auto limit = ann.Get("/api/v1/projects/astro/jobs?limit=0");
  EXPECT_EQ(limit->status, 400);
  EXPECT_EQ(json::parse(limit->body)["error"]["field"], "limit");
  // Submission through the API is gated by a flag, off by default.
  auto submit =
      ann.Post("/api/v1/projects/astro/jobs",
               R"({"dataPlane":"dp1","workspace":"ann-astro","script":"#!/bin/sh\ntrue"})", "application/json");
  EXPECT_EQ(submit->status, 403);
  EXPECT_NE(submit->body.find("EnableHPCJobs"), std::string::npos);
  EXPECT_NE(env.Api({"flags", "set", "EnableHPCJobs", "true"}, "ann").exit_code, 0);  // admins only
  ASSERT_EQ(env.Api({"flags", "set", "EnableHPCJobs", "true"}, "admin").exit_code, 0);
  auto unknown =
      ann.Post("/api/v1/projects/astro/jobs",
               R"({"dataPlane":"dp1","workspace":"ann-astro","script":"#!/bin/sh\ntrue","options":{"foo":"1"}})",
               "application/json");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_EQ(json::parse(unknown->body)["error"]["field"], "options.foo") << unknown->body;
  // Through the API: run as ann in her workspace, and in the same history as terminal jobs.
  auto accepted = ann.Post("/api/v1/projects/astro/jobs",
                           R"({"dataPlane":"dp1","workspace":"ann-astro","script":"#!/bin/sh\nid -un\nsleep 2\n",)"
                           R"("options":{"jobName":"api-job"}})",
                           "application/json");
  ASSERT_EQ(accepted->status, 202) << accepted->body;
  std::string sub_id = json::parse(accepted->body)["id"];
  int64_t api_job = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = ann.Get("/api/v1/projects/astro/submissions/" + sub_id);
        if (!r || r->status != 200) return false;
        json j = json::parse(r->body);
        api_job = j["jobId"].get<int64_t>();
        return j["state"] == "Submitted";
      },
      60s))
      << env.agent->Log();
  ASSERT_TRUE(WaitFor(
      [&] {
        jobs = env.AllJobs();
        const json* j = Find(jobs, api_job);
        return j && (*j)["state"] == "COMPLETED";
      },
      90s));
  const json& via_api = *Find(jobs, api_job);
  EXPECT_EQ(via_api["source"], "api");
  EXPECT_EQ(via_api["user"], "ann");
  EXPECT_EQ(via_api["name"], "api-job") << via_api.dump();
  EXPECT_EQ(via_api["partition"], "ann-astro");
  EXPECT_GE(via_api["elapsedSeconds"].get<int64_t>(), 2);
  EXPECT_EQ((*Find(jobs, ok))["source"], "terminal");

  // The data plane reports Slurm; without reports it turns Unreachable and stops offering Slurm.
  json dp = env.DataPlane("dp1");
  ASSERT_FALSE(dp.is_null());
  EXPECT_EQ(dp["state"], "Healthy") << dp.dump();
  // The default environment's Slurm (api/environments.h).
  EXPECT_EQ(dp["componentVersions"].value("slurm/slurmctld", "").rfind("26.05.", 0), 0u) << dp.dump();
  EXPECT_TRUE(dp["componentVersions"].contains("slurm/slurmdbd"));
  EXPECT_FALSE(dp["componentVersions"].contains("munge")) << "26.05 authenticates with auth/slurm: " << dp.dump();
  EXPECT_TRUE(dp["slurm"]["offered"].get<bool>());
  env.agent->Stop();
  ASSERT_TRUE(WaitFor([&] { return env.DataPlane("dp1")["state"] == "Unreachable"; }, 20s));
  EXPECT_FALSE(env.DataPlane("dp1")["slurm"]["offered"].get<bool>());

  // Records outlive the workspace.
  ASSERT_EQ(env.cluster.Cli({"workspace", "stop", "ann-astro", "--cancel-jobs"}, 120s).exit_code, 0);
  EXPECT_TRUE(Find(env.AllJobs(), ok));
}

// Cancel from the control plane: the job's user (or an admin) asks, the data plane's agent runs
// scancel, and the history shows the job CANCELLED; others are refused, an ended job has
// nothing to cancel.
TEST(ControlPlane, CancellingAJobGoesThroughTheAgent) {
  ControlPlaneEnv env;
  env.Setup();
  int64_t id = SubmitInAnnsWorkspace(env.cluster, {"--wrap", "sleep 300"});
  ASSERT_GT(id, 0);
  json job;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto jobs = env.AllJobs();
        const json* j = Find(jobs, id);
        if (j) job = *j;
        return j && ((*j)["state"] == "RUNNING" || (*j)["state"] == "PENDING");
      },
      90s))
      << env.agent->Log();
  const std::string path = fmt::format("/api/v1/projects/astro/jobs/dp1/{}/{}/cancel?submitTime={}",
                                       job["cluster"].get<std::string>(), id, job["submitTime"].get<int64_t>());
  httplib::Client bob(env.url), ann(env.url);
  bob.set_bearer_token_auth(env.Token("bob"));
  ann.set_bearer_token_auth(env.Token("ann"));
  EXPECT_EQ(bob.Post(path, "", "application/json")->status, 403);  // not a member of astro
  auto asked = ann.Post(path, "", "application/json");
  ASSERT_EQ(asked->status, 202) << asked->body;
  const std::string cid = json::parse(asked->body)["id"];
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = ann.Get("/api/v1/projects/astro/cancellations/" + cid);
        return r && r->status == 200 && json::parse(r->body)["state"] == "Done";
      },
      60s))
      << env.agent->Log();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto jobs = env.AllJobs();
        const json* j = Find(jobs, id);
        return j && (*j)["state"].get<std::string>().rfind("CANCELLED", 0) == 0;
      },
      90s));
  auto again = ann.Post(path, "", "application/json");
  EXPECT_EQ(again->status, 409) << again->body;
  EXPECT_EQ(ann.Post("/api/v1/projects/astro/jobs/dp1/x/999999/cancel", "", "application/json")->status, 404);
}

TEST(ControlPlane, DispatchesWorkspacesBuiltFromTheProjectConfiguration) {
  ControlPlaneEnv env;
  env.Setup(/*local_workspace=*/false);
  ASSERT_TRUE(WaitFor([&] { return env.DataPlane("dp1")["state"] == "Healthy"; }, 60s)) << env.agent->Log();
  httplib::Client ann(env.url);
  ann.set_bearer_token_auth(env.Token("ann"));
  auto launch = [&](const std::string& body) {
    return ann.Post("/api/v1/projects/astro/workspaces", body, "application/json");
  };
  // No configuration yet: nothing to build the workspace from.
  auto unconfigured = launch("{}");
  EXPECT_EQ(unconfigured->status, 404);
  EXPECT_NE(unconfigured->body.find("PUT /api/v1/projects/astro"), std::string::npos) << unconfigured->body;
  // Only admins configure projects; a bad configuration is refused with its field.
  EXPECT_EQ(ann.Put("/api/v1/projects/astro", R"({"dataPlane":"dp1"})", "application/json")->status, 403);
  auto bad = env.Api({"projects", "set", "astro", "--data-plane", "dp1", "--max-workers", "500"}, "admin");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("maxWorkers: must be an integer 1-128"), std::string::npos) << bad.err;
  auto set = env.Api({"projects", "set", "astro", "--data-plane", "dp1", "--max-workers", "1", "--idle-timeout", "30s",
                      "--tier", "small", "--workspace-environment", "workspace-26.05"},
                     "admin");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  // Malformed requests name the field; a user outside the project is refused.
  auto tier = launch(R"({"tier":"gpu"})");
  EXPECT_EQ(tier->status, 400);
  EXPECT_EQ(json::parse(tier->body)["error"]["field"], "tier") << tier->body;
  auto workers = launch(R"({"maxWorkers":2})");
  EXPECT_EQ(workers->status, 400);
  EXPECT_EQ(json::parse(workers->body)["error"]["field"], "maxWorkers") << workers->body;
  EXPECT_EQ(json::parse(launch("[1]")->body)["error"]["field"], "body");
  auto other = launch(R"({"user":"bob"})");
  EXPECT_EQ(other->status, 403);  // users launch for themselves
  httplib::Client bob(env.url);
  bob.set_bearer_token_auth(env.Token("bob"));
  EXPECT_EQ(bob.Post("/api/v1/projects/astro/workspaces", "{}", "application/json")->status, 403);
  EXPECT_FALSE(files::Exists(env.cluster.ClusterDir() + "/workspaces/ann-astro.json"));

  // Launched through the control plane; the agent creates it on the data plane.
  auto launched = env.Api({"projects", "launch", "astro", "--wait", "150"}, "ann");
  ASSERT_EQ(launched.exit_code, 0) << launched.err << env.agent->Log();
  EXPECT_NE(launched.out.find("workspace ann-astro requested for ann (uid 20000) on data plane dp1"), std::string::npos)
      << launched.out;
  EXPECT_NE(launched.out.find("Ready"), std::string::npos);
  json w = json::parse(ann.Get("/api/v1/projects/astro/workspaces/ann-astro")->body);
  EXPECT_EQ(w["phase"], "Ready") << w.dump();
  EXPECT_EQ(w["uid"], 20000);
  EXPECT_EQ(w["maxWorkers"], 1);
  EXPECT_EQ(w["idleTimeoutSeconds"], 30);
  EXPECT_EQ(w["environment"], "workspace-26.05");
  // Its login pod runs the project's workspace environment (gcc and git; the cluster's has neither).
  auto cc = env.cluster.Cli({"workspace", "exec", "ann-astro", "--", "sh", "-c", "command -v gcc && command -v git"});
  EXPECT_EQ(cc.exit_code, 0) << cc.out << cc.err;
  EXPECT_EQ(SplitLines(Trim(cc.out)).size(), 2u) << cc.out;
  EXPECT_EQ(launch("{}")->status, 409);  // the id is taken while it runs
  // The data plane's catalog has ann with the control plane's uid; her job runs as that uid
  // on her partition and reaches the history.
  auto users = env.cluster.Cli({"users", "list"});
  EXPECT_NE(users.out.find("ann"), std::string::npos);
  EXPECT_NE(users.out.find("20000"), std::string::npos) << users.out;
  auto job = env.cluster.Cli(
      {"workspace", "exec", "ann-astro", "--", "sbatch", "--parsable", "-o", "uid-%j.out", "--wrap", "id -u"});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  int64_t id = std::atoll(job.out.c_str());
  std::vector<json> jobs;
  ASSERT_TRUE(WaitFor(
      [&] {
        jobs = env.AllJobs();
        const json* j = Find(jobs, id);
        return j && (*j)["state"] == "COMPLETED";
      },
      150s))
      << env.agent->Log();
  EXPECT_EQ((*Find(jobs, id))["partition"], "ann-astro");
  auto out = env.cluster.Cli({"workspace", "exec", "ann-astro", "--", "cat", "uid-" + std::to_string(id) + ".out"});
  EXPECT_EQ(Trim(out.out), "20000") << out.err;

  // An API submission to a workspace the control plane launched needs no data plane name, and
  // is refused for another data plane.
  ASSERT_EQ(env.Api({"flags", "set", "EnableHPCJobs", "true"}, "admin").exit_code, 0);
  auto elsewhere =
      ann.Post("/api/v1/projects/astro/jobs",
               R"({"workspace":"ann-astro","dataPlane":"dp9","script":"#!/bin/sh\ntrue"})", "application/json");
  EXPECT_EQ(elsewhere->status, 409);
  EXPECT_EQ(json::parse(elsewhere->body)["error"]["field"], "workspace") << elsewhere->body;
  auto submitted = ann.Post("/api/v1/projects/astro/jobs", R"({"workspace":"ann-astro","script":"#!/bin/sh\nid -u\n"})",
                            "application/json");
  ASSERT_EQ(submitted->status, 202) << submitted->body;
  json sub = json::parse(submitted->body);
  EXPECT_EQ(sub["dataPlane"], "dp1");
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = ann.Get("/api/v1/projects/astro/submissions/" + sub["id"].get<std::string>());
        return r && r->status == 200 && json::parse(r->body)["state"] == "Submitted";
      },
      60s))
      << env.agent->Log();

  // Stopped through the control plane: gone from the data plane, its history kept.
  EXPECT_EQ(bob.Delete("/api/v1/projects/astro/workspaces/ann-astro")->status, 403);
  auto stopped = env.Api({"projects", "stop", "astro", "ann-astro", "--cancel-jobs", "--wait", "150"}, "ann");
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err << env.agent->Log();
  EXPECT_FALSE(files::Exists(env.cluster.ClusterDir() + "/workspaces/ann-astro.json"));
  EXPECT_EQ(env.cluster.Cli({"workspace", "list"}).out.find("ann-astro"), std::string::npos);
  auto show = env.Api({"projects", "show", "astro"}, "ann");
  EXPECT_NE(show.out.find("Stopped"), std::string::npos) << show.out;
  EXPECT_TRUE(Find(env.AllJobs(), id));
}

TEST(ControlPlane, Kill9OfAgentServerAndSlurmdbdLosesAndDuplicatesNothing) {
  ControlPlaneEnv env;
  env.Setup();
  // 200 jobs as one array: each task is its own job record.
  auto r = env.cluster.Cli({"workspace", "exec", "ann-astro", "--", "sbatch", "--parsable", "-o", "/dev/null",
                            "--array=1-200", "--wrap", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto done = [&] {
    auto q = env.cluster.Login("root", {"squeue", "-h", "-u", "ann"});
    return q.exit_code == 0 && Trim(q.out).empty();
  };
  ASSERT_TRUE(WaitFor([&] { return env.AllJobs().size() >= 40; }, 180s)) << env.agent->Log();
  env.agent->Kill9();
  env.StartAgent();
  ASSERT_TRUE(WaitFor([&] { return env.AllJobs().size() >= 100; }, 180s));
  env.server->Kill9();
  std::this_thread::sleep_for(2s);  // the agent keeps trying while the server is away
  env.StartServer();
  // slurmdbd dies too: slurmctld keeps the records queued and the agent's window waits for them.
  auto kill = env.cluster.Cli({"exec", env.cluster.name() + "-slurmdbd", "--", "pkill", "-9", "-x", "slurmdbd"});
  ASSERT_TRUE(kill.exit_code == 0 || kill.exit_code == 137) << kill.err;
  ASSERT_TRUE(WaitFor(done, 300s));
  // Every task Slurm accounted for is there exactly once, in its final state (slurmdbd stores
  // the last records a moment after the queue empties).
  std::map<int64_t, std::string> want;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto sacct =
            env.cluster.Login("root", {"sacct", "-n", "-X", "-P", "-a", "-u", "ann", "--format=JobIDRaw,State"});
        want.clear();
        for (const auto& line : SplitLines(sacct.out)) {
          std::string state = line.substr(line.find('|') + 1);
          if (state == "COMPLETED") want[std::atoll(line.c_str())] = state;
        }
        return want.size() == 200u;
      },
      60s))
      << want.size();
  std::vector<json> got;
  ASSERT_TRUE(WaitFor(
      [&] {
        got = env.AllJobs();
        if (got.size() != want.size()) return false;
        for (const auto& j : got) {
          if (!want.count(j["jobId"]) || want[j["jobId"]] != j["state"]) return false;
        }
        return true;
      },
      60s))
      << got.size() << " records";
  std::set<int64_t> ids;
  for (const auto& j : got) ids.insert(j["jobId"].get<int64_t>());
  EXPECT_EQ(ids.size(), 200u);
}

}  // namespace
}  // namespace hpc::it
