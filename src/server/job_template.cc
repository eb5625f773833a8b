#include "server/job_template.h"

#include <map>
#include <regex>

#include <fmt/format.h>

namespace hpc::cp {
using nlohmann::json;

Result<std::vector<std::string>> SbatchArgs(const json& options) {
  static const std::map<std::string, std::string> allowed = {
      {"jobName", "--job-name"}, {"nodes", "--nodes"}, {"ntasks", "--ntasks"}, {"cpusPerTask", "--cpus-per-task"},
      {"mem", "--mem"},          {"time", "--time"},   {"array", "--array"},   {"output", "--output"},
      {"error", "--error"}};
  static const std::regex value("^[A-Za-z0-9_.:/%=,+@-]{1,200}$");
  if (!options.is_object()) return Status::InvalidArgument("options", "must be an object");
  std::vector<std::string> out;
  for (auto it = options.begin(); it != options.end(); ++it) {
    auto a = allowed.find(it.key());
    if (a == allowed.end()) return Status::InvalidArgument("options." + it.key(), "unknown option");
    std::string v = it.value().is_string()           ? it.value().get<std::string>()
                    : it.value().is_number_integer() ? std::to_string(it.value().get<int64_t>())
                                                     : "";
    if (!std::regex_match(v, value)) {
      return Status::InvalidArgument("options." + it.key(), "must be one token of letters, digits and _.:/%=,+@-");
    }
    out.push_back(a->second + "=" + v);
  }
  return out;
}

Status ValidateScript(const std::string& script, size_t max_bytes) {
  if (script.rfind("#!", 0) != 0) return Status::InvalidArgument("script", "must start with #!");
  if (script.size() > max_bytes) {
    return Status::InvalidArgument(
        "script", fmt::format("must be at most {} KiB (got {} bytes)", max_bytes / 1024, script.size()));
  }
  // A NUL would cut the script short where the data plane writes it for sbatch.
  if (script.find('\0') != std::string::npos) return Status::InvalidArgument("script", "must not contain NUL");
  return Status::Ok();
}

Result<JobTemplate> JobTemplateFromJson(const std::string& project, const std::string& name, const json& body) {
  if (!body.is_object()) return Status::InvalidArgument("", "the body must be a JSON object");
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "description" && it.key() != "script" && it.key() != "options" && it.key() != "name") {
      return Status::InvalidArgument(it.key(), "unknown field (known: description, script, options)");
    }
  }
  JobTemplate t;
  t.project = project;
  t.name = name;
  // A name in the body, if any, must be the one in the path: a PUT never renames.
  if (body.contains("name") && (!body["name"].is_string() || body["name"].get<std::string>() != name)) {
    return Status::InvalidArgument("name", fmt::format("must be the template's name in the path ({})", name));
  }
  if (body.contains("description")) {
    if (!body["description"].is_string()) return Status::InvalidArgument("description", "must be a string");
    t.description = body["description"];
    if (t.description.size() > 500) return Status::InvalidArgument("description", "must be at most 500 characters");
    for (unsigned char c : t.description) {
      if (c < 0x20) return Status::InvalidArgument("description", "must be one line without control characters");
    }
  }
  if (!body.contains("script") || !body["script"].is_string()) {
    return Status::InvalidArgument("script", "is required (a string starting with #!)");
  }
  t.script = body["script"];
  RETURN_IF_ERROR(ValidateScript(t.script, kMaxTemplateScriptBytes));
  if (body.contains("options")) {
    RETURN_IF_ERROR(SbatchArgs(body["options"]).status());
    t.options = body["options"];
  }
  return t;
}

json ToJson(const JobTemplate& t) {
  return {{"name", t.name},       {"description", t.description}, {"script", t.script},
          {"options", t.options}, {"updatedAt", t.updated_at},    {"updatedBy", t.updated_by}};
}

}  // namespace hpc::cp
