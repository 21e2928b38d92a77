#include "common/yaml_fields.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::yaml {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

const Source kSource{"cfg.yaml"};

// The document's root map, accepting any key.
absl::StatusOr<Map> Root(std::string_view text) {
  absl::StatusOr<YAML::Node> doc = Load(kSource, text);
  if (!doc.ok()) return doc.status();
  return Map::OfAnyKeys(Value(kSource, *doc));
}

// The error message of `status` (empty when it is OK).
std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(YamlFieldsTest, TypedGettersNamePathAndLine) {
  absl::StatusOr<Map> root = Root("log: {level: info}\nmodel:\n  l3Weight: abc\n  n: 7\n");
  ASSERT_TRUE(root.ok()) << root.status();
  absl::StatusOr<Map> model = Map::OfAnyKeys(root->Get("model"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Message(model->Get("l3Weight").Double(0, 10).status()),
            "cfg.yaml:3: model.l3Weight: expected a number, got \"abc\"");
  EXPECT_EQ(Message(model->Get("n").Double(0, 1).status()), "cfg.yaml:4: model.n: 7 is outside 0..1");
  EXPECT_EQ(Message(model->Get("n").Double(10).status()), "cfg.yaml:4: model.n: 7 is below 10");
  EXPECT_EQ(*model->Get("n").Double(0), 7);
  EXPECT_EQ(Message(model->Get("n").Int(8, 9).status()), "cfg.yaml:4: model.n: 7 is outside 8..9");
  EXPECT_EQ(Message(model->Get("l3Weight").Uint().status()),
            "cfg.yaml:3: model.l3Weight: expected a non-negative integer, got \"abc\"");
  EXPECT_EQ(Message(root->Get("model").String().status()),
            "cfg.yaml:3: model: expected a string, got a map");
  // A missing key: at its map's line, with the path it would have had.
  EXPECT_EQ(Message(model->Missing("maxAge")), "cfg.yaml:3: missing required key \"model.maxAge\"");
  EXPECT_TRUE(model->Get("maxAge").absent());
  EXPECT_EQ(Message(model->Get("maxAge").Duration().status()),
            "cfg.yaml:3: model.maxAge: expected a duration, got nothing");
}

TEST(YamlFieldsTest, EveryTypeParsesAndRefusesTheWrongShape) {
  absl::StatusOr<Map> root = Root(
      "s: hello\nb: TRUE\ni: -12\nu: 42\nd: 0.25\nbytes: 64Mi\ndur: 1m30s\ncpus: 0-3,8\n"
      "list: [a, b]\nmap: {x: 1, y: ~}\nempty:\n");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(*root->Get("s").String(), "hello");
  EXPECT_EQ(*root->Get("b").Bool(), true);
  EXPECT_EQ(*root->Get("i").Int(), -12);
  EXPECT_EQ(*root->Get("u").Uint(), 42u);
  EXPECT_EQ(*root->Get("d").Double(0, 1), 0.25);
  EXPECT_EQ(*root->Get("bytes").Bytes(), 64 << 20);
  EXPECT_EQ(*root->Get("u").Bytes(), 42);
  EXPECT_EQ(*root->Get("dur").Duration(), absl::Seconds(90));
  EXPECT_EQ(*root->Get("cpus").Cpus(), (CpuSet{0, 1, 2, 3, 8}));
  EXPECT_THAT(*root->Get("list").Strings(), ElementsAre("a", "b"));
  EXPECT_THAT(*root->Get("map").StringMap(), ElementsAre(Pair("x", "1"), Pair("y", "")));
  // `key:` with no value reads as absent, and absent lists and maps as empty.
  EXPECT_FALSE(root->Has("empty"));
  EXPECT_TRUE(root->Get("empty").absent());
  EXPECT_TRUE(root->Get("empty").Strings()->empty());
  EXPECT_TRUE(root->Get("nothing").StringMap()->empty());
  EXPECT_EQ(*root->String("nothing"), std::nullopt);
  EXPECT_EQ(Message(root->RequiredString("empty").status()),
            "cfg.yaml:11: missing required key \"empty\"");

  EXPECT_EQ(Message(root->Get("s").Bool().status()),
            "cfg.yaml:1: s: expected true or false, got \"hello\"");
  EXPECT_EQ(Message(root->Get("i").Uint().status()),
            "cfg.yaml:3: i: expected a non-negative integer, got \"-12\"");
  EXPECT_EQ(Message(root->Get("u").Uint(10).status()), "cfg.yaml:4: u: 42 is above 10");
  EXPECT_THAT(Message(root->Get("s").Bytes().status()),
              HasSubstr("cfg.yaml:1: s: expected a byte quantity like 64Mi, got \"hello\""));
  EXPECT_EQ(Message(root->Get("bytes").Bytes(1 << 30).status()),
            "cfg.yaml:6: bytes: must be at least 1073741824, got \"64Mi\"");
  EXPECT_EQ(Message(root->Get("s").Duration().status()),
            "cfg.yaml:1: s: expected a duration like \"30s\" or \"500ms\", got \"hello\"");
  EXPECT_EQ(Message(root->Get("dur").Duration(absl::Minutes(2)).status()),
            "cfg.yaml:7: dur: must be at least 2m, got \"1m30s\"");
  EXPECT_THAT(Message(root->Get("s").Cpus().status()),
              HasSubstr("cfg.yaml:1: s: expected a cpu list like \"0-3,8\", got \"hello\""));
  EXPECT_EQ(Message(root->Get("map").Strings().status()),
            "cfg.yaml:10: map: expected a list of strings, got a map");
  EXPECT_EQ(Message(root->Get("list").StringMap().status()),
            "cfg.yaml:9: list: expected a map, got a list");
  EXPECT_EQ(Message(root->Get("s").List().status()),
            "cfg.yaml:1: s: expected a list, got \"hello\"");
}

TEST(YamlFieldsTest, ListItemsCarryTheirIndexInThePath) {
  absl::StatusOr<Map> root = Root("rules:\n- {key: a}\n- {key: [x]}\n");
  ASSERT_TRUE(root.ok()) << root.status();
  absl::StatusOr<std::vector<Value>> items = root->Get("rules").List();
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 2u);
  absl::StatusOr<Map> second = Map::Of((*items)[1], {"key"});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(Message(second->Get("key").String().status()),
            "cfg.yaml:3: rules[1].key: expected a string, got a list");
  EXPECT_EQ(Message(Value(kSource, *Load(kSource, "a: [1, {b: 2}]\n"), "")
                        .List()
                        .status()),
            "cfg.yaml:1: top level: expected a list, got a map");
}

