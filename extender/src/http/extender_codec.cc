// Decoding half of the extender codec. This file (and only this one) includes
// the simdjson On-Demand API; it is compiled for x86-64-v3 (see CMakeLists.txt)
// so that On-Demand uses its AVX2 kernel instead of the scalar fallback.
//
// Two passes over the body: simdjson's DOM parser validates all of it (syntax
// inside values we never look at, UTF-8, nesting depth, a single value), which
// On-Demand alone does not do for skipped values; then On-Demand walks only the
// parts the model needs and records where each Node item starts and ends.
#include "extender/src/http/extender_codec.h"

#include <simdjson.h>

#include <algorithm>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/quantity.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

namespace od = simdjson::ondemand;

std::string_view TypeName(od::json_type t) {
  switch (t) {
    case od::json_type::object:
      return "object";
    case od::json_type::array:
      return "array";
    case od::json_type::string:
      return "string";
    case od::json_type::number:
      return "number";
    case od::json_type::boolean:
      return "boolean";
    case od::json_type::null:
      return "null";
  }
  return "unknown";
}

absl::Status Invalid(std::string_view path, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(Av(path), ": ", Av(what)));
}

absl::Status SjError(std::string_view path, simdjson::error_code e) {
  return Invalid(path, simdjson::error_message(e));
}

#define NB_CONCAT_INNER(a, b) a##b
#define NB_CONCAT(a, b) NB_CONCAT_INNER(a, b)
#define NB_RETURN_IF_ERROR_IMPL(var, expr) \
  do {                                     \
    absl::Status var = (expr);             \
    if (!var.ok()) return var;             \
  } while (0)
// Unique variable names: the macro nests inside lambdas passed to itself.
#define NB_RETURN_IF_ERROR(expr) NB_RETURN_IF_ERROR_IMPL(NB_CONCAT(nb_status_, __COUNTER__), expr)

// The type of `v` (without consuming it).
absl::Status TypeOf(od::value& v, std::string_view path, od::json_type& t) {
  if (auto e = v.type().get(t)) return SjError(path, e);
  return absl::OkStatus();
}

absl::Status WrongType(std::string_view path, std::string_view want, od::json_type got) {
  return absl::InvalidArgumentError(absl::StrCat("wrong type at ", Av(path), ": expected ",
                                                 Av(want), ", got ", Av(TypeName(got))));
}

// A string (null reads as ""), as Go decodes into a string field.
absl::Status GetString(od::value& v, std::string_view path, std::string_view& out) {
  od::json_type t;
  NB_RETURN_IF_ERROR(TypeOf(v, path, t));
  if (t == od::json_type::null) {
    out = {};
    return absl::OkStatus();
  }
  if (t != od::json_type::string) return WrongType(path, "string", t);
  if (auto e = v.get_string().get(out)) return SjError(path, e);
  return absl::OkStatus();
}

// Calls fn(key, value) for each member; null is an empty object.
template <typename Fn>
absl::Status ForEachField(od::value& v, std::string_view path, Fn&& fn) {
  od::json_type t;
  NB_RETURN_IF_ERROR(TypeOf(v, path, t));
  if (t == od::json_type::null) return absl::OkStatus();
  if (t != od::json_type::object) return WrongType(path, "object", t);
  od::object obj;
  if (auto e = v.get_object().get(obj)) return SjError(path, e);
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return SjError(path, e);
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return SjError(path, e);
    NB_RETURN_IF_ERROR(fn(key, field.value()));
  }
  return absl::OkStatus();
}

// Calls fn(index, value) for each element; null is an empty array.
template <typename Fn>
absl::Status ForEachElement(od::value& v, std::string_view path, Fn&& fn) {
  od::json_type t;
  NB_RETURN_IF_ERROR(TypeOf(v, path, t));
  if (t == od::json_type::null) return absl::OkStatus();
  if (t != od::json_type::array) return WrongType(path, "array", t);
  od::array arr;
  if (auto e = v.get_array().get(arr)) return SjError(path, e);
  size_t index = 0;
  for (auto element_result : arr) {
    od::value element;
    if (auto e = std::move(element_result).get(element)) return SjError(path, e);
    NB_RETURN_IF_ERROR(fn(index, element));
    ++index;
  }
  return absl::OkStatus();
}

