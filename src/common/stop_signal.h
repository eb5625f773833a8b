// The process's one stop signal. Every role's loop (daemon, operator, server, agent) watches the
// same flag, which SIGTERM and SIGINT set, so `hpcplane up` with several roles in one process
// stops them all on one signal.
#pragma once

#include <atomic>

namespace hpc {

// Makes SIGTERM and SIGINT set StopFlag() and ignores SIGPIPE (a peer that went away is an error
// of the write, not the end of the process). Calling it again changes nothing.
void InstallStopHandlers();

// True once a stop was asked for, by a signal or by setting it.
std::atomic<bool>& StopFlag();

}  // namespace hpc
