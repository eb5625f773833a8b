#include "server/template_service.h"

#include <algorithm>

#include <fmt/format.h>

#include "server/submission_service.h"

namespace hpc::cp {

TemplateService::TemplateService(ProjectStore* store, std::function<int64_t()> now)
    : store_(store), now_(std::move(now)) {}

Result<TemplateService::Saved> TemplateService::Put(const std::string& author, const std::string& project,
                                                    const std::string& name, const nlohmann::json& body) {
  Saved out;
  ASSIGN_OR_RETURN(out.job_template, JobTemplateFromJson(project, name, body));
  // Templates belong to a configured project: a typo in the path is not a new project.
  auto config = store_->GetProject(project);
  if (!config.ok()) return StoreUnavailable(config.status());
  if (!*config) {
    return Status::NotFound(
        fmt::format("project {} is not configured (PUT /api/v1/projects/{} first)", project, project));
  }
  auto existing = store_->ProjectTemplates(project);
  if (!existing.ok()) return StoreUnavailable(existing.status());
  out.replaced = std::any_of(existing->begin(), existing->end(), [&](const JobTemplate& e) { return e.name == name; });
  if (!out.replaced && existing->size() >= kMaxTemplatesPerProject) {
    return Status::Conflict(
        fmt::format("project {} has {} templates already, the most it may hold", project, kMaxTemplatesPerProject));
  }
  out.job_template.updated_at = now_();
  out.job_template.updated_by = author;
  if (Status st = store_->PutTemplate(out.job_template); !st.ok()) return StoreUnavailable(st);
  return out;
}

Status TemplateService::Delete(const std::string& project, const std::string& name) {
  auto found = store_->DeleteTemplate(project, name);
  if (!found.ok()) return StoreUnavailable(found.status());
  if (!*found) return Status::NotFound(fmt::format("no template {} in project {}", name, project));
  return Status::Ok();
}

}  // namespace hpc::cp
