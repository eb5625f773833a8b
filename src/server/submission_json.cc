#include "server/submission_json.h"

namespace hpc::cp {

using nlohmann::json;

json SubmissionJson(const Submission& x) {
  return {{"id", x.id},
          {"dataPlane", x.data_plane},
          {"project", x.project},
          {"workspace", x.workspace},
          {"user", x.user},
          {"state", x.state},
          {"cluster", x.cluster},
          {"jobId", x.job_id},
          {"submitTime", x.submit_time},
          {"error", x.error},
          {"createdAt", x.created_at}};
}

}  // namespace hpc::cp
