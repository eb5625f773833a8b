#include "cli/controlplane_commands.h"

#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "app/control_plane_process.h"
#include "cli/api_client.h"
#include "cli/store_commands.h"
#include "common/files.h"
#include "common/http_client.h"
#include "common/stop_signal.h"
#include "server/server.h"
#include "server/store.h"

namespace hpc::cli {
namespace {

using nlohmann::json;

struct ServerArgs {
  std::string listen = "127.0.0.1:8080";
  std::string store;
  int unreachable_after = 15;
  std::string tls_cert, tls_key;
  bool allow_plain_http = false;
  int max_connections_per_client = 128;
  int request_deadline = 10;
  int64_t max_body_mib = 4;
};

int CmdServer(const Globals& g, const ServerArgs& args) {
  // Checked before anything is created.
  auto parsed = cp::ParseListenAddress(args.listen);
  if (!parsed.ok()) return Fail(Status::Errorf("--listen: {}", parsed.status().message()));
  cp::ServerOptions o = *parsed;
  o.unreachable_after_seconds = args.unreachable_after;
  o.tls_cert = args.tls_cert;
  o.tls_key = args.tls_key;
  o.allow_plain_http = args.allow_plain_http;
  o.connections.max_per_client = args.max_connections_per_client;
  o.connections.request_deadline_seconds = args.request_deadline;
  o.max_body_bytes = static_cast<size_t>(args.max_body_mib) << 20;
  InstallStopHandlers();
  auto server = app::ControlPlaneProcess::Start({g.state_dir, args.store, o});
  if (!server.ok()) return Fail(server.status());
  if ((*server)->wrote_admin_token()) {
    std::cout << "admin token written to " << (*server)->admin_token_file() << " (mode 0600)\n";
  }
  const std::string& store_url = (*server)->store_url();
  std::cout << fmt::format("hpcplane control plane on {}://{}:{}/api/v1 (store {})",
                           o.tls_cert.empty() ? "http" : "https", o.host, (*server)->port(),
                           store_url.rfind("postgres", 0) == 0 ? "postgres" : store_url)
            << std::endl;
  while (!StopFlag() && (*server)->serving()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*server)->Stop();
  return 0;
}

int CmdAgent(const Globals& g, const ApiArgs& a, cp::AgentOptions o, app::KubernetesDataPlaneOptions k) {
  const bool on_kubernetes = !k.cluster.empty() || !k.namespace_name.empty() || !k.kubeconfig.empty();
  if (on_kubernetes && (k.cluster.empty() || k.namespace_name.empty())) {
    return Fail(
        Status::Error("agent: a data plane on Kubernetes needs both --slurm-cluster and --kubernetes-namespace"));
  }
  std::optional<op::ClusterPaths> p;
  if (!on_kubernetes) {
    auto resolved = ResolveCluster(g);
    if (!resolved.ok()) return Fail(resolved.status());
    p = *resolved;
  }
  auto token = ReadToken(a);
  if (!token.ok()) return Fail(token.status());
  o.server = a.server;
  o.ca_file = a.ca_file;
  o.token = *token;
  InstallStopHandlers();
  if (p) {
    app::RunAgent(*p, g.self_exe, o);
    return 0;
  }
  // Its own files (catalog, job window) under the state directory, one folder a cluster.
  k.state_dir = fmt::format("{}/kubernetes/{}/{}", g.state_dir, k.namespace_name, k.cluster);
  k.self_exe = g.self_exe;
  Status s = app::RunKubernetesAgent(k, o);
  return s.ok() ? 0 : Fail(s);
}

struct TokenArgs {
  std::string action, id, subject, role = "user", out, ttl;
  std::vector<std::string> projects;
};

std::string Time(int64_t t);

int CmdTokens(const ApiArgs& a, const TokenArgs& t) {
  if (t.action == "list") {
    auto r = Call(a, "GET", "/api/v1/tokens");
    if (!r.ok()) return Fail(r.status());
    std::cout << fmt::format("{:<17}{:<16}{:<7}{:<21}{:<21}{:<21}{}\n", "ID", "SUBJECT", "ROLE", "CREATED", "EXPIRES",
                             "LAST USED", "REVOKED");
    auto time = [](const json& v) { return v.is_number() ? Time(v.get<int64_t>()) : std::string("-"); };
    for (const auto& x : (*r)["tokens"]) {
      std::cout << fmt::format("{:<17}{:<16}{:<7}{:<21}{:<21}{:<21}{}\n", x["id"].get<std::string>(),
                               x["subject"].get<std::string>(), x["role"].get<std::string>(), time(x["createdAt"]),
                               time(x["expiresAt"]), time(x["lastUsed"]), time(x["revokedAt"]));
    }
    return 0;
  }
  if (t.action == "revoke") {
    if (t.id.empty()) return Fail(Status::Error("tokens revoke ID (the ID column of tokens list)"));
    auto r = Call(a, "DELETE", "/api/v1/tokens/" + t.id);
    if (!r.ok()) return Fail(r.status());
    std::cout << "token " << t.id << " revoked\n";
    return 0;
  }
  if (t.subject.empty()) return Fail(Status::Error("tokens create: --subject is required"));
  json body = {{"subject", t.subject}, {"role", t.role}, {"projects", t.projects}};
  if (!t.ttl.empty()) body["ttl"] = t.ttl;
  auto r = Call(a, "POST", "/api/v1/tokens", body);
  if (!r.ok()) return Fail(r.status());
  std::string token = (*r)["token"];
  if (t.out.empty()) {
    std::cout << token << "\n";
    return 0;
  }
  if (Status s = files::WriteAtomic(t.out, token + "\n", 0600); !s.ok()) return Fail(s);
  std::cout << fmt::format("token {} for {} ({}) written to {} (mode 0600)\n", (*r)["id"].get<std::string>(), t.subject,
                           t.role, t.out);
  return 0;
}

int CmdAudit(const ApiArgs& a, int limit) {
  auto r = Call(a, "GET", fmt::format("/api/v1/audit?limit={}", limit));
  if (!r.ok()) return Fail(r.status());
  for (const auto& e : (*r)["entries"]) {
    std::cout << fmt::format("{}  {:<14} {:<18} {:<28} {:<16} {}\n", Time(e["at"].get<int64_t>()),
                             e["actor"].get<std::string>(), e["action"].get<std::string>(),
                             e["target"].get<std::string>(), e["remote"].get<std::string>(),
                             e["detail"].get<std::string>());
  }
  return 0;
}

std::string Time(int64_t t) {
  if (t == 0) return "-";
  std::time_t tt = t;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::gmtime(&tt));
  return buf;
}

int CmdJobs(const ApiArgs& a, const std::string& action, const std::string& project,
            std::map<std::string, std::string> q, const std::string& id, const std::string& format) {
  if (action == "export") {
    auto token = ReadToken(a);
    if (!token.ok()) return Fail(token.status());
    auto client = HttpClientFor(a.server, a.ca_file);
    httplib::Client& cli = *client;
    cli.set_bearer_token_auth(*token);
    cli.set_read_timeout(3600);
    std::string path =
        fmt::format("/api/v1/projects/{}/jobs/export?format={}", project, format == "csv" ? "csv" : "ndjson");
    int status = 0;
    std::string error;
    auto res = cli.Get(
        path, httplib::Headers{},
        [&](const httplib::Response& r) {
          status = r.status;
          return true;
        },
        [&](const char* data, size_t n) {
          if (status >= 400)
            error.append(data, n);
          else
            std::cout.write(data, static_cast<std::streamsize>(n));
          return true;
        });
    if (!res) return Fail(Status::Errorf("{}: {}", a.server, httplib::to_string(res.error())));
    if (status >= 400) return Fail(Status::Errorf("export: {} ({})", error, status));
    return 0;
  }
  if (action == "show") {
    auto r = Call(a, "GET", fmt::format("/api/v1/projects/{}/jobs/{}", project, id));
    if (!r.ok()) return Fail(r.status());
    std::cout << r->dump(2) << "\n";
    return 0;
  }
  std::string path = fmt::format("/api/v1/projects/{}/jobs", project);
  std::string sep = "?";
  for (const auto& [k, v] : q) {
    if (v.empty()) continue;
    path += sep + k + "=" + httplib::detail::encode_query_param(v);
    sep = "&";
  }
  auto r = Call(a, "GET", path);
  if (!r.ok()) return Fail(r.status());
  if (format == "json") {
    std::cout << r->dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<10} {:<12} {:<14} {:<10} {:<18} {:<11} {:>8} {:>8} {:>10} {:<6} {}\n", "JOBID",
                           "DATAPLANE", "WORKSPACE", "USER", "SUBMITTED", "STATE", "ELAPSED", "CPU-S", "MAXRSS-KB",
                           "EXIT", "NODES");
  for (const auto& j : (*r)["jobs"]) {
    std::cout << fmt::format("{:<10} {:<12} {:<14} {:<10} {:<18} {:<11} {:>8} {:>8} {:>10} {:<6} {}\n",
                             j["jobId"].get<int64_t>(), j["dataPlane"].get<std::string>(),
                             j["partition"].get<std::string>(), j["user"].get<std::string>(), Time(j["submitTime"]),
                             j["state"].get<std::string>(), j["elapsedSeconds"].get<int64_t>(),
                             j["cpuSeconds"].get<int64_t>(), j["maxRssKiB"].get<int64_t>(),
                             j["exitCode"].get<std::string>(), j["nodeList"].get<std::string>());
  }
  if (!(*r)["nextCursor"].is_null()) std::cout << "more: --cursor " << (*r)["nextCursor"].get<std::string>() << "\n";
  return 0;
}

