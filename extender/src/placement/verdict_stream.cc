#include "extender/src/placement/verdict_stream.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace neighborly::extender {
namespace {

namespace pv1 = ::neighborly::placement::v1;

// Times one message's handling into the placement metrics.
class Timed {
 public:
  Timed(PlacementMetrics* metrics, PlacementMethod method)
      : metrics_(metrics), method_(method), start_(std::chrono::steady_clock::now()) {}
  void Done(grpc::StatusCode code) {
    if (metrics_ != nullptr) {
      metrics_->Record(method_, static_cast<int>(code),
                       absl::FromChrono(std::chrono::steady_clock::now() - start_));
    }
  }

 private:
  PlacementMetrics* metrics_;
  PlacementMethod method_;
  std::chrono::steady_clock::time_point start_;
};

// "" when `name` is a usable node name, else what is wrong with it.
std::string CheckName(std::string_view field, std::string_view name, size_t max_bytes) {
  if (name.empty()) return absl::StrCat(std::string(field), " is empty");
  if (name.size() > max_bytes) {
    return absl::StrCat(std::string(field), " is ", name.size(), " bytes, at most ", max_bytes);
  }
  return "";
}

}  // namespace

VerdictStream::VerdictStream(ExtenderCore& core, Options options, PlacementMetrics* metrics)
    : core_(core),
      options_(std::move(options)),
      metrics_(metrics) {}

bool VerdictStream::Says(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                         std::string_view key) {
  auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  return it != metadata.end() && it->second == "1";
}

grpc::Status VerdictStream::Run(grpc::ServerContext* context, Stream* stream) {
  batching_ = Says(context->client_metadata(), kBatchMetadata);
  // That this stream takes VerdictsRequests (VerdictsRequest.batch); sent
  // with the first write.
  context->AddInitialMetadata(std::string(kRequestsMetadata), "1");
  {
    // Before the reader starts: from then on the thread that holds the turn
    // writes.
    pv1::VerdictsUpdate ready;
    ready.set_ready(true);
    if (!stream->Write(ready)) {
      context->TryCancel();
      return grpc::Status::OK;
    }
  }
  // A turn (messages handled, tables refreshed, deltas and acks written) is
  // taken by one thread at a time (`busy`): by the reader itself when a
  // message arrives while no turn is under way and none is queued, so that
  // a booking costs one thread's wake-up and not two (issue 25: the
  // hand-off from the reader to this thread and back was a fifth of the
  // extender's CPU in a plugin round); by this thread for the messages
  // queued during a turn and for the periodic refresh. Messages are handled
  // in the order read either way: the reader takes a turn only while the
  // queue is empty.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<pv1::VerdictsRequest> queue;  // guarded by mu
  bool closed = false;                     // guarded by mu: the reader is done
  bool broken = false;                     // guarded by mu: a write failed
  bool busy = false;                       // guarded by mu: a turn is under way
  bool waiting = false;  // guarded by mu: this thread waits for the reader's turn to end
  const auto refresh = absl::ToChronoNanoseconds(options_.refresh);
  auto next_refresh = std::chrono::steady_clock::now() + refresh;  // guarded by mu
  // One turn of `batch`, by the caller of either thread: entered and left
  // with `lock` held, released while the turn runs (`busy`). Every message of
  // the batch in order; the bookings' acks after the refresh that wrote
  // their deltas. False when the stream broke (`broken` set).
  auto take_turn = [&](std::unique_lock<std::mutex>& lock,
                       std::deque<pv1::VerdictsRequest>& batch) {
    busy = true;
    const auto due = next_refresh;
    lock.unlock();
    // A cancelled call shows as a failed write or read: IsCancelled on the
    // synchronous API polls the call's queue, a cost per turn for nothing.
    bool ok = true;
    turn_acks_.clear();
    for (const pv1::VerdictsRequest& request : batch) {
      if (!ok || !(ok = Handle(request, *stream, turn_acks_))) break;
    }
    batch.clear();
    const auto now = std::chrono::steady_clock::now();
    const bool refreshing = ok && (!turn_acks_.empty() || now >= due);
    if (refreshing) ok = RefreshAll(*stream);
    for (size_t i = 0; ok && i < turn_acks_.size(); ++i) {
      ok = Send(*stream, std::move(turn_acks_[i]));
    }
    ok = ok && WriteTurn(*stream, /*last=*/true);
    lock.lock();
    busy = false;
    if (refreshing) next_refresh = now + refresh;
    if (!ok) broken = true;
    return ok;
  };
  std::thread reader([&] {
    std::deque<pv1::VerdictsRequest> own;
    pv1::VerdictsRequest request;
    while (stream->Read(&request)) {
      std::unique_lock<std::mutex> lock(mu);
      if (broken) break;
      if (busy || !queue.empty()) {
        queue.push_back(std::move(request));
        request.Clear();
        cv.notify_one();
        continue;
      }
      own.push_back(std::move(request));
      request.Clear();
      const bool ok = take_turn(lock, own);
      // Only a thread that waits for this turn to end is woken: a notify
      // with none waiting costs nothing, but a waiter woken for nothing
      // costs the wake-up this turn saved.
      if (waiting || !queue.empty() || !ok) cv.notify_one();
      if (!ok) break;
    }
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
    cv.notify_one();
  });
  std::deque<pv1::VerdictsRequest> batch;
  {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      const auto deadline = next_refresh;
      cv.wait_until(lock, deadline,
                    [&] { return closed || broken || (!busy && !queue.empty()); });
      if (broken || (closed && queue.empty() && !busy)) break;
      const bool due = std::chrono::steady_clock::now() >= next_refresh;
      if (queue.empty() && !due) continue;  // the reader refreshed meanwhile
      if (busy) {
        // The reader's turn: wait for its end, then look again.
        waiting = true;
        cv.wait(lock, [&] { return !busy || broken; });
        waiting = false;
        continue;
      }
      batch.swap(queue);
      if (!take_turn(lock, batch)) break;
    }
  }
  // A broken stream or a cancelled call: end the call so that the reader's
  // Read returns.
  {
    std::lock_guard<std::mutex> lock(mu);
    if (broken || !closed) context->TryCancel();
  }
  reader.join();
  return grpc::Status::OK;
}

