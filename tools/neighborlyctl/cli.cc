// SPDX-License-Identifier: Apache-2.0
#include "tools/neighborlyctl/cli.h"

#include <fstream>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "tools/neighborlyctl/render.h"
#include "tools/neighborlyctl/yaml_render.h"

namespace neighborly::ctl {
namespace {

constexpr std::string_view kUsage =
    "Usage: neighborlyctl --server URL [-o table|json|yaml] [--timeout SECONDS]\n"
    "                     [--cacert FILE] [--cert FILE --key FILE] [--token-file FILE] COMMAND\n"
    "\n"
    "Reads Neighborly's view of the cluster from the extender's operator API.\n"
    "\n"
    "Commands:\n"
    "  nodes                 every node, highest contention first: score, worst L3\n"
    "                        pressure, worst memory bandwidth, pods by class,\n"
    "                        aggressors, telemetry age\n"
    "  node NAME             one node: per L3 domain, per NUMA node, per pod\n"
    "  explain POD [--limit N]\n"
    "                        the latest decisions for a pod (uid, namespace/name or\n"
    "                        name): per node the verdict and the terms behind it\n"
    "  workloads             workload profiles learned from running replicas\n"
    "  workload NS/KIND/NAME one profile, e.g. shop/Deployment/event-scan\n"
    "  memory NODE           memory.available against the kubelet's eviction\n"
    "                        thresholds, the eviction order and oom_score_adj checks\n"
    "  advise NS/KIND/NAME   which isolation layers the workload needs, what each\n"
    "                        costs, and a patch to its pod template\n"
    "  interference [NODE]   latency-critical victims (CPI above their baseline)\n"
    "                        and the suspected antagonists, with scores\n"
    "  rebalance             for persisting victims: which pod to move, and where\n"
    "\n"
    "Flags:\n"
    "  --server URL          extender address: the operator port, e.g.\n"
    "                        https://127.0.0.1:8889, or http://HOST:PORT without TLS\n"
    "                        (default: $NEIGHBORLY_SERVER)\n"
    "  --cacert FILE         CA that signed the server's certificate (https)\n"
    "  --cert FILE, --key FILE\n"
    "                        client certificate and key (https; the scheduler port)\n"
    "  --token-file FILE     bearer token for the operator port's /v1 API\n"
    "  -o, --output FORMAT   table (default), json or yaml\n"
    "  --timeout SECONDS     per request (default 5)\n"
    "  -h, --help            this text\n"
    "  --version             the version\n";

struct Options {
  std::string server;
  ClientCredentials credentials;
  std::string token_file;
  std::string output = "table";
  double timeout_seconds = 5;
  int limit = 10;
  std::vector<std::string> positional;
  bool help = false;
  bool version = false;
};

absl::StatusOr<Options> Parse(std::span<const std::string> args, const std::string& env_server) {
  Options o;
  o.server = env_server;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view name = arg;
    std::optional<std::string> value;
    if (arg.starts_with("--") && arg.find('=') != std::string_view::npos) {
      name = arg.substr(0, arg.find('='));
      value = std::string(arg.substr(arg.find('=') + 1));
    }
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (value) return *value;
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(Av(name), " needs a value"));
      }
      return args[++i];
    };
    if (name == "-h" || name == "--help") {
      o.help = true;
    } else if (name == "--version") {
      o.version = true;
    } else if (name == "--server") {
      absl::StatusOr<std::string> v = take();
      if (!v.ok()) return v.status();
      o.server = *v;
    } else if (name == "-o" || name == "--output") {
      absl::StatusOr<std::string> v = take();
      if (!v.ok()) return v.status();
      if (*v != "table" && *v != "json" && *v != "yaml") {
        return absl::InvalidArgumentError(absl::StrCat("-o ", *v, ": want table, json or yaml"));
      }
      o.output = *v;
    } else if (name == "--cacert" || name == "--cert" || name == "--key" ||
               name == "--token-file") {
      absl::StatusOr<std::string> v = take();
      if (!v.ok()) return v.status();
      if (v->empty()) return absl::InvalidArgumentError(absl::StrCat(Av(name), " needs a file"));
      std::string& target = name == "--cacert" ? o.credentials.ca_file
                            : name == "--cert" ? o.credentials.cert_file
                            : name == "--key"  ? o.credentials.key_file
                                               : o.token_file;
      target = *v;
    } else if (name == "--timeout") {
      absl::StatusOr<std::string> v = take();
      if (!v.ok()) return v.status();
      std::optional<double> t = ParseDouble(*v);
      if (!t || *t <= 0 || *t > 3600) {
        return absl::InvalidArgumentError(
            absl::StrCat("--timeout ", *v, ": want a number of seconds in (0, 3600]"));
      }
      o.timeout_seconds = *t;
    } else if (name == "--limit") {
      absl::StatusOr<std::string> v = take();
      if (!v.ok()) return v.status();
      std::optional<int> n = ParseInt<int>(*v);
      if (!n || *n < 1 || *n > 1000) {
        return absl::InvalidArgumentError(absl::StrCat("--limit ", *v, ": want 1..1000"));
      }
      o.limit = *n;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", Av(arg)));
    } else {
      o.positional.emplace_back(arg);
    }
  }
  return o;
}