TEST(YamlFieldsTest, UnknownKeysAreRefusedWhereTheReaderListsItsKeys) {
  absl::StatusOr<YAML::Node> doc = Load(kSource, "http:\n  adress: x\n");
  ASSERT_TRUE(doc.ok());
  absl::StatusOr<Map> root = Map::Of(Value(kSource, *doc), {"http", "model"});
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(Message(Map::Of(root->Get("http"), {"address", "tls"}).status()),
            "cfg.yaml:2: unknown key \"http.adress\" (known in http: address, tls)");
  EXPECT_EQ(Message(Map::Of(Value(kSource, *doc), {"model"}).status()),
            "cfg.yaml:1: unknown key \"http\" (known: model)");
  // Files whose schema is someone else's: any key.
  absl::StatusOr<Map> any = Map::OfAnyKeys(root->Get("http"));
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_EQ(*any->Get("adress").String(), "x");
}

TEST(YamlFieldsTest, DuplicateKeysAreRefused) {
  EXPECT_EQ(Message(Root("a: 1\nb:\n  c: 1\n  c: 2\n")
                        .value()
                        .Get("b")
                        .StringMap()
                        .status()),
            "cfg.yaml:4: duplicate key \"b.c\"");
  EXPECT_EQ(Message(Root("a: 1\na: 2\n").status()), "cfg.yaml:2: duplicate key \"a\"");
  // A key given both directly and by a merge is not a duplicate: the own one wins.
  absl::StatusOr<Map> root = Root("base: &b {a: 1}\nm: {<<: *b, a: 2}\n");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_THAT(*root->Get("m").StringMap(), ElementsAre(Pair("a", "2")));
}

