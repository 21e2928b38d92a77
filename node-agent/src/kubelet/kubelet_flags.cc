// The kubelet's command line: which config file it reads and the
// resource-manager flags that override it (issue 14, docs/telemetry.md).
#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "node-agent/src/kubelet/kubelet_state.h"

namespace neighborly::agent {
namespace {

// The flags read; a bare "--flag value" consumes the next argument only for these
// (a boolean flag such as --fail-swap-on takes none).
const std::set<std::string, std::less<>>& KnownFlags() {
  static const auto* flags = new std::set<std::string, std::less<>>{
      "config",
      "cpu-manager-policy",
      "cpu-manager-policy-options",
      "topology-manager-policy",
      "topology-manager-scope",
      "topology-manager-policy-options",
      "memory-manager-policy",
      "reserved-memory",
      "reserved-cpus",
  };
  return *flags;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  absl::AsciiStrToLower(&out);
  return out;
}

// Splits on `sep`, keeping empty pieces only when `keep_empty`.
std::vector<std::string_view> Split(std::string_view text, char sep, bool keep_empty) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view piece = text.substr(start, end - start);
    if (keep_empty || !Trim(piece).empty()) out.push_back(piece);
    start = end + 1;
  }
  return out;
}

}  // namespace

absl::StatusOr<KubeletCommandLine> ParseKubeletCmdline(std::string_view cmdline) {
  std::vector<std::string_view> argv = Split(cmdline, '\0', /*keep_empty=*/true);
  while (!argv.empty() && argv.back().empty()) argv.pop_back();
  if (argv.empty()) return absl::InvalidArgumentError("kubelet cmdline: empty");
  std::string_view program = argv[0];
  if (size_t slash = program.rfind('/'); slash != std::string_view::npos) {
    program = program.substr(slash + 1);
  }
  if (program != "kubelet") {
    return absl::InvalidArgumentError(
        absl::StrCat("cmdline: \"", Av(program.substr(0, 64)), "\" is not the kubelet"));
  }
  KubeletCommandLine out;
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view arg = argv[i];
    if (!arg.starts_with("-")) continue;
    arg.remove_prefix(arg.starts_with("--") ? 2 : 1);
    std::string_view name = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (!KnownFlags().contains(name)) continue;
    if (!has_value) {
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("kubelet cmdline: --", Av(name), " has no value"));
      }
      value = argv[++i];
    }
    if (name == "reserved-memory") {
      out.reserved_memory.emplace_back(value);
    } else if (name == "config") {
      out.config_path = std::string(value);
    } else {
      out.flags[std::string(name)] = std::string(value);
    }
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseOptionList(std::string_view flag,
                                                                   std::string_view text) {
  std::map<std::string, std::string> out;
  for (std::string_view item : Split(text, ',', /*keep_empty=*/false)) {
    item = Trim(item);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubelet flag --", Av(flag), ": \"", Av(item), "\" is not key=value"));
    }
    out[std::string(Trim(item.substr(0, eq)))] = std::string(Trim(item.substr(eq + 1)));
  }
  return out;
}

absl::Status ParseReservedMemoryFlag(std::string_view text, std::map<uint32_t, uint64_t>& out) {
  for (std::string_view group : Split(text, ';', /*keep_empty=*/false)) {
    group = Trim(group);
    const size_t colon = group.find(':');
    std::optional<uint32_t> numa =
        colon == std::string_view::npos ? std::nullopt : ParseInt<uint32_t>(group.substr(0, colon));
    if (!numa) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kubelet flag --reserved-memory: \"", Av(group), "\" does not start with <NUMA node>:"));
    }
    absl::StatusOr<std::map<std::string, std::string>> limits =
        ParseOptionList("reserved-memory", group.substr(colon + 1));
    if (!limits.ok()) return limits.status();
    for (const auto& [type, quantity] : *limits) {
      absl::StatusOr<int64_t> bytes = ParseByteQuantity(quantity);
      if (!bytes.ok() || *bytes < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "kubelet flag --reserved-memory: ", type, "=\"", quantity,
            "\": ", bytes.ok() ? absl::string_view("negative") : bytes.status().message()));
      }
      if (type == "memory") out[*numa] += static_cast<uint64_t>(*bytes);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> ParseEvictionFlag(std::string_view flag,
                                                                     std::string_view text) {
  std::map<std::string, std::string> out;
  for (std::string_view item : Split(text, ',', /*keep_empty=*/false)) {
    const size_t lt = item.find('<');
    if (lt == std::string_view::npos || lt == 0 || lt + 1 >= item.size()) {
      return absl::InvalidArgumentError(absl::StrCat("kubelet flag --", Av(flag), ": \"", Av(item),
                                                     "\" is not SIGNAL<VALUE"));
    }
    out[std::string(Trim(item.substr(0, lt)))] = std::string(Trim(item.substr(lt + 1)));
  }
  return out;
}

