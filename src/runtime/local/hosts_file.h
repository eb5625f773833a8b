// The /etc/hosts that every pod of a local cluster shares. It is bind-mounted into each pod, so
// it is rewritten in place, while Slurm in the pods reads it on every name lookup (glibc keeps
// no cache), and Debian's Slurm sleeps a second after each failed lookup: a rewrite that
// truncated the file first made a concurrent `scontrol ping` take 1 s instead of 20 ms. So a
// line that stays never moves, and files::WriteInPlace never truncates on the way.
#pragma once

#include <string>
#include <vector>

namespace hpc::runtime::local {

/** The next content for a hosts file that now holds `current`, naming exactly `lines` (each
 *  "address<TAB>names", in the order given for new ones). Every line of `current` that is
 *  still wanted keeps its offset; a line no longer wanted is blanked in place (a comment of
 *  the same length); a new line takes the first blanked slot it fits in, or goes at the end. */
std::string NextHostsContent(const std::string& current, const std::vector<std::string>& lines);

}  // namespace hpc::runtime::local
