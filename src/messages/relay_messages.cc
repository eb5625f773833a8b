#include "messages/relay_messages.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "common/jwt.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

constexpr const char* kKind = "kind";

// A string field: "" when absent (the agent then refuses the request for what is missing);
// InvalidArgument when present and not a string.
Status TextField(const json& j, const char* key, std::string* out) {
  if (!j.contains(key)) return Status::Ok();
  if (!j[key].is_string()) return Status::InvalidArgument(key, "must be a string");
  *out = j[key].get<std::string>();
  return Status::Ok();
}

// A terminal's size: 2..1000 (clamped), `*out` kept when absent.
Status SizeField(const json& j, const char* key, int* out) {
  if (!j.contains(key)) return Status::Ok();
  if (!j[key].is_number_integer()) return Status::InvalidArgument(key, "must be an integer");
  *out = static_cast<int>(std::clamp<int64_t>(j[key].get<int64_t>(), 2, 1000));
  return Status::Ok();
}

Status IsObject(const json& j, RelayKind kind) {
  if (j.is_object()) return Status::Ok();
  return Status::InvalidArgument("", fmt::format("a {} request is a JSON object", RelayKindName(kind)));
}

Status TextMap(const json& j, const char* key, std::map<std::string, std::string>* out) {
  if (!j.contains(key)) return Status::Ok();
  if (!j[key].is_object()) return Status::InvalidArgument(key, "must be an object of strings");
  for (auto it = j[key].begin(); it != j[key].end(); ++it) {
    if (!it.value().is_string())
      return Status::InvalidArgument(fmt::format("{}.{}", key, it.key()), "must be a string");
    (*out)[it.key()] = it.value().get<std::string>();
  }
  return Status::Ok();
}

Status Base64Field(const json& j, const char* key, std::string* out) {
  std::string text;
  RETURN_IF_ERROR(TextField(j, key, &text));
  auto bytes = jwt::Base64Decode(text);
  if (!bytes.ok()) return Status::InvalidArgument(key, "is not base64");
  *out = std::move(*bytes);
  return Status::Ok();
}

}  // namespace

const char* RelayKindName(RelayKind kind) {
  switch (kind) {
    case RelayKind::kJobOutput:
      return "job-output";
    case RelayKind::kTerminalOpen:
      return "terminal-open";
    case RelayKind::kTerminalSocket:
      return "terminal-socket";
    case RelayKind::kLabHttp:
      return "lab-http";
    case RelayKind::kLabSocket:
      return "lab-socket";
  }
  return "";
}

Result<RelayKind> RelayKindOf(const json& request) {
  const std::string kind = request.is_object() && request.contains(kKind) && request[kKind].is_string()
                               ? request[kKind].get<std::string>()
                               : "";
  for (RelayKind k : kRelayKinds)
    if (kind == RelayKindName(k)) return k;
  return Status::InvalidArgument(kKind,
                                 fmt::format("\"{}\" is not a kind of request this agent serves", kind.substr(0, 40)));
}

json RelayError(const Status& s) {
  const char* code = s.code() == StatusCode::kNotFound             ? "NotFound"
                     : s.code() == StatusCode::kFailedPrecondition ? "FailedPrecondition"
                                                                   : "Unavailable";
  return {{"error", {{"code", code}, {"message", s.message()}}}};
}

Status RelayAnswerError(const json& answer, const std::string& otherwise) {
  if (!answer.is_object()) return Status::Unavailable("the agent's answer is not a JSON object");
  if (!answer.contains("error")) return Status::Ok();
  const json& e = answer["error"];
  auto text = [&](const char* key, const std::string& fallback) {
    return e.is_object() && e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : fallback;
  };
  const std::string code = text("code", ""), message = text("message", otherwise);
  if (code == "NotFound") return Status::NotFound(message);
  if (code == "FailedPrecondition") return Status::FailedPrecondition(message);
  return Status::Unavailable(message);
}

json ToJson(const JobOutputRequest& r) {
  return {{kKind, RelayKindName(RelayKind::kJobOutput)},
          {"jobId", r.job_id},
          {"submitTime", r.submit_time},
          {"user", r.user},
          {"cluster", r.cluster},
          {"stream", r.stream},
          {"offset", r.offset},
          {"limit", r.limit}};
}

