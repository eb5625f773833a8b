#include "agent/agent_terminal.h"

#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/validation.h"
#include "common/http_client.h"
#include "common/jwt.h"
#include "messages/relay_messages.h"

namespace hpc::cp {
using nlohmann::json;

struct AgentTerminals::Session {
  std::string id;
  PtyProcess shell;
  std::atomic<bool> done{false};
  std::mutex client_mu;
  httplib::Client* polling = nullptr;  // the input poll in flight, stopped on StopAll
  std::thread output, input;
};

std::unique_ptr<httplib::Client> TerminalClient(const TerminalEndpoint& e, int read_timeout_s) {
  auto c = HttpClientFor(e.server, e.ca_file);
  c->set_connection_timeout(3);
  c->set_read_timeout(read_timeout_s);
  c->set_bearer_token_auth(e.token);
  c->set_keep_alive(true);
  return c;
}

int PostTerminalOutput(const TerminalEndpoint& e, std::unique_ptr<httplib::Client>& client, const std::string& path,
                       const std::string& body, int tries) {
  for (int attempt = 0; attempt < tries; ++attempt) {
    auto res = client->Post(path, body, "application/json");
    if (res && (res->status == 200 || res->status == 404)) return res->status;
    spdlog::warn("terminal output: {} (try {} of {})",
                 res ? std::to_string(res->status) : httplib::to_string(res.error()), attempt + 1, tries);
    client = TerminalClient(e, 30);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(2000, 50 << attempt)));
  }
  return 0;
}

struct AgentTerminals::SocketSession {
  PtyProcess shell;
  ws::Loop loop;
  std::shared_ptr<ws::Connection> socket;
  std::atomic<bool> hung_up{false};  // the browser's side closed: the shell was sent SIGHUP
  std::atomic<bool> done{false};     // the shell was reaped
  std::thread output, serve;
};

AgentTerminals::AgentTerminals(DataPlaneAccess* dp, TerminalEndpoint endpoint)
    : dp_(dp), endpoint_(std::move(endpoint)) {}

AgentTerminals::~AgentTerminals() { StopAll(); }

namespace {
bool IsHexId(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}
}  // namespace

Result<PtyProcess> AgentTerminals::ShellFor(const std::string& workspace, const std::string& user, int cols, int rows) {
  auto w = dp_->FindWorkspace(workspace);
  if (!w.ok()) return Status::Unavailable(w.status().message());
  // The control plane checked who asks; the data plane checks the workspace is theirs here too.
  if (!*w || (*w)->spec.user.name != user || (*w)->spec.stopping || (*w)->status.phase != "Ready") {
    return Status::FailedPrecondition(
        fmt::format("workspace {} is not a Ready workspace of {} on this data plane", workspace, user));
  }
  if (!api::ValidateUserName(user).ok() || user == "root") {
    return Status::FailedPrecondition("not a user a shell runs as");
  }
  auto shell = dp_->StartShell(**w, cols, rows);
  if (!shell.ok()) return Status::FailedPrecondition("the shell did not start: " + shell.status().message());
  spdlog::info("terminal: a shell for {} in workspace {}", user, workspace);
  return shell;
}

json AgentTerminals::Open(const TerminalOpen& request) {
  const std::string& id = request.session;
  if (!IsHexId(id)) return RelayError(Status::Unavailable("terminal-open: no session id"));
  auto shell = ShellFor(request.workspace, request.user, request.cols, request.rows);
  if (!shell.ok()) return RelayError(shell.status());
  ReapEnded();
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    ::kill(-shell->pid, SIGKILL);
    ::waitpid(shell->pid, nullptr, 0);
    ::close(shell->fd);
    return RelayError(Status::Unavailable("the agent is stopping"));
  }
  auto s = std::make_unique<Session>();
  s->id = id;
  s->shell = *shell;
  Session* raw = s.get();
  sessions_[id] = std::move(s);
  raw->output = std::thread([this, raw] { PumpOutput(raw); });
  raw->input = std::thread([this, raw] { PumpInput(raw); });
  return {{"started", true}};
}

