package plugin

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// verdicts is the plugin's copy of the extender's verdict tables (issue 25,
// streamedVerdicts): one long-lived Verdicts stream per plugin, on which the
// extender sends, per subscribed pod shape, its verdict on every node with
// telemetry and then the changes, and on which the plugin sends Reserve and
// Unreserve without waiting for them. The plugin decides nothing itself: a
// table is the extender's model's answer, read where kube-scheduler runs.
//
// A booking is acked after the deltas it caused; until then its node is
// pending, and a pod whose cycle reaches that node waits for the ack (up to
// its extension point's deadline, then fails open for that node). After a
// reconnect every table is fetched again and every unacked booking resent
// (the extender books idempotently by UID).
type verdicts struct {
	client placementv1.PlacementClient
	// Bookings kept for resending, at most; beyond, the oldest is dropped
	// (counted as a fail-open Reserve).
	maxUnacked int

	mu sync.RWMutex
	// stream is the open stream; nil while (re)connecting.
	stream placementv1.Placement_VerdictsClient
	// supported: the extender has served a Verdicts stream (it said ready);
	// false until then, and again if it answers Unimplemented: bookings then
	// take the synchronous calls.
	supported bool
	shapes    map[string]*shapeTable // by shape key
	// Shapes seen once (the second pod subscribes), at most maxSeenOnce.
	seenOnce  map[string]struct{}
	byID      map[uint64]*shapeTable
	nextShape uint64
	reasons   map[uint32]string
	// Bookings sent and not acked, by id (ids increase in sending order).
	unacked     map[uint64]*placementv1.VerdictsRequest
	nextBooking uint64
	pending     map[string]int // node -> unacked bookings there
	// acked is closed (and replaced) whenever an ack arrives or the stream
	// breaks: waiters for a pending node wake on it.
	acked chan struct{}

	pendingTotal atomic.Int64
	sendMu       sync.Mutex // gRPC allows one Send at a time

	cancel context.CancelFunc
	done   chan struct{}
}

// shapeTable is one shape's verdicts; guarded by verdicts.mu.
type shapeTable struct {
	id    uint64
	key   string
	pod   *placementv1.Pod // the pod it was subscribed with
	ready bool             // a full table arrived on the current stream
	nodes map[string]verdict
	blind int64 // the score of a node without telemetry
}

type verdict struct {
	feasible bool
	reason   string
	score    int64
}

const (
	maxUnackedBookings = 4096
	maxSeenOnce        = 4096
)

func newVerdicts(client placementv1.PlacementClient) *verdicts {
	ctx, cancel := context.WithCancel(context.Background())
	v := &verdicts{
		client:     client,
		maxUnacked: maxUnackedBookings,
		shapes:     map[string]*shapeTable{},
		seenOnce:   map[string]struct{}{},
		byID:       map[uint64]*shapeTable{},
		reasons:    map[uint32]string{},
		unacked:    map[uint64]*placementv1.VerdictsRequest{},
		pending:    map[string]int{},
		acked:      make(chan struct{}),
		cancel:     cancel,
		done:       make(chan struct{}),
	}
	go v.run(ctx)
	return v
}

func (v *verdicts) close() {
	v.cancel()
	<-v.done
}

// shapeKey names what the extender's verdict reads of a pod (SignPod's
// fragment): two pods with the same key get the same verdicts.
func shapeKey(m *placementv1.Pod) string {
	b, err := json.Marshal(shapeOf(m))
	if err != nil {
		return "" // not reached: the shape is plain data
	}
	return string(b)
}

