// A scratch host tree for tests: a fresh directory under $TMPDIR (or /tmp)
// that a RealFilesystem can be rooted at, with helpers to lay out files.
//
//   TestTree tree;
//   tree.Write("/sys/devices/system/cpu/online", "0-3\n");
//   std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SYS_TEST_TREE_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SYS_TEST_TREE_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace neighborly::agent {

class TestTree {
 public:
  TestTree() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/neighborly-tree-XXXXXX";
    root_ = mkdtemp(pattern.data());
  }
  ~TestTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  TestTree(const TestTree&) = delete;
  TestTree& operator=(const TestTree&) = delete;

  const std::string& root() const { return root_; }
  std::string Path(std::string_view host_path) const {
    return root_ + "/" + std::string(host_path.substr(host_path.starts_with('/') ? 1 : 0));
  }
  void Write(std::string_view host_path, std::string_view content) const {
    const std::filesystem::path path = Path(host_path);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  }
  void MkDir(std::string_view host_path) const {
    std::filesystem::create_directories(Path(host_path));
  }
  void Remove(std::string_view host_path) const { std::filesystem::remove_all(Path(host_path)); }
  // Copies a fixture tree (for example test/testdata/hosts/intel-mbm) into this one.
  void CopyFrom(const std::string& fixture_dir) const {
    std::filesystem::copy(fixture_dir, root_,
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
  }

 private:
  std::string root_;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SYS_TEST_TREE_H_