absl::Status GetStringMap(od::value& v, std::string_view path,
                          std::map<std::string, std::string>& out) {
  return ForEachField(v, path, [&](std::string_view key, od::value value) {
    std::string_view text;
    NB_RETURN_IF_ERROR(GetString(value, absl::StrCat(Av(path), ".", Av(key)), text));
    out[std::string(key)] = std::string(text);
    return absl::OkStatus();
  });
}

// --- Pod ---

struct ContainerResources {
  std::optional<int64_t> request_cpu_millicores, request_memory_bytes;
  std::optional<int64_t> limit_cpu_millicores, limit_memory_bytes;
};

// A Quantity: a string, or (as Go's Quantity.UnmarshalJSON accepts) a bare number.
absl::Status GetQuantity(od::value& v, std::string_view path, bool millis,
                         std::optional<int64_t>& out) {
  od::json_type t;
  NB_RETURN_IF_ERROR(TypeOf(v, path, t));
  std::string_view text;
  if (t == od::json_type::null) return absl::OkStatus();
  if (t == od::json_type::string) {
    if (auto e = v.get_string().get(text)) return SjError(path, e);
  } else if (t == od::json_type::number) {
    text = Trim(v.raw_json_token());
  } else {
    return WrongType(path, "quantity string", t);
  }
  absl::StatusOr<int64_t> parsed = millis ? ParseMilliQuantity(text) : ParseByteQuantity(text);
  if (!parsed.ok()) return Invalid(path, Sv(parsed.status().message()));
  out = *parsed;
  return absl::OkStatus();
}

absl::Status GetResourceList(od::value& v, std::string_view path, std::optional<int64_t>& cpu,
                             std::optional<int64_t>& memory) {
  return ForEachField(v, path, [&](std::string_view key, od::value value) {
    // Resource names are case-sensitive map keys, not struct fields.
    if (key == "cpu") return GetQuantity(value, absl::StrCat(Av(path), ".cpu"), true, cpu);
    if (key == "memory") {
      return GetQuantity(value, absl::StrCat(Av(path), ".memory"), false, memory);
    }
    return absl::OkStatus();
  });
}

absl::Status GetContainers(od::value& v, std::string_view path,
                           std::vector<ContainerResources>& out) {
  return ForEachElement(v, path, [&](size_t index, od::value container) {
    const std::string element_path = absl::StrCat(Av(path), "[", index, "]");
    ContainerResources& resources = out.emplace_back();
    return ForEachField(container, element_path, [&](std::string_view key, od::value value) {
      if (!EqualsIgnoreCase(key, "resources")) return absl::OkStatus();
      const std::string resources_path = absl::StrCat(element_path, ".resources");
      return ForEachField(value, resources_path, [&](std::string_view rkey, od::value rvalue) {
        if (EqualsIgnoreCase(rkey, "requests")) {
          return GetResourceList(rvalue, absl::StrCat(resources_path, ".requests"),
                                 resources.request_cpu_millicores, resources.request_memory_bytes);
        }
        if (EqualsIgnoreCase(rkey, "limits")) {
          return GetResourceList(rvalue, absl::StrCat(resources_path, ".limits"),
                                 resources.limit_cpu_millicores, resources.limit_memory_bytes);
        }
        return absl::OkStatus();
      });
    });
  });
}

QosClass ParseQosClass(std::string_view text) {
  if (text == "Guaranteed") return QosClass::kGuaranteed;
  if (text == "Burstable") return QosClass::kBurstable;
  if (text == "BestEffort") return QosClass::kBestEffort;
  return QosClass::kUnknown;
}

// Kubernetes' GetPodQOS over cpu and memory (requests defaulted from limits,
// as the API server does before the scheduler sees the pod).
QosClass DeriveQos(const std::vector<ContainerResources>& all) {
  bool any = false;
  bool guaranteed = true;
  for (const ContainerResources& c : all) {
    const auto positive = [](const std::optional<int64_t>& q) { return q.has_value() && *q > 0; };
    any = any || positive(c.request_cpu_millicores) || positive(c.request_memory_bytes) ||
          positive(c.limit_cpu_millicores) || positive(c.limit_memory_bytes);
    if (!positive(c.limit_cpu_millicores) || !positive(c.limit_memory_bytes)) {
      guaranteed = false;
      continue;
    }
    const int64_t request_cpu = c.request_cpu_millicores.value_or(*c.limit_cpu_millicores);
    const int64_t request_memory = c.request_memory_bytes.value_or(*c.limit_memory_bytes);
    if (request_cpu != *c.limit_cpu_millicores || request_memory != *c.limit_memory_bytes) {
      guaranteed = false;
    }
  }
  if (!any) return QosClass::kBestEffort;
  return guaranteed ? QosClass::kGuaranteed : QosClass::kBurstable;
}

