// SlurmReader over slurmrestd's OpenAPI (v0.0.38 for Slurm 22.05, v0.0.42 from 23.11 on, Release::RestApiPath())
// with a JWT for the Slurm user; the parsers read both shapes of Slurm's JSON.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "slurm/slurm_client.h"

namespace hpc::slurm {

class RestClient : public SlurmReader {
 public:
  // `token` is asked for on every request, so a refreshed token is used as soon as it exists.
  // `api` is the OpenAPI path prefix of the cluster's release (Release::RestApiPath()).
  RestClient(std::string host, int port, std::string user, std::function<std::string()> token,
             std::string api = "/slurm/v0.0.38", std::chrono::milliseconds timeout = std::chrono::milliseconds(3000))
      : host_(std::move(host)),
        port_(port),
        user_(std::move(user)),
        token_(std::move(token)),
        api_(std::move(api)),
        timeout_(timeout) {}

  Result<std::string> Ping() override;
  Result<std::vector<SlurmNode>> Nodes() override;
  Result<std::vector<SlurmJob>> Jobs() override;
  Result<std::vector<SlurmPartition>> Partitions() override;

  // Parsers, public for unit tests.
  static Result<std::vector<SlurmNode>> ParseNodes(const std::string& body);
  static Result<std::vector<SlurmJob>> ParseJobs(const std::string& body);
  static Result<std::vector<SlurmPartition>> ParsePartitions(const std::string& body);

 private:
  Result<std::string> Get(const std::string& path);

  std::string host_;
  int port_;
  std::string user_;
  std::function<std::string()> token_;
  std::string api_;
  std::chrono::milliseconds timeout_;
};

// GPUs per node in a TRES string such as "gres:gpu:2", "gres/gpu=2" or "gres:gpu:a100:1"; 0 without
// a GPU.
int GpusIn(const std::string& tres);

}  // namespace hpc::slurm
