#include "agent/job_output.h"

#include <sstream>

#include <fmt/format.h>

#include "api/validation.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

std::optional<int64_t> ParseInt(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

Status NotYours(const JobOutputRequest& r, const slurm::JobFiles& f) {
  return Status::NotFound(
      fmt::format("job {} in Slurm is {}'s, not {}'s: the record is of another job", r.job_id, f.user, r.user));
}

// Where the job's files are: slurmctld first (it knows running and recently ended jobs), then
// slurmdbd.
Result<slurm::JobFiles> LocateJobFiles(DataPlaneAccess* dp, const JobOutputRequest& r) {
  const std::string id = std::to_string(r.job_id);
  auto shown = dp->InController(slurm::ScontrolJobCommand(r.job_id));
  if (shown.ok()) {
    auto f = slurm::ParseScontrolJob(*shown, r.job_id);
    if (f && f->submit_time == r.submit_time) return *f;
  } else if (shown.status().message().find("Invalid job id") == std::string::npos) {
    return Status::Unavailable(fmt::format("slurmctld did not answer about job {}: {}", id, shown.status().message()));
  }
  auto acct = dp->InController(slurm::SacctJobFilesCommand(r.job_id));
  if (!acct.ok()) {
    const std::string m = acct.status().message();
    if (m.find("expand-patterns") != std::string::npos || m.find("StdOut") != std::string::npos) {
      return Status::NotFound(fmt::format(
          "job {} has left slurmctld, and this Slurm release's accounting keeps no output paths (sacct has them from "
          "Slurm 23.02 on)",
          id));
    }
    return Status::Unavailable(fmt::format("slurmdbd did not answer about job {}: {}", id, m));
  }
  auto f = slurm::ParseSacctJob(*acct, r.job_id, r.submit_time);
  if (!f) return Status::NotFound(fmt::format("Slurm has no job {} submitted at {}", id, r.submit_time));
  return *f;
}

// Reads the piece in the first pod where the file exists: the job's worker while it runs (its
// /tmp is there), then login pods, which mount the datasets the job may have written to.
Result<ProcessResult> ReadWhereItIs(DataPlaneAccess* dp, const std::string& node, const JobOutputRequest& r,
                                    const std::string& path) {
  ASSIGN_OR_RETURN(auto pods, dp->PodsForJobFiles(node, r.user));
  if (pods.empty()) {
    return Status::Unavailable(
        fmt::format("no pod of cluster {} runs to read {}'s files in: the job's node {} is gone "
                    "and no login pod runs",
                    dp->ClusterName(), r.user, node.empty() ? "(none)" : node));
  }
  ProcessResult run;
  for (const auto& pod : pods) {
    ASSIGN_OR_RETURN(run, dp->AsUserInPod(pod, r.user, ReadFileCommand(path, r.offset, r.limit)));
    if (run.exit_code != 3) break;  // found (or unreadable): no other pod has a better answer
  }
  return run;
}

Result<json> ReadPiece(DataPlaneAccess* dp, const JobOutputRequest& r) {
  if (Status s = api::ValidateUserName(r.user); !s.ok() || r.user == "root") {
    return Status::FailedPrecondition(
        fmt::format("job {}'s user \"{}\" is not one whose files are read", r.job_id, r.user.substr(0, 40)));
  }
  if (r.cluster != dp->ClusterName()) {
    return Status::NotFound(
        fmt::format("job {} ran on cluster {}, which this data plane no longer runs", r.job_id, r.cluster));
  }
  ASSIGN_OR_RETURN(slurm::JobFiles f, LocateJobFiles(dp, r));
  if (f.user != r.user) return NotYours(r, f);
  const bool err = r.stream == "stderr";
  const std::string path = err && !f.stderr_path.empty() ? f.stderr_path : f.stdout_path;
  const bool same_file = err && (f.stderr_path.empty() || f.stderr_path == f.stdout_path);
  if (f.state == "PENDING") {
    // Not an error: the page follows a queued job and shows its output once it starts.
    return json{{"path", path}, {"stream", r.stream}, {"sameFile", same_file}, {"state", f.state}, {"written", false},
                {"size", 0},    {"offset", 0},        {"nextOffset", 0},       {"text", ""}};
  }
  if (path.empty() || path[0] != '/') {
    return Status::NotFound(fmt::format(
        "job {} has no {} file: its output went to the terminal that ran it (srun or salloc)", r.job_id, r.stream));
  }
  ASSIGN_OR_RETURN(ProcessResult run, ReadWhereItIs(dp, f.node, r, path));
  if (run.exit_code == 3) {
    return Status::NotFound(
        fmt::format("job {}'s {} file {} does not exist (any more), or {} cannot reach its directory", r.job_id,
                    r.stream, path, r.user));
  }
  if (run.exit_code == 4) {
    return Status::FailedPrecondition(fmt::format("{} is not a regular file {} may read", path, r.user));
  }
  if (!run.ok()) {
    return Status::Unavailable(fmt::format("reading {}: exit {}: {}", path, run.exit_code, run.err.substr(0, 300)));
  }
  ASSIGN_OR_RETURN(FileChunk chunk, ParseReadFileOutput(run.out));
  const bool running = f.state == "RUNNING" || f.state == "COMPLETING" || f.state == "SUSPENDED";
  const bool at_end = chunk.offset + static_cast<int64_t>(chunk.data.size()) >= chunk.size;
  if (running || !at_end) chunk.data.resize(chunk.data.size() - IncompleteUtf8Tail(chunk.data));
  return json{{"path", path},           {"stream", r.stream},
              {"sameFile", same_file},  {"state", f.state},
              {"written", true},        {"size", chunk.size},
              {"offset", chunk.offset}, {"nextOffset", chunk.offset + static_cast<int64_t>(chunk.data.size())},
              {"text", chunk.data}};
}

}  // namespace

