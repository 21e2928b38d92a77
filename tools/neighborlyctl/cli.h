// SPDX-License-Identifier: Apache-2.0
// File: cli.h
//
// neighborlyctl's command line: parses flags and the command, fetches from
// the extender's /v1 API and prints a table or JSON. Errors are one line on
// `err` and a non-zero exit: 2 for a usage error, 1 when the server cannot be
// reached or answers an error.
//
//   neighborlyctl --server URL [-o table|json] [--timeout SECONDS] COMMAND
//     nodes              all nodes, highest contention first
//     node NAME          one node: L3 domains, NUMA nodes, pods
//     explain POD        latest decisions for a pod (uid, namespace/name or name)
//     workloads          workload profiles; workload NS/KIND/NAME: one of them
//
// Example:
//   std::vector<std::string> args = {"--server", "http://127.0.0.1:8888", "nodes"};
//   int code = RunCli(args, std::cout, std::cerr);
#ifndef NEIGHBORLY_TOOLS_NEIGHBORLYCTL_CLI_H_
#define NEIGHBORLY_TOOLS_NEIGHBORLYCTL_CLI_H_

#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>

#include "absl/time/time.h"
#include "tools/neighborlyctl/api_client.h"

namespace neighborly::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // unreachable server, error answer, bad answer
inline constexpr int kExitUsage = 2;

using ClientFactory = std::function<std::unique_ptr<ApiClient>(const ServerUrl&, absl::Duration)>;

// RunCli runs one invocation; `args` excludes the program name. `env_server`
// is the value of NEIGHBORLY_SERVER (used when --server is absent).
int RunCli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
           const std::string& env_server = "", ClientFactory factory = nullptr);

}  // namespace neighborly::ctl

#endif  // NEIGHBORLY_TOOLS_NEIGHBORLYCTL_CLI_H_
