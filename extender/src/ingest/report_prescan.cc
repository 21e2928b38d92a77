#include "extender/src/ingest/report_prescan.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/message.h"
#include "google/protobuf/wire_format_lite.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {
namespace {

namespace pb = ::google::protobuf;
using pb::internal::WireFormatLite;

// What the parsed message holds beyond its message objects, in bytes (protobuf
// 3.21 on 64-bit: a std::string is 32 bytes plus its heap buffer; repeated
// fields double their capacity; a map node holds key, value and links).
constexpr size_t kStringBytes = 32;
constexpr size_t kRepeatedPointerBytes = 16;  // pointer, with the capacity's doubling
constexpr size_t kRepeatedScalarBytes = 16;   // up to 8 bytes, doubled
constexpr size_t kMapEntryBytes = 96;         // node, links and bucket share
constexpr size_t kUnknownFieldBytes = 48;     // UnknownField, its vector's share
constexpr size_t kMaxNodeNameBytes = 1024;    // longer is refused by validation anyway
constexpr int kMaxDepth = 16;                 // the schema nests 4 deep

// Every message type reachable from `d`, with its default instance's size.
void CollectSizes(const pb::Descriptor* d,
                  absl::flat_hash_map<const pb::Descriptor*, size_t>& sizes) {
  if (sizes.contains(d)) return;
  const pb::Message* prototype = pb::MessageFactory::generated_factory()->GetPrototype(d);
  sizes[d] = prototype != nullptr ? prototype->SpaceUsedLong() : 256;
  for (int i = 0; i < d->field_count(); ++i) {
    if (const pb::Descriptor* sub = d->field(i)->message_type(); sub != nullptr) {
      CollectSizes(sub, sizes);
    }
  }
}

bool IsScalar(const pb::FieldDescriptor* field) {
  return field->cpp_type() != pb::FieldDescriptor::CPPTYPE_STRING &&
         field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE;
}

}  // namespace

struct ReportPrescanner::Walk {
  const ReportPrescanner& self;
  pb::io::CodedInputStream& in;
  Prescan result;
  absl::Status violation;  // the first count over its limit; the walk goes on for node_name

  size_t LimitOf(const pb::FieldDescriptor* field) const {
    const std::string& name = field->full_name();
    if (name == "neighborly.telemetry.v1.NodeReport.pods") return self.limits_.max_pods;
    if (name == "neighborly.telemetry.v1.PodReport.labels") return self.limits_.max_labels;
    if (name == "neighborly.telemetry.v1.PodReport.annotations") {
      return self.limits_.max_annotations;
    }
    return self.limits_.max_elements;
  }