json AgentTerminals::OpenSocket(const TerminalSocket& request) {
  ReapEnded();
  const std::string& tunnel = request.tunnel;
  if (!IsHexId(tunnel)) return RelayError(Status::Unavailable("terminal-socket: no tunnel id"));
  auto server = ws::EndpointOf(endpoint_.server, endpoint_.ca_file);
  if (!server.ok()) return RelayError(server.status());
  auto shell = ShellFor(request.workspace, request.user, request.cols, request.rows);
  if (!shell.ok()) return RelayError(shell.status());
  auto s = std::make_unique<SocketSession>();
  SocketSession* raw = s.get();
  raw->shell = *shell;
  auto socket = raw->loop.Connect(
      *server, fmt::format("/api/v1/dataplanes/{}/tunnels/{}", endpoint_.data_plane, tunnel),
      {{"Authorization", "Bearer " + endpoint_.token}}, std::chrono::seconds(10),
      [raw](std::string data, bool binary) {
        if (binary) {
          for (size_t off = 0; off < data.size();) {
            const ssize_t n = ::write(raw->shell.fd, data.data() + off, data.size() - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            off += static_cast<size_t>(n);
          }
          return;
        }
        if (auto size = TerminalResizeFromJson(json::parse(data, nullptr, false))) {
          (void)ResizePty(raw->shell.fd, size->cols, size->rows);
        }
      },
      [raw](const ws::CloseInfo&) {
        if (!raw->done) ::kill(-raw->shell.pid, SIGHUP);
        raw->hung_up = true;
      });
  if (!socket.ok()) {
    ::kill(-raw->shell.pid, SIGKILL);
    ::waitpid(raw->shell.pid, nullptr, 0);
    ::close(raw->shell.fd);
    return RelayError(Status::Unavailable("the control plane's tunnel: " + socket.status().message()));
  }
  raw->socket = *socket;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) raw->loop.Stop();
  raw->output = std::thread([this, raw] { PumpSocketOutput(raw); });
  raw->serve = std::thread([raw] { raw->loop.Run(); });
  sockets_.push_back(std::move(s));
  return {{"started", true}};
}

