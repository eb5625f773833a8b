// Batch job templates: a named script with sbatch options that an admin defines for a project,
// and that the project's members start their submissions from (the console's Run form, or
// `template` in POST /projects/{p}/jobs). The options are the API's whitelisted sbatch options,
// checked here with the same rules as a submission's, so a template never holds one that a
// submission would be refused for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::cp {

// A project holds at most this many templates; a script at most kMaxTemplateScriptBytes.
inline constexpr size_t kMaxTemplatesPerProject = 50;
inline constexpr size_t kMaxTemplateScriptBytes = 64 * 1024;
// A submitted script (from a template or not) at most this long.
inline constexpr size_t kMaxScriptBytes = 1 << 20;

struct JobTemplate {
  std::string project;
  std::string name;  // a ValidName
  std::string description;
  std::string script;                                 // starts with #!
  nlohmann::json options = nlohmann::json::object();  // option name -> value, validated
  int64_t updated_at = 0;
  std::string updated_by;
};

// The sbatch arguments (e.g. --job-name=x) for an options object of the API: only whitelisted
// options, each value one token of letters, digits and _.:/%=,+@-. Errors name "options.<key>".
Result<std::vector<std::string>> SbatchArgs(const nlohmann::json& options);

// A batch script the API runs: it starts with #! and is at most `max_bytes` long. Errors name
// "script".
Status ValidateScript(const std::string& script, size_t max_bytes = kMaxScriptBytes);

// A template from a PUT body {description?, script, options?}; errors read "field: why".
Result<JobTemplate> JobTemplateFromJson(const std::string& project, const std::string& name,
                                        const nlohmann::json& body);
// As the API shows it: {name, description, script, options, updatedAt, updatedBy}.
nlohmann::json ToJson(const JobTemplate& t);

}  // namespace hpc::cp
