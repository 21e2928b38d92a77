// The real libpqos on this machine. On hosts without RDT (the build VM)
// pqos_init fails and the error must say so in pqos's words, without a crash;
// on RDT hardware it must report a monitoring capability.
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/pqos/pqos_library.h"
#include "node-agent/src/pqos/pqos_monitor.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

bool CpuHasCqm() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("flags") && line.find(" cqm") != std::string::npos) return true;
  }
  return false;
}

TEST(LibpqosTest, InitOnThisMachine) {
  absl::StatusOr<std::unique_ptr<PqosMonitor>> monitor =
      PqosMonitor::Create(std::shared_ptr<PqosLibrary>(NewLibpqos()), 0, nullptr);
  if (CpuHasCqm()) {
    ASSERT_TRUE(monitor.ok()) << monitor.status();
    EXPECT_GT((*monitor)->info().num_rmids, 0u);
    EXPECT_TRUE((*monitor)->info().occupancy || (*monitor)->info().mbm_total);
    return;
  }
  ASSERT_FALSE(monitor.ok()) << "libpqos initialised on a CPU without cqm";
  const std::string message(monitor.status().message());
  EXPECT_THAT(message, HasSubstr("libpqos pqos_init failed (PQOS_RETVAL_"));
}

TEST(LibpqosTest, ASecondAttemptAfterAFailureFailsTheSameWay) {
  if (CpuHasCqm())
    GTEST_SKIP() << "this CPU has RDT monitoring; the failure path needs one without";
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<PqosCapabilities> caps = NewLibpqos()->Init();
    ASSERT_FALSE(caps.ok());
    EXPECT_THAT(std::string(caps.status().message()), HasSubstr("pqos_init"));
  }
}

}  // namespace
}  // namespace neighborly::agent
