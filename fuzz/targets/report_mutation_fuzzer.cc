// Structured NodeReport fuzzing: the input is a program of edits applied, by
// protobuf reflection, to a valid two-socket report with pods (so most inputs
// stay close to what a real agent sends and reach the deep consistency checks
// of ValidateReport and the model behind it, which raw protobuf bytes seldom
// do). Each edit picks a path of fields from the root and sets a scalar to an
// edge value or an input string, adds, removes or swaps a repeated element, or
// clears a message. Then the checks of report_check.h.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "extender/src/model/testing/report_builder.h"
#include "fuzz/report_check.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace {

namespace pb = google::protobuf;
namespace tv1 = neighborly::telemetry::v1;

// Reads the input front to back; past the end everything is zero.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }
  uint64_t Word() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | Byte();
    return v;
  }
  std::string Bytes() {
    const size_t n = std::min<size_t>(Byte(), size_ - std::min(at_, size_));
    std::string s(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

using std::string_view_literals::operator""sv;
constexpr std::string_view kStrings[] = {"",
                                         "0",
                                         "0-3",
                                         "0-7",
                                         "8-15",
                                         "0-15",
                                         "2-3",
                                         "65535",
                                         "0-65535",
                                         "3-1",
                                         "1,,2",
                                         "x",
                                         "node-1",
                                         "Node_1",
                                         "u1",
                                         "u2",
                                         "static",
                                         "none",
                                         "single-numa-node",
                                         "latency-critical",
                                         "batch",
                                         "neighborly.io/class",
                                         "neighborly.io/llc-bytes",
                                         "19188940",
                                         "-1",
                                         "1e400",
                                         "\xff\xfe",
                                         "a\0b"sv};

int64_t EdgeInt(Program& p) {
  switch (p.Byte() % 8) {
    case 0:
      return 0;
    case 1:
      return 1;
    case 2:
      return -1;
    case 3:
      return std::numeric_limits<int64_t>::max();
    case 4:
      return std::numeric_limits<int64_t>::min();
    case 5:
      return std::numeric_limits<uint32_t>::max();
    case 6:
      return static_cast<int64_t>(p.Word());
    default:
      return p.Byte();
  }
}

double EdgeDouble(Program& p) {
  switch (p.Byte() % 9) {
    case 0:
      return 0;
    case 1:
      return -0.0;
    case 2:
      return -1;
    case 3:
      return std::numeric_limits<double>::infinity();
    case 4:
      return -std::numeric_limits<double>::infinity();
    case 5:
      return std::numeric_limits<double>::quiet_NaN();
    case 6:
      return std::numeric_limits<double>::max();
    case 7:
      return std::numeric_limits<double>::denorm_min();
    default:
      return p.Byte() / 8.0;
  }
}

std::string EdgeString(Program& p) {
  const uint8_t pick = p.Byte();
  constexpr size_t kCount = sizeof(kStrings) / sizeof(kStrings[0]);
  if (pick < kCount) return std::string(kStrings[pick]);
  if (pick == 255) return std::string(2000, 'a');  // past the 1024-byte string limit
  return p.Bytes();
}

void SetScalar(pb::Message& m, const pb::FieldDescriptor* f, int index, Program& p) {
  const pb::Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
#define NEIGHBORLY_SET(CPPTYPE, Setter, value) \
  case pb::FieldDescriptor::CPPTYPE: {         \
    auto v = value;                            \
    if (rep) {                                 \
      r->SetRepeated##Setter(&m, f, index, v); \
    } else {                                   \
      r->Set##Setter(&m, f, v);                \
    }                                          \
    break;                                     \
  }
    NEIGHBORLY_SET(CPPTYPE_INT32, Int32, static_cast<int32_t>(EdgeInt(p)))
    NEIGHBORLY_SET(CPPTYPE_INT64, Int64, EdgeInt(p))
    NEIGHBORLY_SET(CPPTYPE_UINT32, UInt32, static_cast<uint32_t>(EdgeInt(p)))
    NEIGHBORLY_SET(CPPTYPE_UINT64, UInt64, static_cast<uint64_t>(EdgeInt(p)))
    NEIGHBORLY_SET(CPPTYPE_DOUBLE, Double, EdgeDouble(p))
    NEIGHBORLY_SET(CPPTYPE_FLOAT, Float, static_cast<float>(EdgeDouble(p)))
    NEIGHBORLY_SET(CPPTYPE_BOOL, Bool, (p.Byte() & 1) != 0)
    NEIGHBORLY_SET(CPPTYPE_ENUM, EnumValue, static_cast<int>(EdgeInt(p) % 8))
    NEIGHBORLY_SET(CPPTYPE_STRING, String, EdgeString(p))
#undef NEIGHBORLY_SET
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
}

void AddElement(pb::Message& m, const pb::FieldDescriptor* f, Program& p) {
  const pb::Reflection* r = m.GetReflection();
  const int size = r->FieldSize(m, f);
  if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    pb::Message* added = r->AddMessage(&m, f);
    // A copy of an existing element is a near-valid start (duplicate ids, uids).
    if (size > 0 && (p.Byte() & 1)) added->CopyFrom(r->GetRepeatedMessage(m, f, p.Byte() % size));
    return;
  }
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
      r->AddInt32(&m, f, 0);
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      r->AddInt64(&m, f, 0);
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      r->AddUInt32(&m, f, 0);
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      r->AddUInt64(&m, f, 0);
      break;
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      r->AddDouble(&m, f, 0);
      break;
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      r->AddFloat(&m, f, 0);
      break;
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      r->AddBool(&m, f, false);
      break;
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      r->AddEnumValue(&m, f, 0);
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING:
      r->AddString(&m, f, "");
      break;
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  SetScalar(m, f, size, p);
}

// One edit somewhere below `m`.
void Edit(pb::Message& m, Program& p, int depth) {
  const pb::Descriptor* d = m.GetDescriptor();
  if (d->field_count() == 0 || depth > 8) return;
  const pb::FieldDescriptor* f = d->field(p.Byte() % d->field_count());
  const pb::Reflection* r = m.GetReflection();
  const uint8_t op = p.Byte();
  if (f->is_repeated()) {
    const int size = r->FieldSize(m, f);
    switch (op % 5) {
      case 0:
        AddElement(m, f, p);
        return;
      case 1:
        if (size > 0) r->RemoveLast(&m, f);
        return;
      case 2:
        if (size > 1) r->SwapElements(&m, f, p.Byte() % size, p.Byte() % size);
        return;
      default:
        if (size == 0) return;
        if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
          Edit(*r->MutableRepeatedMessage(&m, f, p.Byte() % size), p, depth + 1);
        } else {
          SetScalar(m, f, p.Byte() % size, p);
        }
        return;
    }
  }
  if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    if (op % 8 == 0) {
      r->ClearField(&m, f);
    } else {
      Edit(*r->MutableMessage(&m, f), p, depth + 1);
    }
    return;
  }
  if (op % 8 == 0) {
    r->ClearField(&m, f);
  } else {
    SetScalar(m, f, -1, p);
  }
}