TEST(YamlFieldsTest, MergeKeysResolveWithYamlPrecedence) {
  absl::StatusOr<Map> root = Root(
      "x-base: &base {a: base, b: base, c: base}\n"
      "x-other: &other {b: other, d: other}\n"
      "x-nested: &nested {<<: *other, e: nested}\n"
      "one: {<<: *base, a: own}\n"
      "many: {<<: [*other, *base]}\n"
      "deep: {<<: *nested}\n"
      "quoted: {\"<<\": plain}\n");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_THAT(*root->Get("one").StringMap(),
              ElementsAre(Pair("a", "own"), Pair("b", "base"), Pair("c", "base")));
  // Earlier maps in a merge list win over later ones.
  EXPECT_THAT(*root->Get("many").StringMap(),
              ElementsAre(Pair("a", "base"), Pair("b", "other"), Pair("c", "base"),
                          Pair("d", "other")));
  EXPECT_THAT(*root->Get("deep").StringMap(),
              ElementsAre(Pair("b", "other"), Pair("d", "other"), Pair("e", "nested")));
  // A quoted "<<" is an ordinary key.
  EXPECT_THAT(*root->Get("quoted").StringMap(), ElementsAre(Pair("<<", "plain")));

  // Merged keys are checked like own keys, at the line that defines them, and
  // carry the path of the map they are merged into.
  absl::StatusOr<Map> strict = Map::Of(root->Get("one"), {"a", "b"});
  EXPECT_EQ(Message(strict.status()), "cfg.yaml:1: unknown key \"one.c\" (known in one: a, b)");
  absl::StatusOr<Map> deep = Map::OfAnyKeys(root->Get("deep"));
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(Message(deep->Get("d").Int().status()),
            "cfg.yaml:2: deep.d: expected an integer, got \"other\"");
}

TEST(YamlFieldsTest, BadMergesAreRefused) {
  EXPECT_EQ(Message(Map::OfAnyKeys(Root("m: {<<: [1, 2]}\n")->Get("m")).status()),
            "cfg.yaml:1: merge key \"<<\" in m must refer to a map, got \"1\"");
  EXPECT_EQ(Message(Map::OfAnyKeys(Root("m: {<<: scalar}\n")->Get("m")).status()),
            "cfg.yaml:1: merge key \"<<\" in m must refer to a map, got \"scalar\"");
  EXPECT_THAT(Message(Map::OfAnyKeys(Root("m: &a {x: 1, <<: *a}\n")->Get("m")).status()),
              HasSubstr("cfg.yaml:1: merge key \"<<\" in m refers to a map that contains it"));
  EXPECT_THAT(Message(Root("&a {x: 1, <<: {<<: *a}}\n").status()),
              HasSubstr("merge key \"<<\" in the top level refers to a map that contains it"));
}

TEST(YamlFieldsTest, AliasBombsAndDeepMergeChainsAreBounded) {
  // Ten maps each merging the previous one ten times: 10^9 merges unbounded.
  std::string bomb = "x0: &a0 {k: v}\n";
  for (int i = 1; i <= 9; ++i) {
    bomb += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " {<<: [";
    for (int j = 0; j < 10; ++j) bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]}\n";
  }
  bomb += "m: {<<: *a9}\n";
  absl::StatusOr<Map> root = Root(bomb);  // the root itself merges nothing
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(Message(Map::OfAnyKeys(root->Get("m")).status()),
            "cfg.yaml:11: merge keys in m expand to more than 256 maps (aliases of aliases?)");

  auto chain = [](int depth) {
    std::string text = "m0: &m0 {k: v}\n";
    for (int i = 1; i < depth; ++i) {
      text += "m" + std::to_string(i) + ": &m" + std::to_string(i) + " {<<: *m" +
              std::to_string(i - 1) + "}\n";
    }
    return text + "top: {<<: *m" + std::to_string(depth - 1) + "}\n";
  };
  absl::StatusOr<Map> ok = Root(chain(15));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*Map::OfAnyKeys(ok->Get("top"))->Get("k").String(), "v");
  absl::StatusOr<Map> too_deep = Root(chain(16));
  ASSERT_TRUE(too_deep.ok());
  EXPECT_EQ(Message(Map::OfAnyKeys(too_deep->Get("top")).status()),
            "cfg.yaml:17: merge keys in top are nested more than 16 deep");
}

