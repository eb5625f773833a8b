#include "server/submission_service.h"

#include <fmt/format.h>

#include "common/jwt.h"
#include "server/http_api.h"
#include "server/job_template.h"

namespace hpc::cp {
using nlohmann::json;

Status SlurmDataPlaneReady(DataPlaneStore* store, const std::string& name, int unreachable_after, int64_t now) {
  auto dps = store->DataPlanes();
  if (!dps.ok()) return StoreUnavailable(dps.status());
  for (const auto& dp : *dps) {
    if (dp.name == name && dp.OffersSlurm() && now - dp.last_report <= unreachable_after) return Status::Ok();
  }
  return Status::Conflict("data plane " + name + " is not Healthy with Slurm").WithField("dataPlane");
}

namespace {

Result<std::string> NewSubmissionId() {
  ASSIGN_OR_RETURN(std::string bytes, jwt::RandomBytes(12));
  return jwt::Sha256Hex(bytes).substr(0, 24);
}

// The body's shape: string fields where given, a non-empty workspace.
Status CheckBody(const json& body) {
  for (const char* field : {"dataPlane", "template", "script"}) {
    if (body.contains(field) && !body[field].is_string()) {
      return Status::InvalidArgument("", std::string(field) + " must be a string").WithField(field);
    }
  }
  if (!body.contains("workspace") || !body["workspace"].is_string() || body["workspace"].get<std::string>().empty()) {
    return Status::InvalidArgument("", "workspace is required (a non-empty string)").WithField("workspace");
  }
  return Status::Ok();
}

}  // namespace

SubmissionService::SubmissionService(Stores stores, Options options) : stores_(stores), options_(std::move(options)) {
  if (!options_.now) options_.now = jwt::UnixNow;
  if (!options_.id) options_.id = NewSubmissionId;
}

Status SubmissionService::ApplyTemplate(const std::string& project, const json& body, std::string* script,
                                        json* options, std::string* template_used) {
  *options = body.value("options", json::object());
  *script = body.value("script", "");
  const std::string name = body.value("template", "");
  *template_used = name;
  if (name.empty()) return Status::Ok();
  if (!http::ValidName(name))
    return Status::InvalidArgument("", "template must be a template name").WithField("template");
  auto t = stores_.templates->GetTemplate(project, name);
  if (!t.ok()) return StoreUnavailable(t.status());
  if (!*t) {
    return Status::InvalidArgument("", fmt::format("no template {} in project {}", name, project))
        .WithField("template");
  }
  if (script->empty()) *script = (*t)->script;
  if (!options->is_object()) return Status::InvalidArgument("", "options must be an object").WithField("options");
  json merged = (*t)->options;
  merged.update(*options);
  *options = merged;
  return Status::Ok();
}

// A workspace the control plane launched names its data plane, and must be the caller's and
// running; one launched on a data plane itself needs dataPlane and is checked there.
Status SubmissionService::ResolveWorkspace(const std::string& project, Submission* sub) {
  if (!http::ValidName(sub->workspace)) {
    return Status::InvalidArgument("", "workspace must be a workspace id").WithField("workspace");
  }
  auto launched = stores_.workspaces->GetWorkspace(sub->workspace);
  if (!launched.ok()) return StoreUnavailable(launched.status());
  if (*launched) {
    const WorkspaceRecord& w = **launched;
    if (w.project != project || w.user != sub->user || w.desired != "Running" ||
        (!sub->data_plane.empty() && sub->data_plane != w.data_plane)) {
      return Status::Conflict(fmt::format("workspace {} is not a running workspace of {} in project {}{}", w.id,
                                          sub->user, project,
                                          sub->data_plane.empty() ? "" : " on data plane " + sub->data_plane))
          .WithField("workspace");
    }
    sub->data_plane = w.data_plane;
  }
  if (sub->data_plane.empty()) {
    return Status::InvalidArgument("", "dataPlane is required for a workspace the control plane did not launch")
        .WithField("dataPlane");
  }
  return Status::Ok();
}

Status SubmissionService::Enabled() {
  auto flags = stores_.flags->Flags();
  if (!flags.ok()) return StoreUnavailable(flags.status());
  if (!flags->count(kFlagHpcJobs) || !flags->at(kFlagHpcJobs)) {
    return Status::PermissionDenied(
        fmt::format("submitting HPC jobs through the API is disabled: flag {} is off", kFlagHpcJobs));
  }
  return Status::Ok();
}

Result<Submission> SubmissionService::Submit(const std::string& user, const std::string& project, const json& body,
                                             std::string* template_used) {
  RETURN_IF_ERROR(Enabled());
  RETURN_IF_ERROR(CheckBody(body));
  std::string script;
  json options;
  RETURN_IF_ERROR(ApplyTemplate(project, body, &script, &options, template_used));
  if (script.empty()) {
    return Status::InvalidArgument("", "script is required (a non-empty string) unless a template gives it")
        .WithField("script");
  }
  Submission sub;
  sub.data_plane = body.value("dataPlane", "");
  sub.workspace = body["workspace"];
  sub.script = script;
  sub.project = project;
  sub.user = user;
  RETURN_IF_ERROR(ResolveWorkspace(project, &sub));
  RETURN_IF_ERROR(ValidateScript(sub.script));
  ASSIGN_OR_RETURN(sub.sbatch_args, SbatchArgs(options));
  // Only data planes that are Healthy and report Slurm are offered Slurm work.
  RETURN_IF_ERROR(
      SlurmDataPlaneReady(stores_.data_planes, sub.data_plane, options_.unreachable_after_seconds, options_.now()));
  auto id = options_.id();
  if (!id.ok()) return StoreUnavailable(id.status());
  sub.id = *id;
  sub.created_at = options_.now();
  if (Status s = stores_.submissions->PutSubmission(sub); !s.ok()) return StoreUnavailable(s);
  return sub;
}

}  // namespace hpc::cp