absl::Status DecodePod(od::value& v, IncomingPod& pod) {
  std::vector<ContainerResources> containers;
  std::vector<ContainerResources> init_containers;
  std::string_view qos_text;
  NB_RETURN_IF_ERROR(ForEachField(v, "Pod", [&](std::string_view key, od::value value) {
    if (EqualsIgnoreCase(key, "metadata")) {
      return ForEachField(value, "Pod.metadata", [&](std::string_view mkey, od::value mvalue) {
        std::string_view text;
        if (EqualsIgnoreCase(mkey, "uid")) {
          NB_RETURN_IF_ERROR(GetString(mvalue, "Pod.metadata.uid", text));
          pod.uid = std::string(text);
        } else if (EqualsIgnoreCase(mkey, "name")) {
          NB_RETURN_IF_ERROR(GetString(mvalue, "Pod.metadata.name", text));
          pod.name = std::string(text);
        } else if (EqualsIgnoreCase(mkey, "namespace")) {
          NB_RETURN_IF_ERROR(GetString(mvalue, "Pod.metadata.namespace", text));
          pod.namespace_name = std::string(text);
        } else if (EqualsIgnoreCase(mkey, "labels")) {
          return GetStringMap(mvalue, "Pod.metadata.labels", pod.labels);
        } else if (EqualsIgnoreCase(mkey, "annotations")) {
          return GetStringMap(mvalue, "Pod.metadata.annotations", pod.annotations);
        }
        return absl::OkStatus();
      });
    }
    if (EqualsIgnoreCase(key, "spec")) {
      return ForEachField(value, "Pod.spec", [&](std::string_view skey, od::value svalue) {
        if (EqualsIgnoreCase(skey, "containers")) {
          return GetContainers(svalue, "Pod.spec.containers", containers);
        }
        if (EqualsIgnoreCase(skey, "initContainers")) {
          return GetContainers(svalue, "Pod.spec.initContainers", init_containers);
        }
        return absl::OkStatus();
      });
    }
    if (EqualsIgnoreCase(key, "status")) {
      return ForEachField(value, "Pod.status", [&](std::string_view skey, od::value svalue) {
        if (EqualsIgnoreCase(skey, "qosClass")) {
          return GetString(svalue, "Pod.status.qosClass", qos_text);
        }
        return absl::OkStatus();
      });
    }
    return absl::OkStatus();
  }));

  // Effective requests: the sum over containers, or the largest init container
  // if that is larger (init containers run one at a time, before the others).
  int64_t cpu = 0, memory = 0, init_cpu = 0, init_memory = 0;
  const auto request = [](const std::optional<int64_t>& req, const std::optional<int64_t>& lim) {
    return req.has_value() ? *req : lim.value_or(0);
  };
  for (const ContainerResources& c : containers) {
    cpu += request(c.request_cpu_millicores, c.limit_cpu_millicores);
    memory += request(c.request_memory_bytes, c.limit_memory_bytes);
  }
  for (const ContainerResources& c : init_containers) {
    init_cpu = std::max(init_cpu, request(c.request_cpu_millicores, c.limit_cpu_millicores));
    init_memory = std::max(init_memory, request(c.request_memory_bytes, c.limit_memory_bytes));
  }
  pod.cpu_request_millicores = std::max(cpu, init_cpu);
  pod.memory_request_bytes = std::max(memory, init_memory);

  pod.qos = ParseQosClass(qos_text);
  if (pod.qos == QosClass::kUnknown) {
    containers.insert(containers.end(), init_containers.begin(), init_containers.end());
    pod.qos = DeriveQos(containers);
  }
  pod.wants_exclusive_cpus = pod.qos == QosClass::kGuaranteed && pod.cpu_request_millicores > 0 &&
                             pod.cpu_request_millicores % 1000 == 0;
  return absl::OkStatus();
}

