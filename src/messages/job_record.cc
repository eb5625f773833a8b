#include "messages/job_record.h"

#include <string_view>

#include <optional>
#include <type_traits>

namespace hpc::cp {
using nlohmann::json;

json ToJson(const JobRecord& r) {
  return {{"dataPlane", r.data_plane},
          {"cluster", r.cluster},
          {"jobId", r.job_id},
          {"submitTime", r.submit_time},
          {"name", r.name},
          {"user", r.user},
          {"project", r.project},
          {"partition", r.partition},
          {"state", r.state},
          {"exitCode", r.exit_code},
          {"startTime", r.start_time},
          {"endTime", r.end_time},
          {"elapsedSeconds", r.elapsed_seconds},
          {"cpuSeconds", r.cpu_seconds},
          {"maxRssKiB", r.max_rss_kib},
          {"nodes", r.nodes},
          {"nodeList", r.node_list},
          {"tres", r.tres},
          {"source", r.source},
          {"arrayJobId", r.array_job_id},
          {"arrayTaskId", r.array_task}};
}

namespace {

// A field that is missing or of the wrong type, thrown inside JobRecordFromJson only and
// returned from it as an InvalidArgument Status.
struct BadField {
  std::string field;
  std::string why;
};

// Reads one field, naming it when it is missing or of the wrong type.
template <typename T>
T Field(const json& j, const char* name, std::optional<T> fallback) {
  if (!j.contains(name) || j[name].is_null()) {
    if (fallback) return *fallback;
    throw BadField{name, "required"};
  }
  const json& v = j[name];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw BadField{name, "must be a string"};
  } else {
    if (!v.is_number_integer()) throw BadField{name, "must be an integer"};
  }
  return v.get<T>();
}

}  // namespace

Result<JobRecord> JobRecordFromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("", "must be an object");
  using S = std::string;
  const std::optional<S> empty = S();
  const std::optional<int64_t> zero = int64_t{0};
  JobRecord r;
  try {
    r.data_plane = Field<S>(j, "dataPlane", empty);
    r.cluster = Field<S>(j, "cluster", std::nullopt);
    r.job_id = Field<int64_t>(j, "jobId", std::nullopt);
    r.submit_time = Field<int64_t>(j, "submitTime", std::nullopt);
    r.name = Field<S>(j, "name", empty);
    r.user = Field<S>(j, "user", std::nullopt);
    r.project = Field<S>(j, "project", empty);
    r.partition = Field<S>(j, "partition", empty);
    r.state = Field<S>(j, "state", std::nullopt);
    r.exit_code = Field<S>(j, "exitCode", empty);
    r.start_time = Field<int64_t>(j, "startTime", zero);
    r.end_time = Field<int64_t>(j, "endTime", zero);
    r.elapsed_seconds = Field<int64_t>(j, "elapsedSeconds", zero);
    r.cpu_seconds = Field<int64_t>(j, "cpuSeconds", zero);
    r.max_rss_kib = Field<int64_t>(j, "maxRssKiB", zero);
    r.nodes = static_cast<int>(Field<int64_t>(j, "nodes", zero));
    r.node_list = Field<S>(j, "nodeList", empty);
    r.tres = Field<S>(j, "tres", empty);
    r.source = Field<S>(j, "source", S("terminal"));
    r.array_job_id = Field<int64_t>(j, "arrayJobId", zero);
    r.array_task = Field<S>(j, "arrayTaskId", empty);
  } catch (const BadField& e) {
    return Status::InvalidArgument(e.field, e.why);
  }
  if (r.source != "terminal" && r.source != "api") return Status::InvalidArgument("source", "must be terminal or api");
  if (r.job_id <= 0) return Status::InvalidArgument("jobId", "must be positive");
  if (r.array_job_id < 0) return Status::InvalidArgument("arrayJobId", "must not be negative");
  if (r.array_task.size() > 64) return Status::InvalidArgument("arrayTaskId", "must be at most 64 characters");
  return r;
}

namespace {
// A text field for spreadsheets: one that starts like a formula (=, +, -, @, tab, CR) gets a
// leading apostrophe so that opening the export never runs what a user put in a job name.
std::string Text(const std::string& v) {
  if (!v.empty() && std::string_view("=+-@\t\r").find(v[0]) != std::string_view::npos) return "'" + v;
  return v;
}

std::string Quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string CsvHeader() {
  return "data_plane,cluster,job_id,submit_time,name,user,project,partition,state,exit_code,start_time,end_time,"
         "elapsed_seconds,cpu_seconds,max_rss_kib,nodes,node_list,tres,source,array_job_id,array_task\n";
}

std::string ToCsvLine(const JobRecord& r) {
  std::string out;
  auto add = [&](const std::string& v) { out += (out.empty() ? "" : ",") + Quote(v); };
  add(r.data_plane), add(r.cluster), add(std::to_string(r.job_id)), add(std::to_string(r.submit_time));
  add(Text(r.name)), add(r.user), add(r.project), add(r.partition), add(r.state), add(Text(r.exit_code));
  add(std::to_string(r.start_time)), add(std::to_string(r.end_time)), add(std::to_string(r.elapsed_seconds));
  add(std::to_string(r.cpu_seconds)), add(std::to_string(r.max_rss_kib)), add(std::to_string(r.nodes));
  add(Text(r.node_list)), add(Text(r.tres)), add(r.source);
  add(std::to_string(r.array_job_id)), add(Text(r.array_task));
  return out + "\n";
}

}  // namespace hpc::cp
