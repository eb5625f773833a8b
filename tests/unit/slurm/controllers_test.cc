// Slurm's heartbeat file as `od -An -v -tx1` prints it: which controller serves, and since when.
#include "slurm/controllers.h"

#include <gtest/gtest.h>

#include "slurm/config.h"

namespace hpc::slurm {
namespace {

// Bytes as heartbeat.c writes them: the time, then the serving controller's index, each a
// big-endian uint64; od prints them 16 to a line.
TEST(Heartbeat, TheTimeAndTheServingControllerAreBigEndian) {
  const std::string od = " 00 00 00 00 69 35 c1 20 00 00 00 00 00 00 00 01\n";  // 1765130528, the backup
  auto beat = ParseHeartbeat(od);
  ASSERT_TRUE(beat.has_value());
  EXPECT_EQ(beat->written_at, 1765130528);
  EXPECT_EQ(beat->controller, 1);
  EXPECT_TRUE(HeartbeatCurrent(*beat, 1765130528 + 12, 6));
  EXPECT_FALSE(HeartbeatCurrent(*beat, 1765130528 + 13, 6)) << "twice SlurmctldTimeout: none serves";
}

TEST(Heartbeat, AnythingElseIsNoHeartbeat) {
  EXPECT_FALSE(ParseHeartbeat("").has_value());
  EXPECT_FALSE(ParseHeartbeat(" 00 00 00 00 69 35 c1 20\n").has_value()) << "before 18.08: no index";
  EXPECT_FALSE(ParseHeartbeat(" 00 00 00 00 69 35 c1 20 00 00 00 00 00 00 00 01 00\n").has_value());
  EXPECT_FALSE(ParseHeartbeat(" zz 00 00 00 69 35 c1 20 00 00 00 00 00 00 00 01\n").has_value());
  EXPECT_FALSE(ParseHeartbeat(" 00 00 00 00 69 35 c1 20 00 00 00 00 00 00 ff 01\n").has_value()) << "no such index";
  EXPECT_EQ(ReadHeartbeatCommand().back(), "/run/slurm/state/heartbeat");
}

// The admin's SlurmctldTimeout (the last of their lines) is the one the cluster runs with.
TEST(Heartbeat, TheSlurmctldTimeoutIsTheAdminsWhenSet) {
  api::SlurmCluster c;
  c.metadata.name = "c1";
  EXPECT_EQ(SlurmctldTimeoutSeconds(c), 30);
  c.spec.backup_controller = true;
  EXPECT_EQ(SlurmctldTimeoutSeconds(c), kSlurmctldTimeoutWithBackup);
  c.spec.extra_config = {"SlurmctldTimeout=20", "slurmctldtimeout=40"};
  EXPECT_EQ(SlurmctldTimeoutSeconds(c), 40);
  const std::string conf = RenderSlurmConf(c, {});
  EXPECT_EQ(conf.find("SlurmctldTimeout=6"), std::string::npos) << conf;
  EXPECT_NE(conf.find("slurmctldtimeout=40"), std::string::npos);
}

}  // namespace
}  // namespace hpc::slurm