// table returns the ready table of the pod's shape, or nil; the second pod
// of a shape not subscribed yet subscribes it (its cycle takes the calls,
// its table serves the next pods). Not the first: a shape of its own would
// cost the extender a whole table that no other pod reads.
func (v *verdicts) table(m *placementv1.Pod) *shapeTable {
	key := shapeKey(m)
	if key == "" {
		return nil
	}
	v.mu.RLock()
	t := v.shapes[key]
	ready := t != nil && t.ready && v.stream != nil
	v.mu.RUnlock()
	if ready {
		return t
	}
	if t != nil {
		return nil // subscribed, its table on the way
	}
	v.mu.Lock()
	if v.shapes[key] != nil {
		v.mu.Unlock()
		return nil
	}
	if _, seen := v.seenOnce[key]; !seen || !v.supported {
		if len(v.seenOnce) >= maxSeenOnce {
			clear(v.seenOnce)
		}
		v.seenOnce[key] = struct{}{}
		v.mu.Unlock()
		return nil
	}
	delete(v.seenOnce, key)
	v.nextShape++
	t = &shapeTable{id: v.nextShape, key: key, pod: m}
	v.shapes[key] = t
	v.byID[t.id] = t
	stream := v.stream
	v.mu.Unlock()
	if stream != nil {
		v.send(stream, &placementv1.VerdictsRequest{Kind: &placementv1.VerdictsRequest_Subscribe{
			Subscribe: &placementv1.VerdictsSubscribe{ShapeId: t.id, Pod: m}}})
	}
	return nil
}

// lookup reads node's verdict in t, waiting (until deadline) while a booking
// on node is unacked; ok false when the wait timed out.
func (v *verdicts) lookup(t *shapeTable, node string, deadline time.Time) (verdict, bool) {
	for {
		v.mu.RLock()
		if v.pendingTotal.Load() == 0 || v.pending[node] == 0 {
			d, found := t.nodes[node]
			if !found {
				d = verdict{feasible: true, score: t.blind}
			}
			v.mu.RUnlock()
			return d, true
		}
		wake := v.acked
		v.mu.RUnlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return verdict{}, false
		}
		timer := time.NewTimer(wait)
		select {
		case <-wake:
			timer.Stop()
		case <-timer.C:
			return verdict{}, false
		}
	}
}

