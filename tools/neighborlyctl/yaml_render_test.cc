// SPDX-License-Identifier: Apache-2.0
#include "tools/neighborlyctl/yaml_render.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace neighborly::ctl {
namespace {

using nlohmann::json;

TEST(RenderYamlTest, BlockStyleLikeKubectl) {
  absl::StatusOr<std::string> yaml = RenderYaml(
      R"([{"name":"node-1","score":0.91,"ready":true,"age":null,"pods":[],"caps":{},
          "numa":[{"id":0,"cpus":"0-7"},{"id":1,"cpus":"8-15"}],"by":{"0":4294967296}}])");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  // Keys in sorted order, as kubectl -o yaml prints them.
  EXPECT_EQ(*yaml,
            "- age: null\n"
            "  by:\n"
            "    \"0\": 4294967296\n"
            "  caps: {}\n"
            "  name: node-1\n"
            "  numa:\n"
            "    - cpus: \"0-7\"\n"
            "      id: 0\n"
            "    - cpus: \"8-15\"\n"
            "      id: 1\n"
            "  pods: []\n"
            "  ready: true\n"
            "  score: 0.91\n");
}

// Every string that YAML would read as another type, or not at all, is quoted:
// loading the YAML gives back the same strings.
TEST(RenderYamlTest, AmbiguousStringsLoadBackAsTheSameStrings) {
  const std::vector<std::string> strings = {"true",
                                            "no",
                                            "on",
                                            "null",
                                            "~",
                                            "1.5",
                                            "0x10",
                                            "",
                                            " lead",
                                            "a: b",
                                            "#x",
                                            "- x",
                                            "membw 84% > 80% on NUMA node 1",
                                            "quote \" and \\ and \n newline",
                                            "content/article-5d8f7",
                                            "[x]",
                                            "{y}",
                                            "*alias",
                                            "&anchor",
                                            "!tag",
                                            "@at",
                                            "`tick",
                                            "%pct",
                                            "ünïcode"};
  json doc = json::object();
  for (size_t i = 0; i < strings.size(); ++i) doc["k" + std::to_string(i)] = strings[i];
  doc["nested"] = json::array({json::array({"yes", 1}), json::object({{"no", "off"}})});
  absl::StatusOr<std::string> yaml = RenderYaml(doc.dump());
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  const YAML::Node loaded = YAML::Load(*yaml);
  for (size_t i = 0; i < strings.size(); ++i) {
    const YAML::Node v = loaded["k" + std::to_string(i)];
    EXPECT_EQ(v.as<std::string>(), strings[i]) << *yaml;
    // Quoted scalars carry the non-specific tag "!": a reader keeps them strings.
    if (strings[i] != "content/article-5d8f7") {
      EXPECT_EQ(v.Tag(), "!") << strings[i];
    }
  }
  EXPECT_EQ(loaded["nested"][0][0].as<std::string>(), "yes");
  EXPECT_EQ(loaded["nested"][0][0].Tag(), "!");
  EXPECT_EQ(loaded["nested"][0][1].as<int>(), 1);
  EXPECT_EQ(loaded["nested"][1]["no"].as<std::string>(), "off");
  EXPECT_EQ(loaded["nested"][1]["no"].Tag(), "!");
}

TEST(RenderYamlTest, ScalarsAndErrors) {
  EXPECT_EQ(*RenderYaml("[]"), "[]\n");
  EXPECT_EQ(*RenderYaml("\"x\""), "x\n");
  EXPECT_FALSE(RenderYaml("{not json").ok());
}

}  // namespace
}  // namespace neighborly::ctl