struct Command {
  std::string path;
  absl::StatusOr<std::string> (*render)(std::string_view);
};

absl::StatusOr<Command> Resolve(const Options& o) {
  if (o.positional.empty()) {
    return absl::InvalidArgumentError(
        "no command (nodes, node NAME, explain POD, workloads, workload NS/KIND/NAME, memory "
        "NODE, interference [NODE])");
  }
  const std::string& cmd = o.positional[0];
  const size_t args = o.positional.size() - 1;
  if (cmd == "nodes") {
    if (args != 0) return absl::InvalidArgumentError("nodes takes no argument");
    return Command{"/v1/nodes", &RenderNodesTable};
  }
  if (cmd == "node") {
    if (args != 1) return absl::InvalidArgumentError("node needs exactly one NAME");
    return Command{absl::StrCat("/v1/nodes/", PercentEncode(o.positional[1])), &RenderNodeDetail};
  }
  if (cmd == "explain") {
    if (args != 1) return absl::InvalidArgumentError("explain needs exactly one POD");
    return Command{
        absl::StrCat("/v1/decisions?pod=", PercentEncode(o.positional[1]), "&limit=", o.limit),
        &RenderDecisions};
  }
  if (cmd == "advise") {
    if (args != 1) return absl::InvalidArgumentError("advise needs exactly one NS/KIND/NAME");
    std::vector<std::string> parts = absl::StrSplit(o.positional[1], '/');
    if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "advise \"", o.positional[1], "\": expected NS/KIND/NAME, e.g. shop/Deployment/web"));
    }
    return Command{absl::StrCat("/v1/advice/", PercentEncode(parts[0]), "/",
                                PercentEncode(parts[1]), "/", PercentEncode(parts[2])),
                   &RenderAdvice};
  }
  if (cmd == "rebalance") {
    if (args != 0) return absl::InvalidArgumentError("rebalance takes no argument");
    return Command{"/v1/rebalance", &RenderRebalance};
  }
  if (cmd == "memory") {
    if (args != 1) return absl::InvalidArgumentError("memory needs exactly one NODE");
    return Command{absl::StrCat("/v1/nodes/", PercentEncode(o.positional[1]), "/memory"),
                   &RenderNodeMemory};
  }
  if (cmd == "interference") {
    if (args > 1) return absl::InvalidArgumentError("interference takes at most one NODE");
    return Command{args == 1 ? absl::StrCat("/v1/interference?node=", PercentEncode(o.positional[1]))
                             : std::string("/v1/interference"),
                   &RenderInterference};
  }
  if (cmd == "workloads") {
    if (args != 0) return absl::InvalidArgumentError("workloads takes no argument");
    return Command{"/v1/workloads", &RenderWorkloadsTable};
  }
  if (cmd == "workload") {
    if (args != 1) return absl::InvalidArgumentError("workload needs exactly one NS/KIND/NAME");
    std::vector<std::string> parts = absl::StrSplit(o.positional[1], '/');
    if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "workload \"", o.positional[1], "\": expected NS/KIND/NAME, e.g. shop/Deployment/web"));
    }
    return Command{absl::StrCat("/v1/workloads/", PercentEncode(parts[0]), "/",
                                PercentEncode(parts[1]), "/", PercentEncode(parts[2])),
                   &RenderWorkloadDetail};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command ", cmd,
                   " (nodes, node NAME, explain POD, workloads, workload NS/KIND/NAME, memory NODE, "
                   "interference [NODE])"));
}