// settle waits (until deadline) for every unacked booking: the synchronous
// calls then see them. False when the wait timed out.
func (v *verdicts) settle(deadline time.Time) bool {
	for {
		if v.pendingTotal.Load() == 0 {
			return true
		}
		v.mu.RLock()
		wake, stream := v.acked, v.stream
		v.mu.RUnlock()
		if stream == nil {
			return true // acks come after the reconnect; the calls go on meanwhile
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		timer := time.NewTimer(wait)
		select {
		case <-wake:
			timer.Stop()
		case <-timer.C:
			return false
		}
	}
}

// book sends a booking on the stream; false when the extender does not
// serve the stream (the caller makes the synchronous call).
func (v *verdicts) book(req *placementv1.VerdictsRequest, node string) bool {
	v.mu.Lock()
	if !v.supported {
		v.mu.Unlock()
		return false
	}
	v.nextBooking++
	id := v.nextBooking
	switch k := req.Kind.(type) {
	case *placementv1.VerdictsRequest_Reserve:
		k.Reserve.BookingId = id
	case *placementv1.VerdictsRequest_Unreserve:
		k.Unreserve.BookingId = id
	}
	if len(v.unacked) >= v.maxUnacked {
		oldest := id
		for b := range v.unacked {
			oldest = min(oldest, b)
		}
		v.forget(oldest)
		failOpen.WithLabelValues("Reserve", "unacked_dropped").Inc()
	}
	v.unacked[id] = req
	v.pending[node]++
	v.pendingTotal.Add(1)
	stream := v.stream
	v.mu.Unlock()
	if stream != nil {
		v.send(stream, req) // a failed send is resent after the reconnect
	}
	return true
}

// forget drops an unacked booking; v.mu held.
func (v *verdicts) forget(id uint64) {
	req, ok := v.unacked[id]
	if !ok {
		return
	}
	delete(v.unacked, id)
	node := req.GetReserve().GetNodeName()
	if node == "" {
		node = req.GetUnreserve().GetNodeName()
	}
	if v.pending[node]--; v.pending[node] <= 0 {
		delete(v.pending, node)
	}
	v.pendingTotal.Add(-1)
}

func (v *verdicts) send(stream placementv1.Placement_VerdictsClient, req *placementv1.VerdictsRequest) {
	v.sendMu.Lock()
	defer v.sendMu.Unlock()
	_ = stream.Send(req) // a broken stream shows in Recv, which reconnects
}

// run keeps one stream open, reconnecting within about a second.
func (v *verdicts) run(ctx context.Context) {
	defer close(v.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		if v.serve(ctx) {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// serve runs one stream until it breaks; true when the extender served it.
func (v *verdicts) serve(ctx context.Context) bool {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := v.client.Verdicts(sctx)
	if err != nil {
		return false
	}
	first, err := stream.Recv()
	if err != nil || !first.GetReady() {
		if status.Code(err) == codes.Unimplemented {
			v.mu.Lock()
			v.supported = false
			v.mu.Unlock()
		}
		return false
	}
	// Subscriptions and unacked bookings again, in their order, before
	// anything new is sent on this stream.
	v.mu.Lock()
	v.supported = true
	v.stream = stream
	v.sendMu.Lock()
	for _, t := range v.shapes {
		t.ready = false
		_ = stream.Send(&placementv1.VerdictsRequest{Kind: &placementv1.VerdictsRequest_Subscribe{
			Subscribe: &placementv1.VerdictsSubscribe{ShapeId: t.id, Pod: t.pod}}})
	}
	for id := uint64(1); id <= v.nextBooking; id++ {
		if req, ok := v.unacked[id]; ok {
			_ = stream.Send(req)
		}
	}
	v.sendMu.Unlock()
	v.mu.Unlock()
	klog.V(2).InfoS("Neighborly verdict stream open")
	for {
		u, err := stream.Recv()
		if err != nil {
			v.mu.Lock()
			v.stream = nil
			for _, t := range v.shapes {
				t.ready = false
			}
			// The stream's reason ids end with it.
			v.reasons = map[uint32]string{}
			close(v.acked)
			v.acked = make(chan struct{})
			v.mu.Unlock()
			if ctx.Err() == nil {
				klog.InfoS("Neighborly verdict stream closed; reconnecting", "err", err)
			}
			return true
		}
		v.apply(u)
	}
}

func (v *verdicts) apply(u *placementv1.VerdictsUpdate) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch k := u.Kind.(type) {
	case *placementv1.VerdictsUpdate_Table:
		tab := k.Table
		for id, text := range tab.GetNewReasons() {
			v.reasons[id] = text
		}
		t := v.byID[tab.GetShapeId()]
		if t == nil {
			return // dropped meanwhile
		}
		if tab.GetFull() {
			t.nodes = make(map[string]verdict, len(tab.GetVerdicts()))
			t.ready = true
		}
		t.blind = int64(tab.GetBlindScore())
		for _, n := range tab.GetVerdicts() {
			if n.GetRemoved() {
				delete(t.nodes, n.GetNodeName())
				continue
			}
			d := verdict{feasible: n.GetFeasible(), score: int64(n.GetScore())}
			if !d.feasible {
				if d.reason = n.GetReason(); n.GetReasonId() != 0 {
					d.reason = v.reasons[n.GetReasonId()]
				}
			}
			t.nodes[n.GetNodeName()] = d
		}
	case *placementv1.VerdictsUpdate_Ack:
		if e := k.Ack.GetError(); e != "" {
			klog.InfoS("Neighborly refused a booking on the verdict stream", "err", e)
		}
		v.forget(k.Ack.GetBookingId())
		close(v.acked)
		v.acked = make(chan struct{})
	case *placementv1.VerdictsUpdate_DroppedShapeId:
		v.drop(k.DroppedShapeId)
	case *placementv1.VerdictsUpdate_Refused:
		klog.InfoS("Neighborly refused a shape's subscription", "err", k.Refused.GetError())
		v.drop(k.Refused.GetShapeId())
	}
}

// drop forgets a shape (its next pod subscribes it again); v.mu held.
func (v *verdicts) drop(id uint64) {
	if t := v.byID[id]; t != nil {
		delete(v.byID, id)
		delete(v.shapes, t.key)
	}
}
