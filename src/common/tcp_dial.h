// Dialling a TCP connection with a deadline, for the WebSockets the agent opens (ws:// and wss://).
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"

namespace hpc::ws {

// A connected TCP socket (close-on-exec, Nagle off) to `host`:`port`, each resolved address tried
// in turn within `timeout`, which then bounds each blocking read and write on it until
// SetSocketTimeouts(fd, 0). Unavailable naming the address when none answered.
Result<int> DialTcp(const std::string& host, const std::string& port, std::chrono::milliseconds timeout);

// SO_RCVTIMEO and SO_SNDTIMEO (connect included on Linux); 0 clears them.
void SetSocketTimeouts(int fd, std::chrono::milliseconds timeout);

}  // namespace hpc::ws