std::vector<std::string> ReadFileCommand(const std::string& path, int64_t offset, int64_t limit) {
  // The path is an argument, never part of the script.
  static const char* kScript =
      "f=$1 off=$2 lim=$3\n"
      "[ -e \"$f\" ] || exit 3\n"
      "{ [ -f \"$f\" ] && [ -r \"$f\" ]; } || exit 4\n"
      "size=$(stat -L -c %s -- \"$f\") || exit 4\n"
      "if [ \"$off\" -lt 0 ]; then off=$((size - lim)); [ \"$off\" -lt 0 ] && off=0; fi\n"
      "echo \"$size $off\"\n"
      "[ \"$off\" -lt \"$size\" ] || exit 0\n"
      "exec dd if=\"$f\" bs=65536 skip=\"$off\" count=\"$lim\" iflag=skip_bytes,count_bytes status=none\n";
  return {"sh", "-c", kScript, "read-job-output", path, std::to_string(offset), std::to_string(limit)};
}

Result<FileChunk> ParseReadFileOutput(const std::string& out) {
  const size_t nl = out.find('\n');
  const size_t space = out.find(' ');
  if (nl == std::string::npos || space == std::string::npos || space > nl) {
    return Status::Unavailable("reading the file: no size line in the answer");
  }
  auto size = ParseInt(out.substr(0, space));
  auto offset = ParseInt(out.substr(space + 1, nl - space - 1));
  if (!size || !offset) return Status::Unavailable("reading the file: a malformed size line");
  return FileChunk{*size, *offset, out.substr(nl + 1)};
}

size_t IncompleteUtf8Tail(const std::string& data) {
  // Look back over at most 3 continuation bytes to the lead byte of the last character.
  const size_t n = data.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(data[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

json ReadJobOutput(DataPlaneAccess* dp, const JobOutputRequest& r) {
  auto piece = ReadPiece(dp, r);
  return piece.ok() ? *piece : RelayError(piece.status());
}

}  // namespace hpc::cp