Result<JobOutputRequest> JobOutputRequestFromJson(const json& j) {
  auto integer = [&](const char* key, int64_t lo, int64_t hi, int64_t* out) -> Status {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < lo || j[key].get<int64_t>() > hi) {
      return Status::InvalidArgument("", fmt::format("{} must be an integer {}..{}", key, lo, hi)).WithField(key);
    }
    *out = j[key].get<int64_t>();
    return Status::Ok();
  };
  if (!j.is_object()) return Status::InvalidArgument("", "a job output request is a JSON object");
  JobOutputRequest r;
  RETURN_IF_ERROR(integer("jobId", 1, INT64_MAX, &r.job_id));
  RETURN_IF_ERROR(integer("submitTime", 0, INT64_MAX, &r.submit_time));
  RETURN_IF_ERROR(integer("offset", -1, INT64_MAX, &r.offset));
  RETURN_IF_ERROR(integer("limit", 1, kMaxJobOutputChunk, &r.limit));
  if (!j.contains("user") || !j["user"].is_string()) {
    return Status::InvalidArgument("", "user must be a string").WithField("user");
  }
  r.user = j["user"].get<std::string>();
  if (!j.contains("cluster") || !j["cluster"].is_string()) {
    return Status::InvalidArgument("", "cluster must be a string").WithField("cluster");
  }
  r.cluster = j["cluster"].get<std::string>();
  if (!j.contains("stream") || (j["stream"] != "stdout" && j["stream"] != "stderr")) {
    return Status::InvalidArgument("", "stream must be stdout or stderr").WithField("stream");
  }
  r.stream = j["stream"].get<std::string>();
  return r;
}

Result<json> JobOutputAnswer(const json& answer) {
  RETURN_IF_ERROR(RelayAnswerError(answer, "the agent could not read the output"));
  for (const char* key : {"size", "offset", "nextOffset"}) {
    if (!answer.contains(key) || !answer[key].is_number_integer()) {
      return Status::Unavailable(fmt::format("the agent's answer has no integer {}", key));
    }
  }
  for (const char* key : {"text", "path", "state", "stream"}) {
    if (!answer.contains(key) || !answer[key].is_string()) {
      return Status::Unavailable(fmt::format("the agent's answer has no string {}", key));
    }
  }
  for (const char* key : {"sameFile", "written"}) {
    if (answer.contains(key) && !answer[key].is_boolean()) {
      return Status::Unavailable(fmt::format("the agent's answer has a {} that is not true or false", key));
    }
  }
  // Only what the answer is defined to hold goes on to the caller.
  return json{{"path", answer["path"]},
              {"stream", answer["stream"]},
              {"state", answer["state"]},
              {"sameFile", answer.value("sameFile", false)},
              {"written", answer.value("written", true)},
              {"size", answer["size"]},
              {"offset", answer["offset"]},
              {"nextOffset", answer["nextOffset"]},
              {"text", answer["text"]}};
}

json WithTunnel(json request, const std::string& tunnel) {
  request["tunnel"] = tunnel;
  return request;
}

json ToJson(const TerminalOpen& m) {
  return {{kKind, RelayKindName(RelayKind::kTerminalOpen)},
          {"session", m.session},
          {"workspace", m.workspace},
          {"user", m.user},
          {"cols", m.cols},
          {"rows", m.rows}};
}

json ToJson(const TerminalSocket& m) {
  json j = {{kKind, RelayKindName(RelayKind::kTerminalSocket)},
            {"workspace", m.workspace},
            {"user", m.user},
            {"cols", m.cols},
            {"rows", m.rows}};
  if (!m.tunnel.empty()) j["tunnel"] = m.tunnel;
  return j;
}

Result<TerminalOpen> TerminalOpenFromJson(const json& j) {
  RETURN_IF_ERROR(IsObject(j, RelayKind::kTerminalOpen));
  TerminalOpen m;
  RETURN_IF_ERROR(TextField(j, "session", &m.session));
  RETURN_IF_ERROR(TextField(j, "workspace", &m.workspace));
  RETURN_IF_ERROR(TextField(j, "user", &m.user));
  RETURN_IF_ERROR(SizeField(j, "cols", &m.cols));
  RETURN_IF_ERROR(SizeField(j, "rows", &m.rows));
  return m;
}

