// Terminal sessions in the browser: a shell in the user's own workspace login pod, run by the
// data plane's agent on a pseudo-terminal. The control plane holds each session's two queues
// and nothing else: what the browser types (input and resize events), taken by the agent's long
// poll, and what the shell writes (the last kMaxOutputBytes), read by the browser's long poll
// from an offset. Only the session's owner reads or types; only its data plane's agent serves
// it. A session nobody reads for kIdleSeconds is closed (a tab closed, a token expired: every
// read authenticates), and its shell is then ended by the agent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::cp {

struct TerminalOwner {
  std::string user;
  std::string project;
  std::string workspace;
  std::string data_plane;
};

// What a browser's read returns: bytes from `offset` (later than asked when older bytes were
// dropped), the offset to ask from next, and how the session ended once it has.
struct TerminalOutput {
  std::string data;
  uint64_t offset = 0;
  uint64_t next = 0;
  bool closed = false;
  std::string reason;  // why it closed: "exited 0", "closed by the user", ...
};

// What the agent's poll returns: the events to apply in order, or closed (end the shell).
struct TerminalInput {
  std::vector<nlohmann::json> events;  // {"data": "..."} | {"resize": {"cols": C, "rows": R}}
  bool closed = false;
};

class TerminalHub {
 public:
  static constexpr size_t kMaxOutputBytes = 1 << 20;
  static constexpr size_t kMaxPendingInputBytes = 64 << 10;
  static constexpr int kIdleSeconds = 30;  // the default; tests give a shorter one
  static constexpr size_t kMaxPerUser = 4;
  static constexpr size_t kMaxSessions = 256;

  explicit TerminalHub(std::chrono::seconds idle = std::chrono::seconds(kIdleSeconds)) : idle_(idle) {}

  // A new session's id (16 random bytes, hex); Unavailable past the bounds.
  Result<std::string> Open(const TerminalOwner& owner);
  // The owner's view: NotFound for anyone else (a session's existence is not shown to others).
  Result<TerminalOwner> OwnerOf(const std::string& id, const std::string& user);
  Status Input(const std::string& id, const std::string& user, nlohmann::json event);
  Result<TerminalOutput> Output(const std::string& id, const std::string& user, uint64_t offset,
                                std::chrono::milliseconds wait);
  Status Close(const std::string& id, const std::string& user, const std::string& reason);

  // The agent's side, for sessions on its own data plane only.
  Result<TerminalInput> TakeInput(const std::string& id, const std::string& data_plane, std::chrono::milliseconds wait);
  // `exit_reason` set: the shell ended; the session closes with it.
  Status PutOutput(const std::string& id, const std::string& data_plane, const std::string& bytes,
                   const std::optional<std::string>& exit_reason);

  // Closes sessions nobody read for the idle time; forgets closed ones a minute after they closed.
  void Reap();
  void Shutdown();
  size_t OpenSessions();

 private:
  struct Session {
    TerminalOwner owner;
    std::string output;
    uint64_t output_base = 0;  // the offset of output[0]
    std::vector<nlohmann::json> input;
    size_t input_bytes = 0;
    bool closed = false;
    std::string reason;
    std::chrono::steady_clock::time_point last_read, closed_at;
  };
  std::shared_ptr<Session> FindOwned(const std::string& id, const std::string& user);  // holds mu_
  void CloseLocked(Session& s, const std::string& reason);

  const std::chrono::seconds idle_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  bool shutdown_ = false;
};

}  // namespace hpc::cp
