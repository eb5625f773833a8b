// Verbs that look at and into a cluster: status, get, describe, exec and logs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/support.h"

namespace hpc::cli {

int CmdGet(const Globals& g, const std::string& what, const std::string& format);
int CmdStatus(const Globals& g);
int CmdDescribe(const Globals& g, const std::string& kind, const std::string& name);
int CmdExec(const Globals& g, const std::string& pod, const std::string& user, const std::vector<std::string>& cmd);
int CmdLogs(const Globals& g, const std::string& pod, int tail);

}  // namespace hpc::cli
