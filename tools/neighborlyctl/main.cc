// SPDX-License-Identifier: Apache-2.0
// neighborlyctl: the operator's CLI over the extender's /v1 API (see cli.h).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "tools/neighborlyctl/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const char* env = std::getenv("NEIGHBORLY_SERVER");
  return neighborly::ctl::RunCli(args, std::cout, std::cerr, env ? env : "");
}
