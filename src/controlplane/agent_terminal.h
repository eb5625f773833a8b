// The agent's side of terminals in the browser (terminal_hub.h): for each session the control
// plane relays ("terminal-open"), a shell on a pseudo-terminal in the workspace's login pod
// (DataPlaneAccess::StartShell), and two pumps: what the shell writes is posted to the control
// plane as it comes, and the browser's input and resizes are
// long-polled from it and applied. The shell ends when the session closes (SIGHUP to its
// session, SIGKILL after 2 s); the session ends when the shell does.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "controlplane/data_plane_access.h"

namespace httplib {
class Client;
}

namespace hpc::cp {

struct TerminalEndpoint {
  std::string server, token, ca_file, data_plane;
};

// A client of the control plane for a terminal's pumps (kept alive between requests).
std::unique_ptr<httplib::Client> TerminalClient(const TerminalEndpoint& e, int read_timeout_s);
// Posts one piece of a shell's output; on a failure, again on a fresh connection, with backoff
// (8 tries: about 7 s; a kept-alive connection the server closes just as the next post goes out fails it, and
// that piece would be lost). The status the server answered (200, or 404 for a session gone), or
// 0 when it never answered either.
int PostTerminalOutput(const TerminalEndpoint& e, std::unique_ptr<httplib::Client>& client, const std::string& path,
                       const std::string& body, int tries = 8);

class AgentTerminals {
 public:
  AgentTerminals(DataPlaneAccess* dp, TerminalEndpoint endpoint);
  ~AgentTerminals();
  // A relayed "terminal-open": starts the shell and its pumps; answers {"started": true} or
  // {"error": {"code", "message"}}.
  nlohmann::json Open(const nlohmann::json& request);
  // Ends every shell and waits for the pumps.
  void StopAll();
  size_t Running();

 private:
  struct Session;
  void PumpOutput(Session* s);
  void PumpInput(Session* s);
  void EndShell(Session* s);
  // Joins and forgets the sessions whose shell ended.
  void ReapEnded();

  DataPlaneAccess* dp_;
  TerminalEndpoint endpoint_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Session>> sessions_;
  bool stopping_ = false;
};

}  // namespace hpc::cp