// What the shell writes goes out as it comes (as PumpOutput's posts do); when every process of
// the terminal is gone, the socket closes saying how the shell ended.
void AgentTerminals::PumpSocketOutput(SocketSession* s) {
  std::string buf(64 << 10, '\0');
  std::optional<std::chrono::steady_clock::time_point> hung_up_at;
  for (;;) {
    // A shell that outlives the SIGHUP by 2 s is killed.
    if (s->hung_up && !hung_up_at) hung_up_at = std::chrono::steady_clock::now();
    if (hung_up_at && std::chrono::steady_clock::now() - *hung_up_at > std::chrono::seconds(2)) {
      ::kill(-s->shell.pid, SIGKILL);
    }
    struct pollfd p {
      s->shell.fd, POLLIN, 0
    };
    if (::poll(&p, 1, 200) == 0) continue;
    const ssize_t n = ::read(s->shell.fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EIO: every process of the terminal is gone
    s->socket->Send(std::string(buf.data(), static_cast<size_t>(n)), true);
  }
  int status = 0;
  while (::waitpid(s->shell.pid, &status, 0) < 0 && errno == EINTR) {}
  s->done = true;
  s->socket->Close(ws::kNormalClosure, "the shell " + ExitReason(status));
}

// What the shell writes, posted as it comes: whatever is there when a read returns, without
// waiting for more (a keystroke's echo goes at once; under a burst of output, what piles up while
// one post is in flight goes in the next, so the posts batch themselves).
void AgentTerminals::PumpOutput(Session* s) {
  auto client = TerminalClient(endpoint_, 30);
  const std::string path = fmt::format("/api/v1/dataplanes/{}/terminals/{}/output", endpoint_.data_plane, s->id);
  std::string buf(64 << 10, '\0');
  for (;;) {
    struct pollfd p {
      s->shell.fd, POLLIN, 0
    };
    if (::poll(&p, 1, 200) == 0) continue;
    std::string chunk;
    ssize_t n = ::read(s->shell.fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    while (n > 0) {
      chunk.append(buf.data(), static_cast<size_t>(n));
      if (chunk.size() >= (64u << 10) || ::poll(&p, 1, 0) <= 0) break;
      n = ::read(s->shell.fd, buf.data(), buf.size());
    }
    json body = {{"data", jwt::Base64Encode(chunk)}};
    if (n <= 0 && chunk.empty()) {  // EIO: every process of the terminal is gone
      int status = 0;
      while (::waitpid(s->shell.pid, &status, 0) < 0 && errno == EINTR) {}
      body["exited"] = "the shell " + ExitReason(status);
    }
    const int answered = PostTerminalOutput(endpoint_, client, path, body.dump());
    if (body.contains("exited")) break;
    if (answered != 200) {  // the session is gone, or the control plane away for long: end the shell
      spdlog::warn("terminal {}: output not delivered ({}): ending its shell", s->id.substr(0, 8), answered);
      ::kill(-s->shell.pid, SIGHUP);
    }
  }
  s->done = true;
}

// The browser's input and resizes, applied in order; a closed session ends the shell.
void AgentTerminals::PumpInput(Session* s) {
  const std::string path = fmt::format("/api/v1/dataplanes/{}/terminals/{}/input?wait=20", endpoint_.data_plane, s->id);
  int failures = 0;
  while (!s->done) {
    auto client = TerminalClient(endpoint_, 30);
    {
      std::lock_guard<std::mutex> lock(s->client_mu);
      if (s->done) break;
      s->polling = client.get();
    }
    auto res = client->Get(path);
    {
      std::lock_guard<std::mutex> lock(s->client_mu);
      s->polling = nullptr;
    }
    json body = res && res->status == 200 ? json::parse(res->body, nullptr, false) : json();
    if (res && res->status == 404) body = {{"closed", true}};
    if (!body.is_object()) {
      if (++failures > 10)
        body = {{"closed", true}};  // the control plane is away for long: end it
      else {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
    }
    failures = 0;
    for (const auto& e : body.value("events", json::array())) {
      if (e.contains("data") && e["data"].is_string()) {
        const std::string& data = e["data"].get_ref<const std::string&>();
        for (size_t off = 0; off < data.size();) {
          ssize_t n = ::write(s->shell.fd, data.data() + off, data.size() - off);
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
      } else if (auto size = TerminalResizeFromJson(e)) {
        (void)ResizePty(s->shell.fd, size->cols, size->rows);
      }
    }
    if (body.value("closed", false)) {
      EndShell(s);
      break;
    }
  }
}

void AgentTerminals::EndShell(Session* s) {
  if (s->done) return;  // reaped already: its pid may be another process's by now
  ::kill(-s->shell.pid, SIGHUP);
  for (int i = 0; i < 20 && !s->done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (!s->done) ::kill(-s->shell.pid, SIGKILL);
}

void AgentTerminals::StopAll() {
  std::map<std::string, std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<SocketSession>> sockets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    sessions.swap(sessions_);
    sockets.swap(sockets_);
  }
  for (auto& s : sockets) {
    if (!s->done) ::kill(-s->shell.pid, SIGKILL);
    s->output.join();  // closes the socket as the shell ends
    s->loop.Stop();
    s->serve.join();
    ::close(s->shell.fd);
  }
  for (auto& [id, s] : sessions) {
    {
      std::lock_guard<std::mutex> lock(s->client_mu);
      if (s->polling) s->polling->stop();
    }
    if (!s->done) ::kill(-s->shell.pid, SIGKILL);
  }
  for (auto& [id, s] : sessions) {
    s->output.join();
    s->done = true;
    {
      std::lock_guard<std::mutex> lock(s->client_mu);
      if (s->polling) s->polling->stop();
    }
    s->input.join();
    ::close(s->shell.fd);
  }
}

void AgentTerminals::ReapEnded() {
  std::vector<std::unique_ptr<Session>> ended;
  std::vector<std::unique_ptr<SocketSession>> ended_sockets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sockets_.begin(); it != sockets_.end();) {
      if ((*it)->done) {
        ended_sockets.push_back(std::move(*it));
        it = sockets_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (!it->second->done) {
        ++it;
        continue;
      }
      ended.push_back(std::move(it->second));
      it = sessions_.erase(it);
    }
  }
  for (auto& s : ended_sockets) {
    s->output.join();
    s->serve.join();  // the socket's close was started when the shell ended
    ::close(s->shell.fd);
  }
  for (auto& s : ended) {
    {
      std::lock_guard<std::mutex> lock(s->client_mu);
      if (s->polling) s->polling->stop();
    }
    s->output.join();
    s->input.join();
    ::close(s->shell.fd);
  }
}

size_t AgentTerminals::Running() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, s] : sessions_) n += !s->done;
  for (const auto& s : sockets_) n += !s->done;
  return n;
}

}  // namespace hpc::cp