tv1::NodeReport Base() {
  namespace t = neighborly::extender::testing;
  tv1::NodeReport r = t::TwoSocketNode("node-1");
  t::AddPod(r, {.uid = "u1",
                .name = "article",
                .qos = tv1::QOS_CLASS_GUARANTEED,
                .annotations = {{"neighborly.io/class", "latency-critical"}},
                .cpu_request_millicores = 2000,
                .exclusive_cpus = "2-3",
                .llc_bytes = 19188940,
                .membw_bytes_per_second = 1'000'000'000,
                .mpki = 1.5});
  t::AddPod(r, {.uid = "u2",
                .name = "scan",
                .qos = tv1::QOS_CLASS_BEST_EFFORT,
                .labels = {{"workload-type", "batch"}},
                .llc_bytes = 24'000'000,
                .membw_bytes_per_second = 15'000'000'000});
  t::SetMeasured(r, 0, 20'000'000, 2'000'000'000);
  t::SetMeasured(r, 1, 24'000'000, 16'000'000'000);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tv1::NodeReport* base = new tv1::NodeReport(Base());
  tv1::NodeReport report = *base;
  Program program(data, size);
  for (int edits = 0; !program.done() && edits < 64; ++edits) Edit(report, program, 0);
  neighborly::fuzz::CheckReport(report);
  return 0;
}
