#include "api/codec.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "api/validation.h"

namespace hpc::api {
namespace {

const char* kCluster = R"(apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata:
  name: c1
spec:
  network:
    subnet: 10.20.30.0/24
  users:
    - name: alice
      uid: 2001
)";

std::string WithNodeSet(const std::string& spec_lines, const std::string& name = "gpu") {
  return std::string(kCluster) + "---\napiVersion: hpcplane.io/v1alpha1\nkind: NodeSet\nmetadata:\n  name: " + name +
         "\nspec:\n" + spec_lines;
}

// Guards defaults and a full round of decoding for the happy path.
TEST(CodecTest, DecodesClusterAndNodeSetWithDefaults) {
  auto m = DecodeManifest(WithNodeSet("  maxReplicas: 3\n  idleTimeout: 2m\n"), "t.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->clusters.size(), 1u);
  ASSERT_EQ(m->nodesets.size(), 1u);
  EXPECT_EQ(m->clusters[0].spec.users[0].gid, 2001);  // private group defaults to the uid
  EXPECT_EQ(m->clusters[0].spec.users[0].account, "") << "no account named: Slurm's \"default\"";
  EXPECT_EQ(m->clusters[0].spec.rest_port, 6820);
  EXPECT_EQ(m->clusters[0].spec.rest_memory_limit_mib, 2048);
  EXPECT_EQ(m->nodesets[0].spec.idle_timeout_seconds, 120);
  EXPECT_EQ(m->nodesets[0].PartitionName(), "gpu");
  EXPECT_FALSE(m->nodesets[0].spec.replicas.has_value());
}

// Health checks: defaults, both forms of maxUnhealthy, the nodeset's scripts and /tmp size, and
// a round trip through the stored JSON.
TEST(CodecTest, HealthChecksDecodeWithDefaultsAndRoundTrip) {
  auto m = DecodeManifest(WithNodeSet("  maxReplicas: 5\n  resources:\n    tmpMiB: 64\n  healthChecks:\n    scripts:\n"
                                      "      gpu-ecc: \"#!/bin/sh\\nexit 0\\n\"\n"),
                          "t.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto& h = m->clusters[0].spec.health_checks;
  EXPECT_TRUE(h.enabled);
  EXPECT_EQ(h.interval_seconds, 30);
  EXPECT_EQ(h.max_unhealthy, "20%");
  EXPECT_EQ(h.MaxUnhealthy(5), 1);
  EXPECT_EQ(h.MaxUnhealthy(6), 2);  // 1.2 rounds up
  EXPECT_EQ(h.MaxUnhealthy(1), 1);  // a lone bad worker can still be drained
  EXPECT_EQ(h.MaxUnhealthy(0), 0);
  EXPECT_EQ(m->nodesets[0].spec.resources.tmp_mib, 64);
  EXPECT_EQ(m->nodesets[0].spec.health_check_scripts.at("gpu-ecc"), "#!/bin/sh\nexit 0\n");

  auto counted = DecodeManifest(
      std::string(kCluster) + "  healthChecks:\n    maxUnhealthy: 3\n    replaceAfter: 2m\n    interval: 5s\n",
      "t.yaml");
  ASSERT_TRUE(counted.ok()) << counted.status().message();
  const auto& hc = counted->clusters[0].spec.health_checks;
  EXPECT_EQ(hc.MaxUnhealthy(100), 3);
  EXPECT_EQ(hc.replace_after_seconds, 120);
  auto again =
      DecodeManifest(ToJson(counted->clusters[0]).dump() + "\n---\n" + ToJson(m->nodesets[0]).dump(), "t.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->clusters[0].spec.health_checks.interval_seconds, 5);
  EXPECT_EQ(again->clusters[0].spec.health_checks.max_unhealthy, "3");
  EXPECT_EQ(again->nodesets[0].spec.health_check_scripts, m->nodesets[0].spec.health_check_scripts);
  EXPECT_EQ(again->nodesets[0].spec.resources.tmp_mib, 64);
}

// A rolling upgrade's policy: defaults (a day, then wait), as written, and through the stored JSON.
TEST(CodecTest, TheUpgradePolicyDecodesWithDefaultsAndRoundTrips) {
  auto plain = DecodeManifest(kCluster, "t.yaml");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->clusters[0].spec.upgrade.drain_deadline_seconds, 24 * 3600);
  EXPECT_EQ(plain->clusters[0].spec.upgrade.after_deadline, "Wait");
  auto set = DecodeManifest(std::string(kCluster) + "  upgrade:\n    drainDeadline: 2h\n    afterDeadline: Requeue\n",
                            "t.yaml");
  ASSERT_TRUE(set.ok()) << set.status().message();
  auto again = DecodeManifest(ToJson(set->clusters[0]).dump(), "t.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->clusters[0].spec.upgrade.drain_deadline_seconds, 7200);
  EXPECT_EQ(again->clusters[0].spec.upgrade.after_deadline, "Requeue");
}

// JSON is accepted by the same decoder.
// A name holding ESC, BEL, NUL and a newline (YAML escapes) is refused with a message that holds
// none of those bytes: the name is echoed escaped, in the subject as in the reason.
TEST(CodecTest, ARefusedNameIsEchoedWithoutControlCharacters) {
  for (const std::string kind : {"SlurmCluster", "NodeSet"}) {
    const std::string text = "apiVersion: hpcplane.io/v1alpha1\nkind: " + kind +
                             "\nmetadata:\n  name: \"a\\e]0;pwned\\ab\\0c\\nd\"\nspec: {}\n";
    auto m = DecodeManifest(text, "hostile.yaml");
    ASSERT_FALSE(m.ok()) << kind;
    const std::string msg = m.status().message();
    for (unsigned char c : msg) EXPECT_FALSE(c < 0x20 || c == 0x7f) << kind << ": byte " << int(c) << " in " << msg;
    EXPECT_NE(msg.find("a\\x1b]0;pwned\\x07b\\x00c\\nd"), std::string::npos) << msg;
  }
}

TEST(CodecTest, DecodesJson) {
  auto m = DecodeManifest(
      R"({"apiVersion":"hpcplane.io/v1alpha1","kind":"NodeSet","metadata":{"name":"cpu"},"spec":{"maxReplicas":2}})",
      "t.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->nodesets[0].spec.max_replicas, 2);
}

struct InvalidCase {
  const char* what;
  std::string text;
  const char* message;  // the documented error, exactly
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.what; }

class InvalidSpecTest : public ::testing::TestWithParam<InvalidCase> {};

// Every invalid spec is rejected with the object, the field path and why.
TEST_P(InvalidSpecTest, RejectedWithDocumentedMessage) {
  auto m = DecodeManifest(GetParam().text, "t.yaml");
  ASSERT_FALSE(m.ok()) << GetParam().what;
  EXPECT_EQ(m.status().message(), GetParam().message) << GetParam().what;
}

INSTANTIATE_TEST_SUITE_P(
    Specs, InvalidSpecTest,
    ::testing::Values(
        InvalidCase{"max below min", WithNodeSet("  minReplicas: 4\n  maxReplicas: 2\n"),
                    "t.yaml: nodeset \"gpu\": spec.maxReplicas: must be >= minReplicas (got 2 < 4)"},
        InvalidCase{"unknown field", WithNodeSet("  maxReplicas: 2\n  replica: 1\n"),
                    "t.yaml: nodeset \"gpu\": spec.replica: unknown field (line 18)"},
        InvalidCase{"wrong type", WithNodeSet("  maxReplicas: many\n"),
                    "t.yaml: nodeset \"gpu\": spec.maxReplicas: must be an integer (got \"many\") (line 17)"},
        InvalidCase{"bad duration", WithNodeSet("  idleTimeout: soon\n"),
                    "t.yaml: nodeset \"gpu\": spec.idleTimeout: must be a duration like 90s, 5m or 1h (got \"soon\") "
                    "(line 17)"},
        InvalidCase{"zero cpus", WithNodeSet("  resources:\n    cpus: 0\n"),
                    "t.yaml: nodeset \"gpu\": spec.resources.cpus: must be 1-1024 (got 0)"},
        InvalidCase{
            "replicas above max", WithNodeSet("  maxReplicas: 2\n  replicas: 3\n"),
            "t.yaml: nodeset \"gpu\": spec.replicas: must be between minReplicas and maxReplicas (got 3, max 2)"},
        InvalidCase{
            "bad name", WithNodeSet("  maxReplicas: 2\n", "GPU_nodes"),
            "t.yaml: nodeset \"GPU_nodes\": metadata.name: must be 1-20 lowercase letters, digits or '-', start "
            "with a letter and not end with '-' (got \"GPU_nodes\")"},
        InvalidCase{"partition option injection",
                    WithNodeSet("  partition:\n    options:\n      AllowGroups: \"a b\"\n"),
                    "t.yaml: nodeset \"gpu\": spec.partition.options.AllowGroups: value must be one token without "
                    "spaces (got \"a b\")"},
        InvalidCase{
            "owned partition option", WithNodeSet("  partition:\n    options:\n      Nodes: ALL\n"),
            "t.yaml: nodeset \"gpu\": spec.partition.options.Nodes: is set by hpcplane and cannot be overridden"},
        InvalidCase{"wrong apiVersion", "apiVersion: v1\nkind: NodeSet\nmetadata:\n  name: a\n",
                    "t.yaml: nodeset \"a\": apiVersion: must be hpcplane.io/v1alpha1 (got \"v1\")"},
        InvalidCase{"unknown kind", "apiVersion: hpcplane.io/v1alpha1\nkind: Pod\nmetadata:\n  name: a\n",
                    "t.yaml: document 1: kind: must be SlurmCluster or NodeSet (got \"Pod\")"},
        InvalidCase{"malformed yaml", "apiVersion: hpcplane.io/v1alpha1\nkind: [NodeSet\n",
                    "t.yaml: line 3, column 1: malformed YAML/JSON: end of sequence flow not found"},
        InvalidCase{
            "public subnet",
            "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  network:\n    "
            "subnet: 8.8.8.0/24\n",
            "t.yaml: cluster \"c\": spec.network.subnet: must be in a private range (10/8, 172.16/12, 192.168/16) "
            "(got \"8.8.8.0/24\")"},
        InvalidCase{
            "reserved user",
            "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  users:\n    - "
            "name: root\n      uid: 2000\n",
            "t.yaml: cluster \"c\": spec.users[0].name: user name \"root\" is a reserved system name and cannot "
            "be a Slurm user"},
        InvalidCase{
            "invalid user name",
            "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  users:\n    - "
            "name: Alice\n      uid: 2000\n",
            "t.yaml: cluster \"c\": spec.users[0].name: user name \"Alice\" is not a valid Linux user name: it "
            "must match ^[a-z_][a-z0-9_-]{0,31}$ (a lowercase letter or underscore, then up to 31 lowercase "
            "letters, digits, '_' or '-')"},
        InvalidCase{
            "user account not a name",
            "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  users:\n    - "
            "name: bob\n      uid: 2000\n      account: Ops;rm\n",
            "t.yaml: cluster \"c\": spec.users[0].account: must be 1-20 lowercase letters, digits or '-', start with a "
            "letter and not end with '-' (got \"Ops;rm\")"},
        InvalidCase{
            "system uid",
            "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  users:\n    - "
            "name: bob\n      uid: 0\n",
            "t.yaml: cluster \"c\": spec.users[0].uid: must be 1000-60000, outside system ids (got 0)"},
        InvalidCase{
            "extra config newline",
            "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  scheduling:\n "
            "   extraConfig: [\"not a line\"]\n",
            "t.yaml: cluster \"c\": spec.scheduling.extraConfig[0]: must be one slurm.conf line of the form "
            "Key=Value (got \"not a line\")"},
        InvalidCase{"dataset over /etc",
                    "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  datasets:\n  "
                    "  - name: d\n      mountPath: /etc\n",
                    "t.yaml: cluster \"c\": spec.datasets[0].mountPath: must be an absolute path outside the system "
                    "directories (got \"/etc\")"},
        InvalidCase{"dataset inside read only usr",
                    "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  datasets:\n  "
                    "  - name: d\n      mountPath: /usr/local/data\n",
                    "t.yaml: cluster \"c\": spec.datasets[0].mountPath: must be an absolute path outside the system "
                    "directories (got \"/usr/local/data\")"},
        InvalidCase{
            "tiny slurmrestd memory limit",
            "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: c\nspec:\n  restApi:\n    "
            "memoryLimitMiB: 10\n",
            "t.yaml: cluster \"c\": spec.restApi.memoryLimitMiB: must be 0 (no limit) or 64-1048576 (got 10)"},
        InvalidCase{"number for a string", WithNodeSet("  maxReplicas: 2\n  features: [fast, 7]\n"),
                    "t.yaml: nodeset \"gpu\": spec.features[1]: must be a string (got the plain value 7; quote it if "
                    "a string is meant) (line 18)"},
        InvalidCase{"quoted number for an integer", WithNodeSet("  maxReplicas: \"2\"\n"),
                    "t.yaml: nodeset \"gpu\": spec.maxReplicas: must be an integer (got \"2\") (line 17)"},
        InvalidCase{"yes for a boolean", std::string(kCluster) + "  accounting:\n    enabled: yes\n",
                    "t.yaml: cluster \"c1\": spec.accounting.enabled: must be true or false (got \"yes\") (line 12)"},
        InvalidCase{"boolean for a label", WithNodeSet("  maxReplicas: 2\n", "gpu\n  labels:\n    gpu: true"),
                    "t.yaml: nodeset \"gpu\": metadata.labels.gpu: must be a string (got the plain value true; quote "
                    "it if a string is meant) (line 17)"},
        InvalidCase{"integer out of range", WithNodeSet("  maxReplicas: 99999999999\n"),
                    "t.yaml: nodeset \"gpu\": spec.maxReplicas: must be an integer in range (got 99999999999) "
                    "(line 17)"},
        InvalidCase{"huge memory", WithNodeSet("  resources:\n    memoryMiB: 999999999\n"),
                    "t.yaml: nodeset \"gpu\": spec.resources.memoryMiB: must be 64-16777216 (16 TiB) (got 999999999)"},
        InvalidCase{"idle timeout of years", WithNodeSet("  idleTimeout: 400d\n"),
                    "t.yaml: nodeset \"gpu\": spec.idleTimeout: must be 0s-30d (got 34560000s)"},
        InvalidCase{"scale rate", WithNodeSet("  scaling:\n    scaleUpPerMinute: 100000\n"),
                    "t.yaml: nodeset \"gpu\": spec.scaling.scaleUpPerMinute: must be 0-10000 (got 100000)"},
        InvalidCase{"control character", WithNodeSet("  maxReplicas: 2\n  features: [\"a\x13z\"]\n"),
                    "t.yaml: line 18, column 16: byte 0x13 is not allowed (YAML is printable UTF-8 text)"},
        InvalidCase{"invalid utf-8", WithNodeSet("  maxReplicas: 2\n  features: [\"caf\xE9\"]\n"),
                    "t.yaml: line 18, column 18: byte 0xE9 is not allowed (YAML is printable UTF-8 text)"},
        InvalidCase{"bad label key", WithNodeSet("  maxReplicas: 2\n", "gpu\n  labels:\n    \"a b\": x"),
                    "t.yaml: nodeset \"gpu\": metadata.labels: key \"a b\" must be [prefix/]name, name at most 63 "
                    "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
        InvalidCase{"bad label value", WithNodeSet("  maxReplicas: 2\n", "gpu\n  labels:\n    team: \"-x\""),
                    "t.yaml: nodeset \"gpu\": metadata.labels.team: must be at most 63 letters, digits, '-', '_' or "
                    "'.', starting and ending with a letter or digit"},
        InvalidCase{"health check interval of a day", std::string(kCluster) + "  healthChecks:\n    interval: 1d\n",
                    "t.yaml: cluster \"c1\": spec.healthChecks.interval: must be 1s-1h (got 86400)"},
        InvalidCase{"max unhealthy share above all",
                    std::string(kCluster) + "  healthChecks:\n    maxUnhealthy: \"150%\"\n",
                    "t.yaml: cluster \"c1\": spec.healthChecks.maxUnhealthy: must be a count 0-9999 or a share "
                    "0%-100% (got \"150%\")"},
        InvalidCase{"max unhealthy words", std::string(kCluster) + "  healthChecks:\n    maxUnhealthy: some\n",
                    "t.yaml: cluster \"c1\": spec.healthChecks.maxUnhealthy: must be a count like 2 or a share like "
                    "\"20%\" (got \"some\") (line 12)"},
        InvalidCase{"upgrade policy unknown", std::string(kCluster) + "  upgrade:\n    afterDeadline: Kill\n",
                    "t.yaml: cluster \"c1\": spec.upgrade.afterDeadline: must be Wait, Requeue or Cancel (got "
                    "\"Kill\")"},
        InvalidCase{"upgrade deadline of two years", std::string(kCluster) + "  upgrade:\n    drainDeadline: 730d\n",
                    "t.yaml: cluster \"c1\": spec.upgrade.drainDeadline: must be 0s-365d (got 63072000s)"},
        InvalidCase{"tiny tmp", WithNodeSet("  resources:\n    tmpMiB: 1\n"),
                    "t.yaml: nodeset \"gpu\": spec.resources.tmpMiB: must be 16-1048576 (1 TiB) (got 1)"},
        InvalidCase{"check script without interpreter",
                    WithNodeSet("  healthChecks:\n    scripts:\n      gpu-ecc: \"nvidia-smi -q\"\n"),
                    "t.yaml: nodeset \"gpu\": spec.healthChecks.scripts.gpu-ecc: must start with an interpreter line "
                    "like #!/bin/sh"},
        InvalidCase{"check script named like a built-in",
                    WithNodeSet("  healthChecks:\n    scripts:\n      tmp: \"#!/bin/sh\\ntrue\"\n"),
                    "t.yaml: nodeset \"gpu\": spec.healthChecks.scripts.tmp: is the name of a built-in check"},
        InvalidCase{"check script name with a path",
                    WithNodeSet("  healthChecks:\n    scripts:\n      \"../x\": \"#!/bin/sh\\ntrue\"\n"),
                    "t.yaml: nodeset \"gpu\": spec.healthChecks.scripts.../x: names are 1-32 lower-case letters, "
                    "digits or '-', starting with a letter or digit"},
        InvalidCase{"key given twice", WithNodeSet("  resources:\n    cpus: 2\n  resources:\n    cpus: 3\n"),
                    "t.yaml: nodeset \"gpu\": spec.resources: is given twice (line 19)"},
        InvalidCase{"empty file", "", "t.yaml: no resources found"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) {
      std::string name = info.param.what;
      for (auto& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(CodecTest, NodeSetPodPlacementDecodesRoundTripsAndIsValidated) {
  const std::string placement =
      "  pod:\n"
      "    nodeSelector: {nvidia.com/gpu.product: A100}\n"
      "    tolerations:\n"
      "      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
      "      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}\n"
      "    priorityClassName: hpc-batch\n"
      "    imagePullSecrets: [registry-credentials]\n";
  auto m = DecodeManifest(WithNodeSet(placement), "test");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const PodPlacementSpec& pod = m->nodesets[0].spec.pod;
  EXPECT_EQ(pod.node_selector.at("nvidia.com/gpu.product"), "A100");
  ASSERT_EQ(pod.tolerations.size(), 2u);
  EXPECT_EQ(pod.tolerations[0], (Toleration{"nvidia.com/gpu", "Exists", "", "NoSchedule", std::nullopt}));
  EXPECT_EQ(pod.tolerations[1].seconds, 300);
  EXPECT_EQ(pod.priority_class_name, "hpc-batch");
  EXPECT_EQ(pod.image_pull_secrets, std::vector<std::string>{"registry-credentials"});
  // What `get -o yaml` writes reads back the same.
  auto again = DecodeManifest(JsonToYaml(ToJson(m->nodesets[0])), "round trip");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->nodesets[0].spec.pod.tolerations, pod.tolerations);
  EXPECT_EQ(again->nodesets[0].spec.pod.node_selector, pod.node_selector);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"    tolerations: [{key: a, operator: Maybe}]\n", "spec.pod.tolerations[0].operator: must be Equal or Exists"},
      {"    tolerations: [{key: a, operator: Exists, value: b}]\n", "spec.pod.tolerations[0].value: must be empty"},
      {"    tolerations: [{operator: Equal, value: b}]\n", "spec.pod.tolerations[0].operator: must be Exists when key"},
      {"    tolerations: [{key: a, effect: NoSchedule, tolerationSeconds: 5}]\n",
       "spec.pod.tolerations[0].tolerationSeconds: is for NoExecute only"},
      {"    nodeSelector: {\"bad key!\": x}\n", "spec.pod.nodeSelector: key \"bad key!\""},
      {"    priorityClassName: Not_A_Name\n", "spec.pod.priorityClassName: must be a Kubernetes object name"},
      {"    imagePullSecrets: [\"a;rm -rf\"]\n", "spec.pod.imagePullSecrets[0]: must be a Secret's name"},
  };
  for (const auto& [yaml, want] : bad) {
    auto r = DecodeManifest(WithNodeSet("  pod:\n" + yaml), "test");
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
}

TEST(CodecTest, ValidateAgainstClusterUsesClusterMinimum) {
  auto m = DecodeManifest(WithNodeSet("  maxReplicas: 1\n"), "t.yaml");
  ASSERT_TRUE(m.ok());
  m->clusters[0].spec.min_replica_count = 2;
  Status s = ValidateAgainstCluster(m->nodesets[0], m->clusters[0]);
  EXPECT_EQ(s.message(), "nodeset \"gpu\": spec.maxReplicas: must be >= minReplicas (got 1 < 2)");
}

// An admin's partition from extraConfig is never taken over by a nodeset of the same name.
TEST(CodecTest, ValidateAgainstClusterRefusesAPartitionDeclaredInExtraConfig) {
  auto m = DecodeManifest(WithNodeSet("  maxReplicas: 1\n"), "t.yaml");
  ASSERT_TRUE(m.ok());
  m->clusters[0].spec.extra_config = {"SuspendTime=2", "PartitionName=gpu Nodes=cloud-[0-1] State=UP"};
  Status s = ValidateAgainstCluster(m->nodesets[0], m->clusters[0]);
  EXPECT_EQ(s.message(),
            "nodeset \"gpu\": metadata.name: partition \"gpu\" is declared by the cluster's "
            "spec.scheduling.extraConfig[1] and belongs to its admin; choose another name");
  m->nodesets[0].spec.partition.name = "gpu-elastic";
  EXPECT_TRUE(ValidateAgainstCluster(m->nodesets[0], m->clusters[0]).ok());
}

// Output encoders produce what the decoder accepts (round trip through YAML).
// Off unless asked; asked, it survives `get -o yaml` and back.
TEST(CodecTest, ABackupControllerIsOffByDefaultAndRoundTrips) {
  auto m = DecodeManifest(kCluster, "t.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE(m->clusters[0].spec.backup_controller);
  auto on = DecodeManifest(std::string(kCluster) + "  backupController:\n    enabled: true\n", "t.yaml");
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_TRUE(on->clusters[0].spec.backup_controller);
  auto again = DecodeManifest(JsonToYaml(ToJson(on->clusters[0])), "out.yaml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->clusters[0].spec.backup_controller);
}

TEST(CodecTest, ToJsonRoundTripsThroughYaml) {
  auto m = DecodeManifest(WithNodeSet("  maxReplicas: 3\n  replicas: 2\n  features: [fast]\n"), "t.yaml");
  ASSERT_TRUE(m.ok());
  std::string yaml = JsonToYaml(ToJson(m->nodesets[0]));
  auto again = DecodeManifest(yaml, "out.yaml");
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << yaml;
  EXPECT_EQ(again->nodesets[0].spec.replicas, 2);
  EXPECT_EQ(again->nodesets[0].spec.features, std::vector<std::string>{"fast"});
}

// Guards the 20 MB manifest (one huge comment) that `up` read and accepted.
TEST(CodecTest, ManifestsAboveOneMebibyteAreRefusedWithTheirSize) {
  std::string big = std::string(kCluster) + "# " + std::string(kMaxManifestBytes, 'x') + "\n";
  auto m = DecodeManifest(big, "big.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), fmt::format("big.yaml: is {} bytes; the limit is 1048576 bytes", big.size()));
}

// Strings that look like numbers survive `get -o yaml` and apply again.
TEST(CodecTest, StringsThatLookTypedAreQuotedOnOutput) {
  auto m = DecodeManifest(WithNodeSet("  maxReplicas: 3\n  features: [\"7\", \"true\", fast]\n"), "t.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::string yaml = JsonToYaml(ToJson(m->nodesets[0]));
  auto again = DecodeManifest(yaml, "out.yaml");
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << yaml;
  EXPECT_EQ(again->nodesets[0].spec.features, (std::vector<std::string>{"7", "true", "fast"}));
}

// Found by fuzzing: yaml-cpp's LoadAll loops forever on a document that starts with ','.
TEST(CodecTest, MalformedDocumentsAreRefusedQuicklyWithTheirLine) {
  for (const std::string& text : std::vector<std::string>{",", "a: 1\n,", std::string(kCluster) + "---\n, a\n"}) {
    auto m = DecodeManifest(text, "t.yaml");
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_NE(m.status().message().find("malformed YAML/JSON"), std::string::npos) << m.status().message();
  }
  auto late = DecodeManifest(std::string(kCluster) + "---\n# second\n, a\n", "t.yaml");
  EXPECT_EQ(late.status().message(), "t.yaml: line 11: malformed YAML/JSON: the document cannot be read");
  // Errors in a later document count lines from the file's start.
  auto second = DecodeManifest(WithNodeSet("  maxReplicas: x\n"), "t.yaml");
  EXPECT_EQ(second.status().message(),
            "t.yaml: nodeset \"gpu\": spec.maxReplicas: must be an integer (got \"x\") (line 17)");
  // Markers with content on their line, document ends, and empty documents.
  auto ok = DecodeManifest(
      "--- " +
          std::string(
              R"({"apiVersion":"hpcplane.io/v1alpha1","kind":"NodeSet","metadata":{"name":"a"},"spec":{"maxReplicas":1}})") +
          "\n...\n---\n---\n# nothing\n",
      "t.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->nodesets.size(), 1u);
}

TEST(CodecTest, Durations) {
  EXPECT_EQ(*ParseDurationSeconds("90"), 90);
  EXPECT_EQ(*ParseDurationSeconds("5m"), 300);
  EXPECT_EQ(*ParseDurationSeconds("1h"), 3600);
  EXPECT_FALSE(ParseDurationSeconds("-5s").ok());
  EXPECT_EQ(FormatDuration(120), "2m");
  EXPECT_EQ(FormatDuration(45), "45s");
}

// Status has one codec: what the state files hold, `get -o yaml` shows, with nothing dropped.
TEST(StatusCodec, RoundTripsAndGetShowsEveryField) {
  SlurmCluster c;
  c.metadata.name = "c1";
  c.status.observed_generation = 4;
  c.status.conditions = {{"Ready", "False", "NotReady", "waiting for controller", "2026-12-01T00:00:00Z"}};
  c.status.endpoints = {{"slurmctld", "10.0.0.2:6817"}};
  c.status.component_versions = {{"slurm/slurmctld", "22.05.8"}};
  c.status.components = {{"controller", "Waiting: starting"}};
  c.status.leading_controller = "c1-controller-backup";
  EXPECT_EQ(ToJson(c)["status"], StatusToJson(c.status));
  EXPECT_EQ(ToJson(c)["status"]["leadingController"], "c1-controller-backup");
  EXPECT_EQ(ToJson(c)["status"]["components"]["controller"], "Waiting: starting");
  EXPECT_EQ(StatusToJson(ClusterStatusFromJson(StatusToJson(c.status))), StatusToJson(c.status));

  NodeSet n;
  n.metadata.name = "cpu";
  n.status.desired = 3;
  n.status.replicas = 2;
  n.status.health_drains = 7;
  n.status.last_decision = "scale up 2→3";
  n.status.events = {{"2026-12-01T00:00:00Z", "Normal", "Scaled", "scale up 2→3"}};
  EXPECT_EQ(ToJson(n)["status"], StatusToJson(n.status));
  EXPECT_EQ(StatusToJson(NodeSetStatusFromJson(StatusToJson(n.status))), StatusToJson(n.status));
  // A status file from an older version, or none, reads as defaults.
  EXPECT_EQ(NodeSetStatusFromJson(nlohmann::json::object()).replicas, 0);
  EXPECT_EQ(ClusterStatusFromJson(nlohmann::json()).observed_generation, 0);
}

}  // namespace
}  // namespace hpc::api

namespace hpc::api {
namespace {

// JSON back from YAML, for strings, maps and lists (enough for the round trip below).
nlohmann::json YamlToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = YamlToJson(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& v : n) j.push_back(YamlToJson(v));
    return j;
  }
  return n.as<std::string>();
}

TEST(CodecTest, YamlOfMultiLineStringsReadsBackUnchanged) {
  // Scripts and config files print as `|` blocks where that reads back exactly; anything a
  // block would change stays quoted.
  const std::vector<std::string> values = {
      "ClusterName=a\nSlurmUser=slurm\n",  // a block
      "no final newline\nsecond",          // quoted: a block adds a newline
      "two final newlines\n\n",            // quoted: a block keeps one
      "  indented first line\nx\n",        // quoted: a block takes its indentation from it
      "trailing blank \nx\n",              // quoted
      "tab\tinside\nx\n",                  // a block
      "control \x01 char\nx\n",            // quoted
      "#!/bin/sh\necho '$HOME' \"q\" \\ done\n",
      "- looks: like yaml\n  nested: [1, 2]\n",
      "",
  };
  nlohmann::json in = nlohmann::json::object();
  for (size_t i = 0; i < values.size(); ++i) in["k" + std::to_string(i)] = values[i];
  in["empty_map"] = nlohmann::json::object();
  in["nested"] = {{"empty_list", nlohmann::json::array()}, {"script", values[0]}};
  const std::string yaml = JsonToYaml(in);
  EXPECT_NE(yaml.find("k0: |\n  ClusterName=a\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("empty_map: {}"), std::string::npos) << yaml;
  nlohmann::json back = YamlToJson(YAML::Load(yaml));
  for (auto it = in.begin(); it != in.end(); ++it) {
    if (it.value().is_string()) {
      EXPECT_EQ(back.at(it.key()), it.value()) << it.key() << "\n" << yaml;
    }
  }
  EXPECT_EQ(back.at("nested").at("script"), values[0]);
}

}  // namespace
}  // namespace hpc::api