bool VerdictStream::Handle(const pv1::VerdictsRequest& request, Stream& stream,
                           std::vector<pv1::VerdictsUpdate>& acks) {
  switch (request.kind_case()) {
    case pv1::VerdictsRequest::kSubscribe:
      return Subscribe(request.subscribe(), stream);
    case pv1::VerdictsRequest::kReserve: {
      Timed timed(metrics_, PlacementMethod::kVerdictsReserve);
      const pv1::VerdictsReserve& r = request.reserve();
      pv1::VerdictsUpdate& update = acks.emplace_back();
      pv1::BookingAck* ack = update.mutable_ack();
      ack->set_booking_id(r.booking_id());
      std::string error = CheckName("node_name", r.node_name(), options_.limits.max_name_bytes);
      IncomingPod pod;
      if (error.empty() && !r.has_pod()) error = "pod is missing";
      if (error.empty()) {
        absl::Status status = PodFromProto(r.pod(), options_.limits, pod);
        if (!status.ok()) error = std::string(status.message());
      }
      if (error.empty() && pod.uid.empty()) error = "pod.uid is empty";
      if (!error.empty()) {
        ack->set_error(error);
        timed.Done(grpc::StatusCode::INVALID_ARGUMENT);
        return true;
      }
      ack->set_done(core_.Reserve(pod, r.node_name(), options_.teach));
      ack->set_bookings_generation(core_.BookingsGeneration(r.node_name()));
      timed.Done(grpc::StatusCode::OK);
      return true;
    }
    case pv1::VerdictsRequest::kUnreserve: {
      Timed timed(metrics_, PlacementMethod::kVerdictsUnreserve);
      const pv1::VerdictsUnreserve& r = request.unreserve();
      pv1::VerdictsUpdate& update = acks.emplace_back();
      pv1::BookingAck* ack = update.mutable_ack();
      ack->set_booking_id(r.booking_id());
      std::string error = CheckName("pod_uid", r.pod_uid(), options_.limits.max_uid_bytes);
      if (error.empty()) {
        error = CheckName("node_name", r.node_name(), options_.limits.max_name_bytes);
      }
      if (!error.empty()) {
        ack->set_error(error);
        timed.Done(grpc::StatusCode::INVALID_ARGUMENT);
        return true;
      }
      ack->set_done(core_.Unreserve(r.pod_uid(), r.node_name()));
      ack->set_bookings_generation(core_.BookingsGeneration(r.node_name()));
      timed.Done(grpc::StatusCode::OK);
      return true;
    }
    case pv1::VerdictsRequest::kBatch:
      for (const pv1::VerdictsRequest& one : request.batch().requests()) {
        if (one.has_batch()) continue;  // never nested: ignored as an empty message
        if (!Handle(one, stream, acks)) return false;
      }
      return true;
    case pv1::VerdictsRequest::KIND_NOT_SET:
      break;
  }
  return true;  // an empty message: nothing to do
}