Result<TerminalSocket> TerminalSocketFromJson(const json& j) {
  RETURN_IF_ERROR(IsObject(j, RelayKind::kTerminalSocket));
  TerminalSocket m;
  RETURN_IF_ERROR(TextField(j, "tunnel", &m.tunnel));
  RETURN_IF_ERROR(TextField(j, "workspace", &m.workspace));
  RETURN_IF_ERROR(TextField(j, "user", &m.user));
  RETURN_IF_ERROR(SizeField(j, "cols", &m.cols));
  RETURN_IF_ERROR(SizeField(j, "rows", &m.rows));
  return m;
}

std::optional<TerminalResize> TerminalResizeFromJson(const json& event) {
  if (!event.is_object() || !event.contains("resize") || !event["resize"].is_object()) return std::nullopt;
  const json& r = event["resize"];
  if (!r.contains("cols") || !r.contains("rows")) return std::nullopt;
  TerminalResize size;
  if (!SizeField(r, "cols", &size.cols).ok() || !SizeField(r, "rows", &size.rows).ok()) return std::nullopt;
  return size;
}

json ToJson(const LabHttp& m) {
  return {{kKind, RelayKindName(RelayKind::kLabHttp)},
          {"workspace", m.workspace},
          {"project", m.project},
          {"user", m.user},
          {"target", m.target},
          {"method", m.method},
          {"headers", m.headers},
          {"body", jwt::Base64Encode(m.body)}};
}

json ToJson(const LabHttpAnswer& m) {
  return {{"status", m.status}, {"headers", m.headers}, {"body", jwt::Base64Encode(m.body)}};
}

json ToJson(const LabSocket& m) {
  json j = {{kKind, RelayKindName(RelayKind::kLabSocket)},
            {"workspace", m.workspace},
            {"project", m.project},
            {"user", m.user},
            {"target", m.target}};
  if (!m.tunnel.empty()) j["tunnel"] = m.tunnel;
  return j;
}

Result<LabHttp> LabHttpFromJson(const json& j) {
  RETURN_IF_ERROR(IsObject(j, RelayKind::kLabHttp));
  LabHttp m;
  RETURN_IF_ERROR(TextField(j, "workspace", &m.workspace));
  RETURN_IF_ERROR(TextField(j, "project", &m.project));
  RETURN_IF_ERROR(TextField(j, "user", &m.user));
  RETURN_IF_ERROR(TextField(j, "target", &m.target));
  RETURN_IF_ERROR(TextField(j, "method", &m.method));
  RETURN_IF_ERROR(TextMap(j, "headers", &m.headers));
  RETURN_IF_ERROR(Base64Field(j, "body", &m.body));
  return m;
}

Result<LabHttpAnswer> LabHttpAnswerFromJson(const json& j) {
  const bool well_formed = j.is_object() && j.contains("status") && j["status"].is_number_integer() &&
                           j.contains("headers") && j["headers"].is_object() && j.contains("body") &&
                           j["body"].is_string();
  LabHttpAnswer m;
  if (well_formed && TextMap(j, "headers", &m.headers).ok() && Base64Field(j, "body", &m.body).ok()) {
    const int64_t status = j["status"].get<int64_t>();
    m.status = static_cast<int>(std::clamp<int64_t>(status, 0, 1000));
    if (status >= 100 && status <= 599) return m;
  }
  return Status::Unavailable("the agent's answer from JupyterLab is malformed");
}

Result<LabSocket> LabSocketFromJson(const json& j) {
  RETURN_IF_ERROR(IsObject(j, RelayKind::kLabSocket));
  LabSocket m;
  RETURN_IF_ERROR(TextField(j, "tunnel", &m.tunnel));
  RETURN_IF_ERROR(TextField(j, "workspace", &m.workspace));
  RETURN_IF_ERROR(TextField(j, "project", &m.project));
  RETURN_IF_ERROR(TextField(j, "user", &m.user));
  RETURN_IF_ERROR(TextField(j, "target", &m.target));
  return m;
}

}  // namespace hpc::cp
