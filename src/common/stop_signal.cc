#include "common/stop_signal.h"

#include <signal.h>

namespace hpc {
namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
void OnStopSignal(int) { g_stop = true; }
}  // namespace

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

std::atomic<bool>& StopFlag() { return g_stop; }

}  // namespace hpc