  absl::Status Malformed(const pb::Descriptor* d) const {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed NodeReport: the message is not a valid "
                     "neighborly.telemetry.v1.NodeReport protobuf (in ",
                     d->name(), ")"));
  }

  // Counts one element of `field`; false when it is over the limit (its
  // content is then skipped, not walked).
  bool Count(const pb::FieldDescriptor* field, uint32_t& count) {
    ++count;
    if (field == self.pods_field_) ++result.pods;
    if (count <= LimitOf(field)) return true;
    if (violation.ok()) {
      violation = absl::InvalidArgumentError(absl::StrCat(
          field->full_name().substr(sizeof("neighborly.telemetry.v1.") - 1), ": more than ",
          LimitOf(field), " entries, at most ", LimitOf(field), " (counted before parsing)"));
    }
    return false;
  }

  absl::Status Message(const pb::Descriptor* d, int depth, bool top) {
    if (depth > kMaxDepth) return Malformed(d);
    auto size = self.message_bytes_.find(d);
    result.estimated_bytes += size != self.message_bytes_.end() ? size->second : 256;
    absl::InlinedVector<uint32_t, 32> counts(static_cast<size_t>(d->field_count()), 0);
    while (true) {
      const uint32_t tag = in.ReadTag();
      if (tag == 0) return in.ConsumedEntireMessage() ? absl::OkStatus() : Malformed(d);
      const int number = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
      const WireFormatLite::WireType wire = WireFormatLite::GetTagWireType(tag);
      const pb::FieldDescriptor* field = d->FindFieldByNumber(number);
      const bool packed = field != nullptr && field->is_repeated() && IsScalar(field) &&
                          wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
      if (field == nullptr ||
          (!packed && wire != WireFormatLite::WireTypeForFieldType(
                                  static_cast<WireFormatLite::FieldType>(field->type())))) {
        // Kept by the parser as an unknown field.
        if (wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
          uint32_t length = 0;
          if (!in.ReadVarint32(&length) || !in.Skip(static_cast<int>(length))) return Malformed(d);
          result.estimated_bytes += kUnknownFieldBytes + kStringBytes + length;
          continue;
        }
        if (!WireFormatLite::SkipField(&in, tag)) return Malformed(d);
        result.estimated_bytes += kUnknownFieldBytes;
        continue;
      }
      uint32_t& count = counts[static_cast<size_t>(field->index())];
      if (packed) {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length)) return Malformed(d);
        const pb::io::CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
        while (in.BytesUntilLimit() > 0) {
          bool ok = true;
          switch (WireFormatLite::WireTypeForFieldType(
              static_cast<WireFormatLite::FieldType>(field->type()))) {
            case WireFormatLite::WIRETYPE_VARINT: {
              uint64_t v = 0;
              ok = in.ReadVarint64(&v);
              break;
            }
            case WireFormatLite::WIRETYPE_FIXED64: {
              uint64_t v = 0;
              ok = in.ReadLittleEndian64(&v);
              break;
            }
            case WireFormatLite::WIRETYPE_FIXED32: {
              uint32_t v = 0;
              ok = in.ReadLittleEndian32(&v);
              break;
            }
            default:
              ok = false;
          }
          if (!ok) return Malformed(d);
          Count(field, count);
          result.estimated_bytes += kRepeatedScalarBytes;
        }
        in.PopLimit(limit);
        continue;
      }
      const bool within = !field->is_repeated() || Count(field, count);
      switch (wire) {
        case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
          uint32_t length = 0;
          if (!in.ReadVarint32(&length)) return Malformed(d);
          if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && within) {
            const pb::io::CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
            if (absl::Status s = Message(field->message_type(), depth + 1, false); !s.ok()) {
              return s;
            }
            in.PopLimit(limit);
            if (field->is_map()) result.estimated_bytes += kMapEntryBytes;
            if (field->is_repeated()) result.estimated_bytes += kRepeatedPointerBytes;
            continue;
          }
          if (top && number == telemetry::v1::NodeReport::kNodeNameFieldNumber) {
            const uint32_t kept = std::min<uint32_t>(length, kMaxNodeNameBytes);
            if (!in.ReadString(&result.node_name, static_cast<int>(kept)) ||
                !in.Skip(static_cast<int>(length - kept))) {
              return Malformed(d);
            }
          } else if (!in.Skip(static_cast<int>(length))) {
            return Malformed(d);
          }
          if (within) {
            result.estimated_bytes += kStringBytes + length +
                                      (field->is_repeated() ? kRepeatedPointerBytes : 0);
          }
          continue;
        }
        default:
          if (!WireFormatLite::SkipField(&in, tag)) return Malformed(d);
          if (field->is_repeated()) result.estimated_bytes += kRepeatedScalarBytes;
          continue;
      }
    }
  }
};

ReportPrescanner::ReportPrescanner(PrescanLimits limits)
    : limits_(limits),
      pods_field_(telemetry::v1::NodeReport::descriptor()->FindFieldByNumber(
          telemetry::v1::NodeReport::kPodsFieldNumber)) {
  CollectSizes(telemetry::v1::NodeReport::descriptor(), message_bytes_);
}

absl::StatusOr<Prescan> ReportPrescanner::Scan(pb::io::ZeroCopyInputStream* input,
                                               size_t wire_bytes) const {
  pb::io::CodedInputStream in(input);
  Walk walk{.self = *this, .in = in, .result = {}, .violation = absl::OkStatus()};
  if (absl::Status s = walk.Message(telemetry::v1::NodeReport::descriptor(), 0, true); !s.ok()) {
    return s;
  }
  if (!walk.violation.ok()) {
    walk.result.refusal = walk.violation;
    return std::move(walk.result);
  }
  const double bound = limits_.memory_factor * static_cast<double>(wire_bytes) +
                       static_cast<double>(limits_.memory_slack_bytes);
  if (static_cast<double>(walk.result.estimated_bytes) > bound) {
    walk.result.refusal = absl::ResourceExhaustedError(absl::StrCat(
        "report of ", wire_bytes, " bytes would take about ", walk.result.estimated_bytes,
        " bytes parsed, more than ", limits_.memory_factor, " times its size (refused before "
        "parsing)"));
  }
  return std::move(walk.result);
}

}  // namespace neighborly::extender
