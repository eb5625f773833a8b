// The agent's side of terminals in the browser: for each session the control plane relays, a
// shell on a pseudo-terminal in the workspace's login pod (DataPlaneAccess::StartShell), joined
// to the browser one of two ways:
// - "terminal-socket": a WebSocket the agent opens back to the control plane's tunnel
//   (tunnel_routes.h; wss:// to an https:// server): what the shell writes goes out as binary
//   messages as it comes; binary
//   messages in are keystrokes, text ones resizes ({"resize": {"cols", "rows"}}); the shell's
//   end closes the socket with why (1000, "the shell exited 0").
// - "terminal-open" (terminal_hub.h, for a browser that cannot use WebSockets): what the shell
//   writes is posted to the control plane, and the browser's input and resizes are long-polled
//   from it.
// The shell ends when the browser's side closes (SIGHUP to its session, SIGKILL after 2 s); the
// session ends when the shell does.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/data_plane_access.h"
#include "common/websocket.h"
#include "messages/relay_messages.h"

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
  nlohmann::json Open(const TerminalOpen& request);
  // A relayed "terminal-socket": starts the shell and joins it to the tunnel; answers
  // {"started": true} or {"error": ...}.
  nlohmann::json OpenSocket(const TerminalSocket& request);
  // Ends every shell and waits for the pumps.
  void StopAll();
  size_t Running();

 private:
  struct Session;
  struct SocketSession;
  // A shell in `workspace`, when it is `user`'s and Ready here.
  Result<PtyProcess> ShellFor(const std::string& workspace, const std::string& user, int cols, int rows);
  void PumpSocketOutput(SocketSession* s);
  void PumpOutput(Session* s);
  void PumpInput(Session* s);
  void EndShell(Session* s);
  // Joins and forgets the sessions whose shell ended.
  void ReapEnded();

  DataPlaneAccess* dp_;
  TerminalEndpoint endpoint_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<SocketSession>> sockets_;
  bool stopping_ = false;
};

}  // namespace hpc::cp