bool VerdictStream::Subscribe(const pv1::VerdictsSubscribe& subscribe, Stream& stream) {
  Timed timed(metrics_, PlacementMethod::kVerdictsSubscribe);
  auto refuse = [&](std::string error) {
    pv1::VerdictsUpdate update;
    update.mutable_refused()->set_shape_id(subscribe.shape_id());
    update.mutable_refused()->set_error(std::move(error));
    timed.Done(grpc::StatusCode::INVALID_ARGUMENT);
    return Send(stream, std::move(update));
  };
  if (subscribe.shape_id() == 0) return refuse("shape_id is 0");
  if (!subscribe.has_pod()) return refuse("pod is missing");
  auto shape = std::make_unique<Shape>();
  shape->id = subscribe.shape_id();
  absl::Status status = PodFromProto(subscribe.pod(), options_.limits, shape->pod);
  if (!status.ok()) return refuse(std::string(status.message()));
  // The shape, not the pod: nothing is looked up by its UID. The name stays:
  // the workload key needs one (an empty name has no workload profile), and
  // a pod without an owner takes it from its name (the plugin's shape key
  // holds the name of such a pod).
  shape->pod.uid.clear();
  shape->last_used = ++clock_;
  shape->least_harm_state = subscribe.least_harm_state();
  shape->tracker = ExtenderCore::VerdictTracker(/*incremental=*/true, shape->least_harm_state);
  // The same id again replaces its table; a new one beyond the bound drops
  // the least recently used.
  auto same = std::find_if(shapes_.begin(), shapes_.end(),
                           [&](const std::unique_ptr<Shape>& s) { return s->id == shape->id; });
  if (same != shapes_.end()) {
    *same = std::move(shape);
  } else {
    if (shapes_.size() >= std::max<size_t>(1, options_.max_shapes)) {
      auto oldest = std::min_element(
          shapes_.begin(), shapes_.end(),
          [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
      pv1::VerdictsUpdate dropped;
      dropped.set_dropped_shape_id((*oldest)->id);
      shapes_.erase(oldest);
      if (!Send(stream, std::move(dropped))) return false;
    }
    shapes_.push_back(std::move(shape));
    same = shapes_.end() - 1;
  }
  const bool ok = Refresh(**same, /*full=*/true, stream);
  timed.Done(grpc::StatusCode::OK);
  return ok;
}

bool VerdictStream::RefreshAll(Stream& stream) {
  for (const std::unique_ptr<Shape>& shape : shapes_) {
    if (!Refresh(*shape, /*full=*/false, stream)) return false;
  }
  return true;
}

uint32_t VerdictStream::ReasonId(const std::string& reason, pv1::VerdictTable& table) {
  auto it = reasons_.find(reason);
  if (it != reasons_.end()) return it->second;
  if (reasons_.size() >= options_.max_reasons) return 0;
  const uint32_t id = static_cast<uint32_t>(reasons_.size() + 1);
  reasons_.emplace(reason, id);
  (*table.mutable_new_reasons())[id] = reason;
  return id;
}

bool VerdictStream::Refresh(Shape& shape, bool full, Stream& stream) {
  core_.Verdicts(shape.pod, shape.tracker, changes_);
  pv1::VerdictsUpdate update;
  pv1::VerdictTable& table = *update.mutable_table();
  table.set_shape_id(shape.id);
  table.set_full(full);
  table.set_blind_score(changes_.blind_score);
  if (full) shape.sent.clear();
  for (size_t i = 0; i < changes_.names.size(); ++i) {
    const NodeDecision& d = changes_.decisions[i];
    const uint64_t ordinal = changes_.ordinals[i];
    const int32_t score = std::clamp(d.score, 0, 10);  // as Score
    const ExtenderCore::VerdictChanges::SecondLook second =
        shape.least_harm_state ? changes_.second[i] : ExtenderCore::VerdictChanges::SecondLook{};
    if (ordinal >= shape.sent.size()) shape.sent.resize(ordinal + 1);
    Sent& sent = shape.sent[ordinal];
    const bool known = !sent.name.empty();
    if (known && sent.feasible == d.feasible && sent.score == score &&
        (d.feasible || sent.reason == d.reason) && sent.second == second) {
      continue;
    }
    sent.name = changes_.names[i];
    sent.feasible = d.feasible;
    sent.score = score;
    sent.second = second;
    sent.reason_id = d.feasible ? 0 : ReasonId(d.reason, table);
    if (d.feasible) {
      sent.reason.clear();
    } else {
      sent.reason = d.reason;
    }
    pv1::NodeVerdict* v = table.add_verdicts();
    v->set_node_name(sent.name.data(), sent.name.size());
    v->set_feasible(sent.feasible);
    v->set_score(score);
    v->set_reason_id(sent.reason_id);
    if (!d.feasible && sent.reason_id == 0) v->set_reason(sent.reason);
    if (second.group != 0) {
      v->set_fallback_group(second.group);
      v->set_fallback_score(second.score);
      v->set_fallback_harm_micros(second.harm_micros);
    }
  }
  bool least_harm_changed = false;
  if (shape.least_harm_state && (full || changes_.least_harm != shape.least_harm)) {
    shape.least_harm = changes_.least_harm;
    pv1::LeastHarm& state = *table.mutable_least_harm();
    state.set_active(shape.least_harm.active);
    state.set_group(shape.least_harm.group);
    state.set_bound_micros(shape.least_harm.bound_micros);
    least_harm_changed = true;
  }
  const bool changed = full || least_harm_changed || table.verdicts_size() > 0 ||
                       changes_.blind_score != shape.blind_score;
  shape.blind_score = changes_.blind_score;
  if (!changed) return true;
  return Send(stream, std::move(update));
}

bool VerdictStream::Send(Stream& stream, pv1::VerdictsUpdate&& update) {
  const size_t bytes = update.ByteSizeLong();
  if (turn_.batch().updates_size() > 0 && turn_bytes_ + bytes > kMaxBatchBytes &&
      !WriteTurn(stream, /*last=*/false)) {
    return false;
  }
  *turn_.mutable_batch()->add_updates() = std::move(update);
  turn_bytes_ += bytes;
  return true;
}

bool VerdictStream::WriteTurn(Stream& stream, bool last) {
  pv1::VerdictsBatch& batch = *turn_.mutable_batch();
  const int n = batch.updates_size();
  // Every write but the turn's last carries the buffer hint (no flush).
  auto options = [last](bool final_write) {
    return final_write && last ? grpc::WriteOptions() : grpc::WriteOptions().set_buffer_hint();
  };
  bool ok = true;
  if (batching_ && n > 1) {
    ok = stream.Write(turn_, options(true));
  } else {
    for (int i = 0; ok && i < n; ++i) ok = stream.Write(batch.updates(i), options(i == n - 1));
  }
  batch.mutable_updates()->Clear();
  turn_bytes_ = 0;
  return ok;
}

}  // namespace neighborly::extender
