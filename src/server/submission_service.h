// Submitting a batch job through the API (POST /projects/{p}/jobs): every check a submission
// must pass, in order, before anything is stored: the EnableHPCJobs flag, the body's fields, a
// template's script and options (the body's options win), the workspace (a control-plane one
// must be the caller's, running, in the project), the script and options, and a data plane that
// is Healthy with Slurm. The route only authenticates, calls Submit and answers; the codes of
// the Status it gets say what to answer (400 input, 403 flag off, 409 workspace or data plane
// not fit, 503 store away).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/store.h"

namespace hpc::cp {

inline constexpr const char* kFlagHpcJobs = "EnableHPCJobs";

// Whether data plane `name` may be given Slurm work: Healthy, reporting slurmctld, and heard
// from within `unreachable_after` seconds of `now` (409 naming dataPlane otherwise, 503 when the
// store does not answer).
Status SlurmDataPlaneReady(DataPlaneStore* store, const std::string& name, int unreachable_after, int64_t now);

class SubmissionService {
 public:
  struct Stores {
    FlagStore* flags;
    ProjectStore* templates;
    WorkspaceStore* workspaces;
    DataPlaneStore* data_planes;
    DispatchStore* submissions;
  };
  struct Options {
    int unreachable_after_seconds = 15;
    std::function<int64_t()> now;             // unix seconds
    std::function<Result<std::string>()> id;  // a new submission's id
  };
  SubmissionService(Stores stores, Options options);

  // Whether submitting through the API is on (the flag EnableHPCJobs): 403 when it is off. The
  // route asks before it reads the body; Submit asks again.
  Status Enabled();

  // The submission `body` asks for, by `user` in `project`, stored as Pending for its data
  // plane's agent; `template_used` receives the template's name when one was used.
  Result<Submission> Submit(const std::string& user, const std::string& project, const nlohmann::json& body,
                            std::string* template_used);

 private:
  // The script and options: the body's, over the named template's.
  Status ApplyTemplate(const std::string& project, const nlohmann::json& body, std::string* script,
                       nlohmann::json* options, std::string* template_used);
  // The data plane of the submission's workspace.
  Status ResolveWorkspace(const std::string& project, Submission* sub);

  Stores stores_;
  Options options_;
};

}  // namespace hpc::cp
