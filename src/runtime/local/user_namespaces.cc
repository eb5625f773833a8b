#include "runtime/local/user_namespaces.h"

#include <sched.h>
#include <seccomp.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace hpc::runtime::local {

namespace {

struct FilterDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

Status SeccompError(const char* what, int rc) { return Status::Errorf("seccomp: {}: {}", what, std::strerror(-rc)); }

}  // namespace

Status DenyUserNamespaces() {
  std::unique_ptr<void, FilterDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Status::Error("seccomp: cannot allocate a filter");
  // Pods start as root and install this before dropping privileges: no_new_privs would stop
  // nothing more here and would change what setuid programs do in the pod.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc != 0) return SeccompError("no_new_privs", rc);
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0) {
    return SeccompError("foreign ABIs", rc);
  }
  const scmp_datum_t user = CLONE_NEWUSER;
  // The flags are the first argument of both calls on every architecture Linux has for clone
  // except s390 (which swaps its first two arguments; hpcplane does not run there).
  for (int call : {SCMP_SYS(unshare), SCMP_SYS(clone)}) {
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), call, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, user, user));
    if (rc != 0) return SeccompError("rule for unshare/clone", rc);
  }
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc != 0) {
    return SeccompError("rule for clone3", rc);
  }
  if (int rc = seccomp_load(ctx.get()); rc != 0) return SeccompError("load", rc);
  return Status::Ok();
}

}  // namespace hpc::runtime::local
