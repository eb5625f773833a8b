// A job's output (stdout or stderr) read for the console, as the agent does it on its data plane
// when the control plane relays a "job-output" request (messages/relay_messages.h): where the
// file is, as Slurm says (slurm/job_files.h: slurmctld while it knows the job, slurmdbd after,
// Slurm 23.02 and later); then one piece of it, read
// as the job's own user (never root) on the job's node while that worker runs, else on a login
// pod. Whatever Slurm or the file system say is answered as a clear error, not guessed around.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/data_plane_access.h"
#include "common/result.h"
#include "messages/relay_messages.h"
#include "slurm/job_files.h"

namespace hpc::cp {

// The command that prints "SIZE START\n" and then up to `limit` bytes of `path` from START
// (`offset`, or the last `limit` bytes when it is negative). It exits 3 when the file does not
// exist and 4 when it is not a regular file its user may read.
std::vector<std::string> ReadFileCommand(const std::string& path, int64_t offset, int64_t limit);
struct FileChunk {
  int64_t size = 0;
  int64_t offset = 0;
  std::string data;
};
Result<FileChunk> ParseReadFileOutput(const std::string& out);
// How many bytes at the end of `data` begin a UTF-8 character that is not complete in it (0-3):
// they are read again next time rather than shown broken.
size_t IncompleteUtf8Tail(const std::string& data);

// The answer to a request: {"path", "size", "offset", "nextOffset", "text", "state", ...} or
// {"error": {"code", "message"}} with code NotFound, FailedPrecondition or Unavailable.
nlohmann::json ReadJobOutput(DataPlaneAccess* dp, const JobOutputRequest& r);
}  // namespace hpc::cp
