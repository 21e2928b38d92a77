// One Verdicts stream of the placement service (issue 25): the scheduler
// plugin's copy of the model's verdicts, kept current from the extender.
//
// The plugin subscribes a pod shape with one pod of it; the stream answers
// with the shape's table (a verdict on every node with telemetry: feasible or
// refused with a reason id, the 0..10 score), computed by the core's own
// evaluation (ExtenderCore::Verdicts, the one FilterKnownNodes runs), and
// then, every `refresh` and after every booking it takes, with deltas: the
// nodes whose verdict changed. Each subscribed shape's tracker
// (ExtenderCore::VerdictTracker) keeps a refresh to the nodes whose snapshot
// or bookings changed since the last or whose decision expired, read from
// the cluster state's change journal: a refresh does not visit the rest of
// the fleet unless the shape's verdicts rest on all of it (the least-harm
// fallback). Reserve and Unreserve arrive on the same
// stream; each is applied, the tables refreshed and their deltas written, and
// only then acked, so the plugin holds every node's post-booking verdicts by
// the time it reads the ack.
//
// A turn (messages handled, tables refreshed, writes) is taken by one thread
// at a time: the stream's reader thread when a message arrives while none is
// under way, else the handler's thread, which also refreshes on a timer.
//
//   VerdictStream stream(core, {.limits = limits, .teach = true}, &metrics);
//   return stream.Run(context, reader_writer);   // until the plugin goes
#ifndef NEIGHBORLY_EXTENDER_SRC_PLACEMENT_VERDICT_STREAM_H_
#define NEIGHBORLY_EXTENDER_SRC_PLACEMENT_VERDICT_STREAM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "extender/src/core/decision_reuse.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/placement/placement_metrics.h"
#include "extender/src/placement/pod_from_proto.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/placement/v1/placement.grpc.pb.h"

namespace neighborly::extender {

class VerdictStream {
 public:
  using Stream = grpc::ServerReaderWriterInterface<placement::v1::VerdictsUpdate,
                                                   placement::v1::VerdictsRequest>;
  struct Options {
    PlacementLimits limits;
    // Shapes subscribed at once; a new one beyond drops the least recently
    // subscribed or booked (the plugin is told and subscribes it again when
    // it needs it). Each holds a decision slot per node (~350 bytes, twice
    // for a shape that reaches the least-harm fallback): 16 shapes of 5,000
    // nodes are 28-56 MB.
    size_t max_shapes = 16;
    // How often the tables are brought up to date with telemetry (bookings
    // on the stream bring them up to date at once).
    absl::Duration refresh = absl::Milliseconds(50);
    // Reason texts given an id; beyond, texts travel inline.
    size_t max_reasons = 65'536;
    // Whether Reserve on the stream teaches the registry (an authenticated scheduler).
    bool teach = false;
  };
  // `metrics` may be null.
  VerdictStream(ExtenderCore& core, Options options, PlacementMetrics* metrics);

  // The call's metadata by which a plugin asks for VerdictsBatch messages,
  // and the most a batch holds before it is written and another begun (well
  // under the plugin's 16 MiB receive bound).
  static constexpr std::string_view kBatchMetadata = "neighborly-verdicts-batch";
  static constexpr size_t kMaxBatchBytes = 1 << 20;
  // The initial metadata by which the stream tells the plugin it takes
  // several requests in one message (VerdictsRequest.batch).
  static constexpr std::string_view kRequestsMetadata = "neighborly-verdicts-requests";
  // Whether `metadata` (a call's client metadata, or the initial metadata a
  // client received) sets `key` to "1", as both of the above are set.
  static bool Says(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                   std::string_view key);

  // Serves the stream until the plugin closes it or the call ends.
  grpc::Status Run(grpc::ServerContext* context, Stream* stream);

 private:
  // What the plugin was last sent for one node of one shape.
  struct Sent {
    std::string_view name;  // the core's; empty: nothing sent
    bool feasible = true;
    uint32_t reason_id = 0;
    std::string reason;  // when refused
    int32_t score = 0;
    ExtenderCore::VerdictChanges::SecondLook second;  // least_harm_state shapes
  };
  struct Shape {
    uint64_t id = 0;
    IncomingPod pod;  // without UID
    uint64_t last_used = 0;
    int32_t blind_score = -1;
    ExtenderCore::VerdictTracker tracker;
    std::vector<Sent> sent;  // by node ordinal
    bool least_harm_state = false;  // subscribed with it: the plugin applies the fallback
    ExtenderCore::VerdictChanges::LeastHarm least_harm;  // as last sent
  };

  // Handles one message; false when the stream broke.
  bool Handle(const placement::v1::VerdictsRequest& request, Stream& stream,
              std::vector<placement::v1::VerdictsUpdate>& acks);
  bool Subscribe(const placement::v1::VerdictsSubscribe& subscribe, Stream& stream);
  // Brings `shape`'s table up to date and writes what changed (everything
  // when `full`); false when the stream broke.
  bool Refresh(Shape& shape, bool full, Stream& stream);
  bool RefreshAll(Stream& stream);
  uint32_t ReasonId(const std::string& reason, placement::v1::VerdictTable& table);
  // The updates of one turn of the handler's loop (tables, deltas, then
  // acks) are gathered by Send and written by WriteTurn. To a plugin that
  // asked for batches they are one VerdictsBatch message (one update alone
  // goes unwrapped): a booking's deltas and its ack cost one write, not one
  // per update (issue 25: each write of the synchronous API is a batch of
  // gRPC ops and a wait for it). To one that did not, each is its own
  // message, all but the last written with gRPC's buffer hint: one send.
  // Past kMaxBatchBytes, Send writes what it gathered (with the hint) and
  // begins again. False when the stream broke.
  bool Send(Stream& stream, placement::v1::VerdictsUpdate&& update);
  // Writes what Send gathered; the last write flushes when `last`.
  bool WriteTurn(Stream& stream, bool last);

  ExtenderCore& core_;
  const Options options_;
  PlacementMetrics* metrics_;
  std::vector<std::unique_ptr<Shape>> shapes_;
  absl::flat_hash_map<std::string, uint32_t> reasons_;
  uint64_t clock_ = 0;
  // Scratch reused by every refresh, and the acks of a turn.
  ExtenderCore::VerdictChanges changes_;
  std::vector<placement::v1::VerdictsUpdate> turn_acks_;
  // Whether the plugin asked for batches (metadata kBatchMetadata: "1").
  bool batching_ = false;
  // What Send gathered of the turn (in a VerdictsUpdate's batch, written as
  // it is when batching), and its serialized size.
  placement::v1::VerdictsUpdate turn_;
  size_t turn_bytes_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_PLACEMENT_VERDICT_STREAM_H_
