// SPDX-License-Identifier: Apache-2.0
// File: yaml_render.h
//
// neighborlyctl -o yaml: an API answer (JSON) printed as block-style YAML, the
// way kubectl -o yaml prints objects. Strings that YAML would read as
// something else (true, 1.5, null, "", "a: b", leading blanks) are written
// double-quoted, so the YAML loads back to exactly the JSON it came from.
//
//   absl::StatusOr<std::string> yaml = RenderYaml(R"({"name":"node-1","pods":[]})");
//   // name: node-1\npods: []\n
#ifndef NEIGHBORLY_TOOLS_NEIGHBORLYCTL_YAML_RENDER_H_
#define NEIGHBORLY_TOOLS_NEIGHBORLYCTL_YAML_RENDER_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace neighborly::ctl {

// INVALID_ARGUMENT when `json` is not JSON.
absl::StatusOr<std::string> RenderYaml(std::string_view json);

}  // namespace neighborly::ctl

#endif  // NEIGHBORLY_TOOLS_NEIGHBORLYCTL_YAML_RENDER_H_