int CmdDataPlanes(const ApiArgs& a, const std::string& format) {
  auto r = Call(a, "GET", "/api/v1/dataplanes");
  if (!r.ok()) return Fail(r.status());
  if (format == "json") {
    std::cout << r->dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<16} {:<12} {:<6} {:<22} {}\n", "NAME", "STATE", "SLURM", "LAST REPORT",
                           "COMPONENTS / REASONS");
  for (const auto& dp : (*r)["dataPlanes"]) {
    std::string comps;
    for (auto it = dp["componentVersions"].begin(); it != dp["componentVersions"].end(); ++it) {
      comps += (comps.empty() ? "" : " ") + it.key() + "=" + it.value().get<std::string>();
    }
    for (const auto& reason : dp["reasons"]) comps += " [" + reason.get<std::string>() + "]";
    std::cout << fmt::format("{:<16} {:<12} {:<6} {:<22} {}\n", dp["name"].get<std::string>(),
                             dp["state"].get<std::string>(), dp["slurm"]["offered"].get<bool>() ? "yes" : "no",
                             Time(dp["lastReport"]), comps);
  }
  return 0;
}

int CmdFlags(const ApiArgs& a, const std::string& action, const std::string& name, const std::string& value) {
  if (action == "get") {
    auto r = Call(a, "GET", "/api/v1/flags");
    if (!r.ok()) return Fail(r.status());
    for (auto it = (*r)["flags"].begin(); it != (*r)["flags"].end(); ++it) {
      if (name.empty() || it.key() == name)
        std::cout << it.key() << "=" << (it.value().get<bool>() ? "true" : "false") << "\n";
    }
    return 0;
  }
  if (action != "set") return Fail(Status::Errorf("flags: unknown action \"{}\" (get, set)", action));
  if (name.empty() || (value != "true" && value != "false")) return Fail(Status::Error("flags set NAME true|false"));
  auto r = Call(a, "PUT", "/api/v1/flags/" + name, {{"value", value == "true"}});
  if (!r.ok()) return Fail(r.status());
  std::cout << name << "=" << value << "\n";
  return 0;
}