// --- Nodes ---

std::string_view TrimTrailingSpace(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// One NodeList item: its metadata.name and its bytes as received.
absl::Status DecodeNodeItem(od::value& item, size_t index, ExtenderArgs& out) {
  const std::string path = absl::StrCat("Nodes.items[", index, "]");
  od::json_type t;
  NB_RETURN_IF_ERROR(TypeOf(item, path, t));
  if (t != od::json_type::object) return WrongType(path, "object (a v1.Node)", t);
  od::object obj;
  if (auto e = item.get_object().get(obj)) return SjError(path, e);
  std::string_view name;
  bool have_name = false;
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return SjError(path, e);
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return SjError(path, e);
    if (!EqualsIgnoreCase(key, "metadata")) continue;
    const std::string metadata_path = absl::StrCat(path, ".metadata");
    NB_RETURN_IF_ERROR(
        ForEachField(field.value(), metadata_path, [&](std::string_view mkey, od::value mvalue) {
          if (!EqualsIgnoreCase(mkey, "name")) return absl::OkStatus();
          have_name = true;
          return GetString(mvalue, absl::StrCat(metadata_path, ".name"), name);
        }));
    break;  // the rest of the item is only copied, never inspected
  }
  if (!have_name || name.empty()) return Invalid(path, "metadata.name is missing or empty");
  std::string_view raw;
  if (auto e = obj.raw_json().get(raw)) return SjError(path, e);
  out.node_names.push_back(name);
  out.raw_nodes.push_back(TrimTrailingSpace(raw));
  return absl::OkStatus();
}

absl::Status DecodeNodeList(od::value& v, ExtenderArgs& out) {
  od::json_type t;
  NB_RETURN_IF_ERROR(TypeOf(v, "Nodes", t));
  if (t == od::json_type::null) return absl::OkStatus();
  if (t != od::json_type::object) return WrongType("Nodes", "object (a v1.NodeList) or null", t);
  out.has_nodes = true;
  out.node_names.clear();
  out.raw_nodes.clear();
  return ForEachField(v, "Nodes", [&](std::string_view key, od::value value) {
    if (!EqualsIgnoreCase(key, "items")) return absl::OkStatus();
    out.node_names.clear();
    out.raw_nodes.clear();
    return ForEachElement(value, "Nodes.items", [&](size_t index, od::value item) {
      return DecodeNodeItem(item, index, out);
    });
  });
}

absl::Status DecodeNodeNames(od::value& v, ExtenderArgs& out) {
  od::json_type t;
  NB_RETURN_IF_ERROR(TypeOf(v, "NodeNames", t));
  if (t == od::json_type::null) return absl::OkStatus();
  if (t != od::json_type::array) return WrongType("NodeNames", "array of strings or null", t);
  out.has_node_names = true;
  out.node_names.clear();
  od::array arr;
  if (auto e = v.get_array().get(arr)) return SjError("NodeNames", e);
  for (auto element_result : arr) {
    od::value element;
    if (auto e = std::move(element_result).get(element)) return SjError("NodeNames", e);
    std::string_view name;
    // Fast path: get_string fails with INCORRECT_TYPE on anything but a string.
    if (auto e = element.get_string().get(name)) {
      const std::string path = absl::StrCat("NodeNames[", out.node_names.size(), "]");
      if (e == simdjson::INCORRECT_TYPE) {
        od::json_type et;
        NB_RETURN_IF_ERROR(TypeOf(element, path, et));
        return WrongType(path, "string", et);
      }
      return SjError(path, e);
    }
    out.node_names.push_back(name);
  }
  return absl::OkStatus();
}

// Where the first JSON value in `s` ends (one past it), or npos if it never
// closes. Only used to explain a syntax error, never on the success path.
size_t FirstValueEnd(std::string_view s) {
  size_t i = s.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos) return std::string_view::npos;
  if (s[i] != '{' && s[i] != '[') return std::string_view::npos;
  int depth = 0;
  bool in_string = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