TEST(YamlFieldsTest, AnchorsAndAliasesReadAsTheirTarget) {
  absl::StatusOr<Map> root =
      Root("limits: &l {memory: 1Gi}\na: *l\nsizes: [&s 2Mi, *s]\nname: &n node-1\nother: *n\n");
  ASSERT_TRUE(root.ok()) << root.status();
  absl::StatusOr<Map> a = Map::Of(root->Get("a"), {"memory"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a->Get("memory").Bytes(), 1 << 30);
  EXPECT_EQ(*root->Get("other").String(), "node-1");
  EXPECT_THAT(*root->Get("sizes").Strings(), ElementsAre("2Mi", "2Mi"));
  // An alias of an anchor never defined is a syntax error with its line.
  EXPECT_THAT(Message(Load(kSource, "a: 1\nb: *nowhere\n").status()),
              HasSubstr("cfg.yaml:2: not valid YAML"));
}

TEST(YamlFieldsTest, OddDocuments) {
  // Empty text, whitespace and comments: a null document, read as an empty map.
  for (const char* empty : {"", "   \n\n", "# only a comment\n", "---\n", "~\n"}) {
    absl::StatusOr<YAML::Node> doc = Load(kSource, empty);
    ASSERT_TRUE(doc.ok()) << empty << ": " << doc.status();
    EXPECT_TRUE(Value(kSource, *doc).absent()) << empty;
    absl::StatusOr<Map> map = Map::Of(Value(kSource, *doc), {"a"});
    ASSERT_TRUE(map.ok()) << empty;
    EXPECT_TRUE(map->entries().empty());
  }
  EXPECT_EQ(Message(Map::OfAnyKeys(Value(kSource, *Load(kSource, "- a\n- b\n"))).status()),
            "cfg.yaml:1: top level: expected a map, got a list");
  EXPECT_EQ(Message(Map::OfAnyKeys(Value(kSource, *Load(kSource, "just text\n"))).status()),
            "cfg.yaml:1: top level: expected a map, got \"just text\"");
  EXPECT_EQ(Message(Root("? [a, b]\n: c\n").status()),
            "cfg.yaml:1: a key in the top level must be a string, got a list");
  EXPECT_THAT(Message(Load(kSource, "a: [1, 2\n").status()), HasSubstr("cfg.yaml:"));
  EXPECT_THAT(Message(Load(kSource, "a: [1, 2\n").status()), HasSubstr("not valid YAML"));
  EXPECT_EQ(Message(Load(kSource, "a: 1\n---\nb: 2\n").status()),
            "cfg.yaml:3: holds 2 YAML documents; expected one");
  // JSON is YAML.
  absl::StatusOr<Map> json = Root(R"({"a": {"b": [1, 2]}})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_THAT(*Map::OfAnyKeys(json->Get("a"))->Get("b").Strings(), ElementsAre("1", "2"));
}

TEST(YamlFieldsTest, VeryDeepNestingIsAnErrorNotACrash) {
  // yaml-cpp's parser stops at 2,000 levels; far beyond that must not
  // overflow the stack, in flow and in block style.
  for (const std::string& open : {std::string("["), std::string("{a: ")}) {
    std::string text;
    for (int i = 0; i < 100'000; ++i) text += open;
    absl::StatusOr<YAML::Node> doc = Load(kSource, text);
    ASSERT_FALSE(doc.ok()) << open;
    EXPECT_THAT(Message(doc.status()), HasSubstr("cfg.yaml:1: not valid YAML")) << open;
  }
  std::string block;
  for (int i = 0; i < 5'000; ++i) block += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  EXPECT_FALSE(Load(kSource, block).ok());
  // Reasonable depth reads fine, with the full path in messages.
  std::string nested = "l0:\n";
  for (int i = 1; i < 50; ++i) {
    nested += std::string(static_cast<size_t>(2 * i), ' ') + "l" + std::to_string(i) + ":\n";
  }
  nested += std::string(100, ' ') + "leaf: x\n";
  absl::StatusOr<Map> map = Root(nested);
  ASSERT_TRUE(map.ok()) << map.status();
  for (int i = 0; i < 50; ++i) {
    map = Map::OfAnyKeys(map->Get("l" + std::to_string(i)));
    ASSERT_TRUE(map.ok()) << map.status();
  }
  EXPECT_THAT(Message(map->Get("leaf").Int().status()),
              HasSubstr("l0.l1.l2.l3.l4.l5.l6.l7.l8.l9.l10.l11.l12.l13.l14.l15.l16.l17.l18.l19."));
}

}  // namespace
}  // namespace neighborly::yaml
