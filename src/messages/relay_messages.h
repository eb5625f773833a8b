// The requests the control plane relays to a data plane's agent and the agent's answers: one
// struct per kind, each encoded and decoded here and nowhere else. The server builds them
// (server/*_routes.cc) and carries them over its relay (server/relay_hub.h); the agent decodes
// them and serves each kind from a table (agent/agent.cc). Neither side writes a field name of
// these messages itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::cp {

enum class RelayKind {
  kJobOutput,       // a piece of a job's stdout or stderr
  kTerminalOpen,    // a shell for a browser terminal that long-polls
  kTerminalSocket,  // a shell whose bytes go over a WebSocket tunnel the agent opens back
  kLabHttp,         // one HTTP request to the workspace's JupyterLab
  kLabSocket,       // a WebSocket to JupyterLab (kernels, terminals) over a tunnel
};
inline constexpr RelayKind kRelayKinds[] = {RelayKind::kJobOutput, RelayKind::kTerminalOpen, RelayKind::kTerminalSocket,
                                            RelayKind::kLabHttp, RelayKind::kLabSocket};

// "job-output", "terminal-open", ...: the kind as the message carries it.
const char* RelayKindName(RelayKind kind);
// The kind a relayed request names. InvalidArgument naming what it found (at most 40
// characters of it) when the request names none or one this build does not know.
Result<RelayKind> RelayKindOf(const nlohmann::json& request);

// A refusal, as an answer carries it: {"error": {"code", "message"}}, the code one of NotFound,
// FailedPrecondition and Unavailable (any other Status is sent as Unavailable).
nlohmann::json RelayError(const Status& s);
// The error an answer carries, as that Status; Ok when it carries none. A malformed error is
// Unavailable: the agent's fault, never the caller's.
Status RelayAnswerError(const nlohmann::json& answer, const std::string& otherwise);

// --- job-output: the job as its record knows it (id, submit time, user) and which piece.
struct JobOutputRequest {
  int64_t job_id = 0;
  int64_t submit_time = 0;
  std::string user;
  std::string cluster;            // the agent's own, or the job is not its data plane's
  std::string stream = "stdout";  // stdout | stderr
  int64_t offset = -1;            // byte offset; negative: the last `limit` bytes
  int64_t limit = 64 << 10;
};
inline constexpr int64_t kMaxJobOutputChunk = 1 << 20;
nlohmann::json ToJson(const JobOutputRequest& r);
// InvalidArgument naming the field for anything out of its bounds.
Result<JobOutputRequest> JobOutputRequestFromJson(const nlohmann::json& j);
// The agent's answer as the server returns it: the result ({"path", "size", "offset",
// "nextOffset", "text", "state", ...}), or the Status the error names.
Result<nlohmann::json> JobOutputAnswer(const nlohmann::json& answer);

// Terminals and JupyterLab's sockets run over a WebSocket that the agent opens back to the
// server's tunnel of this id (32 hex digits); the server adds it when it has opened the tunnel.
nlohmann::json WithTunnel(nlohmann::json request, const std::string& tunnel);

// --- terminal-open / terminal-socket: a shell as `user` in their workspace, cols x rows (each
// 2..1000; 80 x 24 when absent).
struct TerminalOpen {
  std::string session;  // the server's terminal session (32 hex digits)
  std::string workspace, user;
  int cols = 80, rows = 24;
};
struct TerminalSocket {
  std::string tunnel;  // empty until the server opened it (WithTunnel)
  std::string workspace, user;
  int cols = 80, rows = 24;
};
nlohmann::json ToJson(const TerminalOpen& m);
nlohmann::json ToJson(const TerminalSocket& m);
// InvalidArgument naming the field for a field of the wrong type.
Result<TerminalOpen> TerminalOpenFromJson(const nlohmann::json& j);
Result<TerminalSocket> TerminalSocketFromJson(const nlohmann::json& j);

// A terminal's new size, as the browser's input carries it: {"resize": {"cols", "rows"}} (a
// text message of the socket, or an event of the long-polled input). nullopt when the event is
// not a resize or a size is not an integer; each size clamped to 2..1000.
struct TerminalResize {
  int cols = 80, rows = 24;
};
std::optional<TerminalResize> TerminalResizeFromJson(const nlohmann::json& event);

// The path JupyterLab of a workspace is served under (its base URL), with the trailing slash.
inline std::string LabBasePath(const std::string& project, const std::string& workspace) {
  return "/projects/" + project + "/workspaces/" + workspace + "/lab/";
}

// --- lab-http / lab-socket: a request to `user`'s JupyterLab in their workspace; `target` is
// the path and query as the browser sent them, under LabBasePath.
struct LabHttp {
  std::string workspace, project, user, target;
  std::string method;
  std::map<std::string, std::string> headers;  // only those the server forwards
  std::string body;                            // bytes (base64 on the wire)
};
struct LabHttpAnswer {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;  // bytes (base64 on the wire)
};
struct LabSocket {
  std::string tunnel;  // empty until the server opened it (WithTunnel)
  std::string workspace, project, user, target;
};
nlohmann::json ToJson(const LabHttp& m);
nlohmann::json ToJson(const LabHttpAnswer& m);
nlohmann::json ToJson(const LabSocket& m);
Result<LabHttp> LabHttpFromJson(const nlohmann::json& j);
// Unavailable (the agent's fault) for an answer without a status 100-599, headers or a base64 body.
Result<LabHttpAnswer> LabHttpAnswerFromJson(const nlohmann::json& j);
Result<LabSocket> LabSocketFromJson(const nlohmann::json& j);

}  // namespace hpc::cp