absl::Status SyntaxError(std::string_view body, simdjson::error_code e) {
  switch (e) {
    case simdjson::EMPTY:
      return absl::InvalidArgumentError(
          "empty request body: expected a JSON object (ExtenderArgs)");
    case simdjson::UTF8_ERROR:
      return absl::InvalidArgumentError("request body is not valid UTF-8");
    case simdjson::DEPTH_ERROR:
      return absl::InvalidArgumentError(
          absl::StrCat("JSON nested deeper than ", ExtenderCodec::kMaxDepth, " levels"));
    case simdjson::CAPACITY:
      return absl::InvalidArgumentError("request body too large for the JSON parser");
    default:
      break;
  }
  const size_t end = FirstValueEnd(body);
  if (end == std::string_view::npos) {
    if (e == simdjson::TAPE_ERROR || e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT ||
        e == simdjson::UNCLOSED_STRING) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed JSON (truncated or unbalanced): ", simdjson::error_message(e)));
    }
  } else if (Trim(body.substr(end)).size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trailing data after the JSON value at byte ", end));
  }
  return absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", simdjson::error_message(e)));
}

}  // namespace

void ExtenderArgs::Clear() {
  pod = IncomingPod();
  has_nodes = false;
  has_node_names = false;
  node_names.clear();
  raw_nodes.clear();
}

struct ExtenderCodec::Impl {
  simdjson::dom::parser validator;
  od::parser parser;
};

ExtenderCodec::ExtenderCodec() : impl_(std::make_unique<Impl>()) {}
ExtenderCodec::~ExtenderCodec() = default;

absl::Status ExtenderCodec::Decode(const RequestBody& body, ExtenderArgs& out) {
  out.Clear();
  const std::string_view text = body.view();
  if (Trim(text).empty()) {
    return absl::InvalidArgumentError("empty request body: expected a JSON object (ExtenderArgs)");
  }
  if (body.capacity() < text.size() + kJsonPadding) {
    return absl::InternalError("request body is not padded for the JSON parser");
  }

  // Pass 1: full validation.
  if (impl_->validator.capacity() < text.size() || impl_->validator.max_depth() != kMaxDepth) {
    if (auto e = impl_->validator.allocate(std::max<size_t>(text.size(), 4096), kMaxDepth)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate the JSON parser: ", simdjson::error_message(e)));
    }
  }
  simdjson::dom::element root;
  if (auto e = impl_->validator.parse(text.data(), text.size(), false).get(root)) {
    return SyntaxError(text, e);
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        "request body must be a JSON object (ExtenderArgs with Pod and Nodes or NodeNames)");
  }

  // Pass 2: extraction.
  od::document doc;
  if (auto e = impl_->parser.iterate(text.data(), text.size(), body.capacity()).get(doc)) {
    return SjError("request body", e);
  }
  od::object top;
  if (auto e = doc.get_object().get(top)) return SjError("request body", e);
  bool have_pod = false;
  for (auto field_result : top) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return SjError("request body", e);
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return SjError("request body", e);
    od::value value = field.value();
    if (EqualsIgnoreCase(key, "Pod")) {
      od::json_type t;
      NB_RETURN_IF_ERROR(TypeOf(value, "Pod", t));
      if (t == od::json_type::null) {
        have_pod = false;
        continue;
      }
      if (t != od::json_type::object) return WrongType("Pod", "object (a v1.Pod)", t);
      out.pod = IncomingPod();
      NB_RETURN_IF_ERROR(DecodePod(value, out.pod));
      have_pod = true;
    } else if (EqualsIgnoreCase(key, "Nodes")) {
      NB_RETURN_IF_ERROR(DecodeNodeList(value, out));
    } else if (EqualsIgnoreCase(key, "NodeNames")) {
      if (out.has_nodes) {
        // Keep the item names of Nodes; NodeNames is reported as both-present.
        od::json_type t;
        NB_RETURN_IF_ERROR(TypeOf(value, "NodeNames", t));
        if (t == od::json_type::null) continue;
        if (t != od::json_type::array) return WrongType("NodeNames", "array of strings or null", t);
        out.has_node_names = true;
        continue;
      }
      NB_RETURN_IF_ERROR(DecodeNodeNames(value, out));
    }
  }
  if (!have_pod) return absl::InvalidArgumentError("Pod is missing or null");
  return absl::OkStatus();
}

}  // namespace neighborly::extender
