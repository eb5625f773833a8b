#include "agent/agent_lab.h"

#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/validation.h"
#include "common/jwt.h"
#include "messages/relay_messages.h"

namespace hpc::cp {
using nlohmann::json;

namespace {
// The longest JupyterLab may take to answer after it started (a cold image: tens of seconds).
constexpr auto kStartTimeout = std::chrono::seconds(80);
constexpr size_t kLogTailBytes = 8192;
// What JupyterLab is told of a request (the control plane sends no more; checked again here).
constexpr std::array<const char*, 7> kForwarded = {
    "Accept", "Content-Type", "If-None-Match", "If-Match", "If-Modified-Since", "X-Requested-With", "Accept-Encoding"};

json Refused(const Status& s) { return RelayError(s); }
}  // namespace

struct AgentLabs::Lab {
  std::string workspace, token;
  LabProcess server;
  std::mutex start_mu;  // one start at a time; later requests wait for it
  bool started = false;
  std::mutex log_mu;
  std::string log;  // the last of what it wrote, for why it failed
  std::string exit_reason;
  std::atomic<bool> exited{false};
  std::thread drain;

  std::string LogTail() {
    std::lock_guard<std::mutex> lock(log_mu);
    return log.size() > 600 ? log.substr(log.size() - 600) : log;
  }
  // Reads what it writes (a full pseudo-terminal would stop it) until it ends, then reaps it.
  void Drain() {
    std::array<char, 4096> buf{};
    while (true) {
      const ssize_t n = ::read(server.process.fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::lock_guard<std::mutex> lock(log_mu);
      log.append(buf.data(), static_cast<size_t>(n));
      if (log.size() > kLogTailBytes) log.erase(0, log.size() - kLogTailBytes);
    }
    int status = 0;
    while (::waitpid(server.process.pid, &status, 0) < 0 && errno == EINTR) {}
    {
      std::lock_guard<std::mutex> lock(log_mu);
      exit_reason = ExitReason(status);
    }
    exited = true;
  }
  // Ends it: SIGTERM to its session, SIGKILL after 3 s.
  void Stop() {
    if (server.process.pid > 0 && !exited) {
      ::kill(-server.process.pid, SIGTERM);
      for (int i = 0; i < 30 && !exited; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!exited) ::kill(-server.process.pid, SIGKILL);
    }
    if (drain.joinable()) drain.join();
    if (server.process.fd >= 0) ::close(server.process.fd);
    server.process.fd = -1;
  }
};

struct AgentLabs::SocketRun {
  ws::Loop loop;
  std::shared_ptr<ws::Connection> lab, server;
  std::thread thread;
  std::atomic<bool> done{false};
};

AgentLabs::AgentLabs(DataPlaneAccess* dp, TerminalEndpoint endpoint) : dp_(dp), endpoint_(std::move(endpoint)) {}

AgentLabs::~AgentLabs() { StopAll(); }

Result<AgentLabs::Relayed> AgentLabs::Check(Relayed r, api::Workspace* out) {
  if (!api::ValidateUserName(r.user).ok() || r.user == "root") {
    return Status::FailedPrecondition("not a user JupyterLab runs as");
  }
  auto w = dp_->FindWorkspace(r.workspace);
  if (!w.ok()) return Status::Unavailable(w.status().message());
  // The control plane checked who asks; the data plane checks the workspace is theirs here too.
  if (!*w || (*w)->spec.user.name != r.user || (*w)->spec.project != r.project || (*w)->spec.stopping ||
      (*w)->status.phase != "Ready") {
    return Status::FailedPrecondition(
        fmt::format("workspace {} is not a Ready workspace of {} on this data plane", r.workspace, r.user));
  }
  if (r.target.rfind(LabBasePath(r.project, r.workspace), 0) != 0) {
    return Status::FailedPrecondition("the path is not under the workspace's JupyterLab");
  }
  *out = **w;
  return r;
}

Result<std::shared_ptr<AgentLabs::Lab>> AgentLabs::Ensure(const api::Workspace& w, const Relayed& r) {
  std::shared_ptr<Lab> lab, gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status::Unavailable("the agent is stopping");
    auto& slot = labs_[r.workspace];
    if (slot && slot->exited) gone = std::move(slot);  // its login pod went, or it failed: start again
    if (!slot) slot = std::make_shared<Lab>();
    lab = slot;
  }
  if (gone) {
    spdlog::info("workspace {}: JupyterLab had ended ({}); starting it again", r.workspace, gone->exit_reason);
    gone->Stop();
  }
  std::lock_guard<std::mutex> start(lab->start_mu);
  if (lab->started && !lab->exited) return lab;
  if (lab->started) return Status::Unavailable(fmt::format("JupyterLab of workspace {} ended; try again", r.workspace));
  ASSIGN_OR_RETURN(std::string token, jwt::RandomHex(32));
  const std::string base = LabBasePath(r.project, r.workspace);
  auto server = dp_->StartLab(w, {base, token, kLabPort});
  if (!server.ok()) return Status::FailedPrecondition(server.status().message());
  lab->workspace = r.workspace;
  lab->token = token;
  lab->server = *server;
  lab->started = true;
  lab->drain = std::thread([raw = lab.get()] { raw->Drain(); });
  spdlog::info("workspace {}: JupyterLab started for {} at {}:{}", r.workspace, r.user, server->host, server->port);
  httplib::Client client(server->host, server->port);
  client.set_connection_timeout(1);
  client.set_read_timeout(10);
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline && !lab->exited && !stopping_) {
    auto res = client.Get(base + "api/status", {{"Authorization", "token " + token}});
    if (res && res->status == 200) return lab;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const bool exited = lab->exited;
  lab->Stop();
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(lab->log_mu);
    reason = exited ? "exited (" + lab->exit_reason + ")" : "did not answer within 80 s";
  }
  return Status::FailedPrecondition(
      fmt::format("JupyterLab of workspace {} {}: {}", r.workspace, reason, lab->LogTail()));
}

