// A project's batch job templates (PUT/DELETE /projects/{p}/templates/{name}, admins): checked
// with the rules a submission is checked with, only for a configured project, at most
// kMaxTemplatesPerProject a project; replacing one keeps its name. The routes authenticate, call
// the service, audit and answer by the Status's code.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/job_template.h"
#include "server/store.h"

namespace hpc::cp {

class TemplateService {
 public:
  TemplateService(ProjectStore* store, std::function<int64_t()> now);

  struct Saved {
    JobTemplate job_template;
    bool replaced = false;  // an existing template of that name was replaced
  };
  // Creates or replaces template `name` of `project` from `body`, written by `author`.
  Result<Saved> Put(const std::string& author, const std::string& project, const std::string& name,
                    const nlohmann::json& body);
  // NotFound when the project has no template of that name.
  Status Delete(const std::string& project, const std::string& name);

 private:
  ProjectStore* store_;
  std::function<int64_t()> now_;
};

}  // namespace hpc::cp