CLI::App* AddServerCommand(CLI::App& app, ServerArgs* sargs) {
  auto* server = app.add_subcommand("server", "Run the control plane's REST API");
  server->add_option("--listen", sargs->listen, "HOST:PORT");
  server
      ->add_option("--store", sargs->store,
                   "sqlite:PATH (default under the state dir) or postgres://... (env HPCPLANE_STORE: off the command "
                   "line, where every user of the host reads it)")
      ->envname("HPCPLANE_STORE");
  server->add_option("--unreachable-after", sargs->unreachable_after,
                     "Seconds without a report before a data plane is Unreachable");
  server->add_option("--tls-cert", sargs->tls_cert, "PEM certificate (chain) to serve HTTPS with");
  server->add_option("--tls-key", sargs->tls_key, "PEM private key of --tls-cert");
  server->add_flag("--allow-plain-http", sargs->allow_plain_http,
                   "Serve plain HTTP on a non-loopback address (only behind a TLS-terminating proxy)");
  server
      ->add_option("--max-connections-per-client", sargs->max_connections_per_client,
                   "Open connections one client address may hold")
      ->check(CLI::Range(1, 100000));
  server
      ->add_option("--request-deadline", sargs->request_deadline,
                   "Seconds a client has to send a whole request (slower ones are closed with 408)")
      ->check(CLI::Range(1, 3600));
  server->add_option("--max-body-mib", sargs->max_body_mib, "Largest request body in MiB (larger: 413)")
      ->check(CLI::Range(1, 1024));
  return server;
}

}  // namespace