// The first non-blank line of the file (a Secret's value, a token file).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--token-file: cannot read ", path));
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view token = Trim(line);
    if (!token.empty()) return std::string(token);
  }
  return absl::InvalidArgumentError(absl::StrCat("--token-file: ", path, " holds no token"));
}

std::string OneLine(absl::string_view message) {
  std::string text(message);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

int RunCli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
           const std::string& env_server, ClientFactory factory) {
  absl::StatusOr<Options> options = Parse(args, env_server);
  if (!options.ok()) {
    err << "neighborlyctl: " << OneLine(options.status().message()) << " (neighborlyctl --help)\n";
    return kExitUsage;
  }
  if (options->help) {
    out << kUsage;
    return kExitOk;
  }
  if (options->version) {
    out << "neighborlyctl " << NEIGHBORLY_VERSION << "\n";
    return kExitOk;
  }
  absl::StatusOr<Command> command = Resolve(*options);
  if (!command.ok()) {
    err << "neighborlyctl: " << OneLine(command.status().message()) << " (neighborlyctl --help)\n";
    return kExitUsage;
  }
  if (options->server.empty()) {
    err << "neighborlyctl: no server: pass --server URL or set NEIGHBORLY_SERVER\n";
    return kExitUsage;
  }
  absl::StatusOr<ServerUrl> url = ParseServerUrl(options->server);
  if (!url.ok()) {
    err << "neighborlyctl: " << OneLine(url.status().message()) << "\n";
    return kExitUsage;
  }
  url->credentials = options->credentials;
  if (!url->https && (!url->credentials.ca_file.empty() || !url->credentials.cert_file.empty() ||
                      !url->credentials.key_file.empty())) {
    err << "neighborlyctl: --cacert, --cert and --key need an https:// server, not " << url->text
        << "\n";
    return kExitUsage;
  }
  if (url->credentials.cert_file.empty() != url->credentials.key_file.empty()) {
    err << "neighborlyctl: --cert and --key go together\n";
    return kExitUsage;
  }
  if (!options->token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(options->token_file);
    if (!token.ok()) {
      err << "neighborlyctl: " << OneLine(token.status().message()) << "\n";
      return kExitUsage;
    }
    url->credentials.bearer_token = *token;
  }
  const absl::Duration timeout = absl::Seconds(options->timeout_seconds);
  std::unique_ptr<ApiClient> client =
      factory ? factory(*url, timeout) : std::make_unique<HttpApiClient>(*url, timeout);
  absl::StatusOr<std::string> body = client->Get(command->path);
  if (!body.ok()) {
    err << "neighborlyctl: " << OneLine(body.status().message()) << "\n";
    return kExitFailure;
  }
  absl::StatusOr<std::string> text = options->output == "json"   ? RenderJson(*body)
                                     : options->output == "yaml" ? RenderYaml(*body)
                                                                 : command->render(*body);
  if (!text.ok()) {
    err << "neighborlyctl: bad answer from " << url->text << command->path << ": "
        << OneLine(text.status().message()) << "\n";
    return kExitFailure;
  }
  out << *text;
  return kExitOk;
}

}  // namespace neighborly::ctl