json AgentLabs::Request(const LabHttp& request) {
  api::Workspace w;
  auto r = Check(
      {.workspace = request.workspace, .project = request.project, .user = request.user, .target = request.target}, &w);
  if (!r.ok()) return Refused(r.status());
  const std::string& method = request.method;
  static const std::array<const char*, 6> kMethods = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
  if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
    return Refused(Status::FailedPrecondition("not a method JupyterLab is asked with: " + method.substr(0, 10)));
  }
  auto lab = Ensure(w, *r);
  if (!lab.ok()) return Refused(lab.status());
  httplib::Client client((*lab)->server.host, (*lab)->server.port);
  client.set_connection_timeout(3);
  client.set_read_timeout(120);
  client.set_write_timeout(30);
  client.set_decompress(false);  // its gzip goes to the browser as it is
  httplib::Request out;
  out.method = method;
  out.path = r->target;
  for (const char* name : kForwarded) {
    if (auto it = request.headers.find(name); it != request.headers.end()) out.headers.emplace(name, it->second);
  }
  out.headers.emplace("Authorization", "token " + (*lab)->token);
  out.body = request.body;
  auto res = client.send(out);
  if (!res) {
    return Refused(Status::Unavailable(
        fmt::format("JupyterLab of workspace {} did not answer: {}", r->workspace, httplib::to_string(res.error()))));
  }
  if (res->body.size() > kMaxAnswerBytes) {
    return Refused(Status::Unavailable(fmt::format(
        "JupyterLab's answer ({} bytes) is larger than the relay carries ({})", res->body.size(), kMaxAnswerBytes)));
  }
  LabHttpAnswer answer{res->status, {}, std::move(res->body)};
  for (const auto& [k, v] : res->headers) answer.headers[k] = v;
  return ToJson(answer);
}

json AgentLabs::Socket(const LabSocket& request) {
  ReapSockets();
  api::Workspace w;
  auto r = Check(
      {.workspace = request.workspace, .project = request.project, .user = request.user, .target = request.target}, &w);
  if (!r.ok()) return Refused(r.status());
  const std::string& tunnel = request.tunnel;
  if (tunnel.size() != 32 || tunnel.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Refused(Status::Unavailable("lab-socket: no tunnel id"));
  }
  auto server = ws::EndpointOf(endpoint_.server, endpoint_.ca_file);
  if (!server.ok()) return Refused(server.status());
  auto lab = Ensure(w, *r);
  if (!lab.ok()) return Refused(lab.status());
  auto run = std::make_unique<SocketRun>();
  SocketRun* s = run.get();
  auto lab_end = s->loop.Connect(
      (*lab)->server.host, std::to_string((*lab)->server.port), r->target,
      {{"Authorization", "token " + (*lab)->token}}, std::chrono::seconds(10),
      [s](std::string data, bool binary) { s->server->Send(std::move(data), binary); },
      [s](const ws::CloseInfo& info) {
        // A socket that broke (its login pod went) says so; a close JupyterLab sent passes as it is.
        s->server->Close(ws::SendableCloseCode(info.code),
                         info.code == 1006 ? "JupyterLab's socket ended (" + info.reason + ")" : info.reason);
      });
  if (!lab_end.ok()) return Refused(Status::Unavailable("JupyterLab's socket: " + lab_end.status().message()));
  s->lab = *lab_end;
  auto server_end = s->loop.Connect(
      *server, fmt::format("/api/v1/dataplanes/{}/tunnels/{}", endpoint_.data_plane, tunnel),
      {{"Authorization", "Bearer " + endpoint_.token}}, std::chrono::seconds(10),
      [s](std::string data, bool binary) { s->lab->Send(std::move(data), binary); },
      [s](const ws::CloseInfo& info) { s->lab->Close(ws::SendableCloseCode(info.code), info.reason); });
  if (!server_end.ok())
    return Refused(Status::Unavailable("the control plane's tunnel: " + server_end.status().message()));
  s->server = *server_end;
  s->thread = std::thread([s] {
    s->loop.Run();
    s->done = true;
  });
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) s->loop.Stop();
  sockets_.push_back(std::move(run));
  return {{"opened", true}};
}

void AgentLabs::ReapSockets() {
  std::list<std::unique_ptr<SocketRun>> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sockets_.begin(); it != sockets_.end();) {
      if ((*it)->done) {
        ended.push_back(std::move(*it));
        it = sockets_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : ended) s->thread.join();
}

void AgentLabs::StopAll() {
  std::list<std::unique_ptr<SocketRun>> sockets;
  std::map<std::string, std::shared_ptr<Lab>> labs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    sockets.swap(sockets_);
    labs.swap(labs_);
  }
  for (auto& s : sockets) s->loop.Stop();
  for (auto& s : sockets) s->thread.join();
  for (auto& [id, lab] : labs) {
    std::lock_guard<std::mutex> start(lab->start_mu);
    lab->Stop();
  }
}

size_t AgentLabs::Running() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, lab] : labs_) n += lab->started && !lab->exited;
  return n;
}

}  // namespace hpc::cp