std::function<int()> AddControlPlaneCommands(CLI::App& app, Globals& g) {
  auto api = std::make_shared<ApiArgs>();
  auto sargs = std::make_shared<ServerArgs>();
  CLI::App* server = AddServerCommand(app, sargs.get());
  auto store_commands = AddStoreCommands(server, &sargs->store, g);

  auto agent_opts = std::make_shared<cp::AgentOptions>();
  auto* agent = app.add_subcommand("agent", "Report this data plane and ship its job records to the control plane");
  AddApiOptions(agent, api.get());
  agent->add_option("--name", agent_opts->data_plane, "Data plane name (default: the cluster's)");
  agent->add_option("--interval", agent_opts->interval_seconds, "Seconds between reports");
  auto kube_opts = std::make_shared<app::KubernetesDataPlaneOptions>();
  agent->add_option("--slurm-cluster", kube_opts->cluster,
                    "On Kubernetes: the SlurmCluster resource this agent speaks for");
  agent->add_option("--kubernetes-namespace", kube_opts->namespace_name, "On Kubernetes: the SlurmCluster's namespace");
  agent->add_option("--kubeconfig", kube_opts->kubeconfig,
                    "On Kubernetes: a kubeconfig (default: the pod's service account, in the cluster)");

  auto targs = std::make_shared<TokenArgs>();
  auto* tokens = app.add_subcommand(
      "tokens", "API tokens: tokens create --subject S --role R [--ttl 30d] | tokens list | tokens revoke ID");
  AddApiOptions(tokens, api.get());
  tokens->add_option("action", targs->action, "create | list | revoke")
      ->required()
      ->check(CLI::IsMember({"create", "list", "revoke"}));
  tokens->add_option("id", targs->id, "revoke: the token's ID (from tokens list)");
  tokens->add_option("--subject", targs->subject, "create: user name or data plane");
  tokens->add_option("--role", targs->role, "admin | user | agent | metrics (reads /metrics only)")
      ->check(CLI::IsMember({"admin", "user", "agent", "metrics"}));
  tokens->add_option("--project", targs->projects, "Projects a user belongs to (repeatable)");
  tokens->add_option("--ttl", targs->ttl, "Lifetime, e.g. 90m, 12h, 30d (default: until revoked)");
  tokens->add_option("--out", targs->out, "Write the token to this file (0600) instead of printing it");

  auto audit_limit = std::make_shared<int>(50);
  auto* audit = app.add_subcommand("audit", "The audit log, newest first (admin)");
  AddApiOptions(audit, api.get());
  audit->add_option("--limit", *audit_limit, "Entries (1-1000)")->check(CLI::Range(1, 1000));

  auto action = std::make_shared<std::string>();
  auto project = std::make_shared<std::string>(), id = std::make_shared<std::string>(),
       format = std::make_shared<std::string>("table");
  auto query = std::make_shared<std::map<std::string, std::string>>();
  auto* jobs = app.add_subcommand("jobs", "HPC job history: jobs list|show|export --project P");
  AddApiOptions(jobs, api.get());
  jobs->add_option("action", *action, "list | show | export")
      ->required()
      ->check(CLI::IsMember({"list", "show", "export"}));
  jobs->add_option("id", *id, "show: DATAPLANE/CLUSTER/JOBID");
  jobs->add_option("--project", *project, "Project")->required();
  jobs->add_option("--user", (*query)["user"], "Only this user's jobs");
  jobs->add_option("--state", (*query)["state"], "Only jobs in this state (e.g. COMPLETED)");
  jobs->add_option("--workspace", (*query)["workspace"], "Only this workspace's jobs");
  jobs->add_option("--from", (*query)["from"], "Submitted at or after (unix seconds)");
  jobs->add_option("--to", (*query)["to"], "Submitted before (unix seconds)");
  jobs->add_option("--sort", (*query)["sort"], "Newest first by: submit (default), start or end time")
      ->check(CLI::IsMember({"submit", "start", "end"}));
  jobs->add_option("--limit", (*query)["limit"], "Page size (1-1000)");
  jobs->add_option("--cursor", (*query)["cursor"], "Next page (printed by the previous one)");
  jobs->add_option("-o,--output,--format", *format, "list: table|json; export: ndjson|csv");

  auto* dataplanes = app.add_subcommand("dataplanes", "Data planes, their state and components");
  AddApiOptions(dataplanes, api.get());
  dataplanes->add_option("-o,--output", *format, "table | json");

  auto name = std::make_shared<std::string>(), value = std::make_shared<std::string>();
  auto* flags = app.add_subcommand("flags", "Feature flags: flags get [NAME] | flags set NAME true|false");
  AddApiOptions(flags, api.get());
  flags->add_option("action", *action, "get | set")->required();
  flags->add_option("name", *name, "Flag, e.g. EnableHPCJobs");
  flags->add_option("value", *value, "true | false");

  return [=, &g]() -> int {
    if (int rc = store_commands(); rc != -1) return rc;
    if (server->parsed()) return CmdServer(g, *sargs);
    if (agent->parsed()) return CmdAgent(g, *api, *agent_opts, *kube_opts);
    if (tokens->parsed()) return CmdTokens(*api, *targs);
    if (audit->parsed()) return CmdAudit(*api, *audit_limit);
    if (jobs->parsed()) {
      std::string fmt_ = *format == "table" && *action == "export" ? "ndjson" : *format;
      return CmdJobs(*api, *action, *project, *query, *id, fmt_);
    }
    if (dataplanes->parsed()) return CmdDataPlanes(*api, *format);
    if (flags->parsed()) return CmdFlags(*api, *action, *name, *value);
    return -1;
  };
}

}  // namespace hpc::cli
