// SlurmReader over slurmrestd's OpenAPI v0.0.38 with a JWT for the Slurm user.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "slurm/slurm_client.h"

namespace hpc::slurm {

class RestClient : public SlurmReader {
 public:
  // `token` is asked for on every request, so a refreshed token is used as soon as it exists.
  RestClient(std::string host, int port, std::string user, std::function<std::string()> token,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(3000))
      : host_(std::move(host)), port_(port), user_(std::move(user)), token_(std::move(token)), timeout_(timeout) {}

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
  std::chrono::milliseconds timeout_;
};

}  // namespace hpc::slurm
