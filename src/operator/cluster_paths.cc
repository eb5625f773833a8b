#include "operator/cluster_paths.h"

#include <pwd.h>

#include <cstdio>

#include "common/files.h"
#include "common/subprocess.h"

namespace hpc::op {
namespace {

Result<Account> LookupAccount(const char* name) {
  struct passwd* pw = ::getpwnam(name);
  if (!pw) return Status::Errorf("system user \"{}\" does not exist (is its package installed?)", name);
  return Account{pw->pw_uid, pw->pw_gid};
}

}  // namespace

pid_t RunningDaemon(const ClusterPaths& p) {
  auto text = files::Read(p.PidFile());
  if (!text.ok()) return 0;
  pid_t pid = 0;
  uint64_t start = 0;
  if (std::sscanf(text->c_str(), "%d %lu", &pid, &start) != 2) return 0;
  return hpc::ProcessStartTime(pid) == start && start != 0 ? pid : 0;
}

Result<BuildInputs> HostBuildInputs() {
  BuildInputs in;
  ASSIGN_OR_RETURN(in.slurm, LookupAccount("slurm"));
  ASSIGN_OR_RETURN(in.munge, LookupAccount("munge"));
  ASSIGN_OR_RETURN(in.nobody, LookupAccount("nobody"));
  // Only clusters with accounting need MariaDB; the reconciler says so when it is missing.
  in.mysql = LookupAccount("mysql").value_or(Account{-1, -1});
  ASSIGN_OR_RETURN(in.host_passwd, files::Read("/etc/passwd"));
  ASSIGN_OR_RETURN(in.host_group, files::Read("/etc/group"));
  // munged's version ("munge-0.5.15 (2022-06-22)" -> "0.5.15"), for pods that run the host's.
  if (auto r = RunProcess({"munged", "-V"}); r.ok() && r->ok()) {
    std::string out = r->out.empty() ? r->err : r->out;
    if (out.rfind("munge-", 0) == 0) in.munge_version = out.substr(6, out.find_first_of(" \n") - 6);
  }
  return in;
}

}  // namespace hpc::op
