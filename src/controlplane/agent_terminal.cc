#include "controlplane/agent_terminal.h"

#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/validation.h"
#include "common/http_client.h"
#include "common/jwt.h"
#include "controlplane/relay.h"

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

AgentTerminals::AgentTerminals(DataPlaneAccess* dp, TerminalEndpoint endpoint)
    : dp_(dp), endpoint_(std::move(endpoint)) {}

AgentTerminals::~AgentTerminals() { StopAll(); }

json AgentTerminals::Open(const json& request) {
  auto text = [&](const char* key) {
    return request.contains(key) && request[key].is_string() ? request[key].get<std::string>() : std::string();
  };
  auto number = [&](const char* key, int otherwise) {
    return request.contains(key) && request[key].is_number_integer() ? std::clamp(request[key].get<int>(), 2, 1000)
                                                                     : otherwise;
  };
  const std::string id = text("session"), workspace = text("workspace"), user = text("user");
  if (id.size() != 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return RelayError(Status::Unavailable("terminal-open: no session id"));
  }
  auto w = dp_->FindWorkspace(workspace);
  if (!w.ok()) return RelayError(Status::Unavailable(w.status().message()));
  // The control plane checked who asks; the data plane checks the workspace is theirs here too.
  if (!*w || (*w)->spec.user.name != user || (*w)->spec.stopping || (*w)->status.phase != "Ready") {
    return RelayError(Status::FailedPrecondition(
        fmt::format("workspace {} is not a Ready workspace of {} on this data plane", workspace, user)));
  }
  if (!api::ValidateUserName(user).ok() || user == "root") {
    return RelayError(Status::FailedPrecondition("not a user a shell runs as"));
  }
  auto shell = dp_->StartShell(**w, number("cols", 80), number("rows", 24));
  if (!shell.ok())
    return RelayError(Status::FailedPrecondition("the shell did not start: " + shell.status().message()));
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
  spdlog::info("terminal {}: a shell for {} in workspace {}", id.substr(0, 8), user, workspace);
  return {{"started", true}};
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
      } else if (e.contains("resize") && e["resize"].is_object()) {
        (void)ResizePty(s->shell.fd, e["resize"].value("cols", 80), e["resize"].value("rows", 24));
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    sessions.swap(sessions_);
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (!it->second->done) {
        ++it;
        continue;
      }
      ended.push_back(std::move(it->second));
      it = sessions_.erase(it);
    }
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
  return n;
}

}  // namespace hpc::cp
