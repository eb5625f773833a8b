// No user namespaces in pods. Root inside an unprivileged user namespace is the first step of
// most container escapes and of exploits of kernel code reachable only with CAP_SYS_ADMIN in
// some namespace; container runtimes' default seccomp profiles refuse it, and so does every
// local pod: tenants' shells, their jobs, and the daemons alike (none of them needs one).
#pragma once

#include "common/result.h"

namespace hpc::runtime::local {

// Installs, in the calling process, a seccomp filter that refuses unshare(2) and clone(2) with
// CLONE_NEWUSER (EPERM) and clone3(2) (ENOSYS: its flags sit behind a pointer a filter cannot
// read; libc then falls back to clone). Every child inherits the filter and exec keeps it; it
// cannot be removed. System calls of other ABIs (32-bit x86) kill the caller: nothing in a pod
// uses them and the filter could not vouch for them.
Status DenyUserNamespaces();

}  // namespace hpc::runtime::local
