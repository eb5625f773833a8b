#include "slurm/controllers.h"

#include <sstream>

#include "slurm/config.h"

namespace hpc::slurm {

std::string HeartbeatPath() { return std::string(kStateSaveDir) + "/heartbeat"; }

std::vector<std::string> ReadHeartbeatCommand() { return {"od", "-An", "-v", "-tx1", HeartbeatPath()}; }

std::optional<Heartbeat> ParseHeartbeat(const std::string& od_output) {
  std::istringstream in(od_output);
  std::vector<uint64_t> bytes;
  std::string token;
  while (in >> token) {
    if (token.size() != 2 || token.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
    bytes.push_back(std::stoul(token, nullptr, 16));
  }
  if (bytes.size() != 16) return std::nullopt;
  auto be64 = [&](size_t at) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v = (v << 8) | bytes[at + i];
    return v;
  };
  const uint64_t written = be64(0), controller = be64(8);
  // A time past 2^62 or an index past Slurm's limit is not a heartbeat.
  if (written > (uint64_t{1} << 62) || controller > 64) return std::nullopt;
  return Heartbeat{static_cast<int64_t>(written), static_cast<int64_t>(controller)};
}

}  // namespace hpc::slurm