absl::Status ApplyKubeletFlags(const KubeletCommandLine& cmdline, KubeletConfig& config) {
  auto flag = [&](std::string_view name) -> const std::string* {
    auto it = cmdline.flags.find(std::string(name));
    return it == cmdline.flags.end() ? nullptr : &it->second;
  };
  for (auto [name, out] : {std::pair<const char*, std::map<std::string, std::string>*>{
                               "eviction-hard", &config.eviction_hard},
                           {"eviction-soft", &config.eviction_soft}}) {
    const std::string* v = flag(name);
    if (v == nullptr) continue;
    absl::StatusOr<std::map<std::string, std::string>> thresholds = ParseEvictionFlag(name, *v);
    if (!thresholds.ok()) return thresholds.status();
    *out = *std::move(thresholds);
  }
  if (const std::string* v = flag("cpu-manager-policy")) config.cpu_manager_policy = Lower(*v);
  if (const std::string* v = flag("topology-manager-policy")) {
    config.topology_manager_policy = Lower(*v);
  }
  if (const std::string* v = flag("topology-manager-scope")) {
    config.topology_manager_scope = Lower(*v);
  }
  if (const std::string* v = flag("memory-manager-policy")) {
    config.memory_manager_policy = Lower(*v);
  }
  if (const std::string* v = flag("reserved-cpus")) {
    absl::StatusOr<CpuSet> cpus = ParseCpuList(*v);
    if (!cpus.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubelet flag --reserved-cpus: ", Av(Sv(cpus.status().message()))));
    }
    config.reserved_system_cpus = FormatCpuList(*cpus);
  }
  for (auto [name, out] :
       {std::pair<const char*, std::map<std::string, std::string>*>{
            "cpu-manager-policy-options", &config.cpu_manager_policy_options},
        {"topology-manager-policy-options", &config.topology_manager_policy_options}}) {
    const std::string* v = flag(name);
    if (v == nullptr) continue;
    absl::StatusOr<std::map<std::string, std::string>> options = ParseOptionList(name, *v);
    if (!options.ok()) return options.status();
    *out = std::move(*options);  // a flag replaces the file's map, as the kubelet does
  }
  if (!cmdline.reserved_memory.empty()) {
    std::map<uint32_t, uint64_t> reserved;
    for (const std::string& value : cmdline.reserved_memory) {
      if (absl::Status s = ParseReservedMemoryFlag(value, reserved); !s.ok()) return s;
    }
    config.reserved_memory_bytes = std::move(reserved);
  }
  return absl::OkStatus();
}

absl::StatusOr<KubeletCommandLine> FindKubeletProcess(const Filesystem& fs) {
  absl::StatusOr<std::vector<DirEntry>> entries = fs.ListDir("/proc");
  if (!entries.ok()) return entries.status();
  std::vector<int> pids;
  for (const DirEntry& entry : *entries) {
    if (std::optional<int> pid = ParseInt<int>(entry.name); pid && *pid > 0) pids.push_back(*pid);
  }
  std::sort(pids.begin(), pids.end());
  for (int pid : pids) {
    absl::StatusOr<std::string> text = fs.ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    if (!text.ok() || text->empty()) continue;  // gone, or a kernel thread
    std::string_view argv0(text->data(), std::min(text->find('\0'), text->size()));
    if (!(argv0 == "kubelet" || argv0.ends_with("/kubelet"))) continue;
    absl::StatusOr<KubeletCommandLine> cmdline = ParseKubeletCmdline(*text);
    if (!cmdline.ok()) return cmdline.status();
    cmdline->pid = pid;
    return cmdline;
  }
  return absl::NotFoundError("no kubelet process under /proc");
}

}  // namespace neighborly::agent
