package plugin

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

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
// pending: Filter and Score read it as its table stands, and Reserve, if
// kube-scheduler chose such a node that Filter passed, waits for the ack (up
// to Filter's deadline, then fails open for that node). After a
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
	// The stream's reason texts by id: read by Filter without v.mu.
	reasons atomic.Pointer[sync.Map]
	// Every node's slot in the tables, read by Filter and Score without v.mu
	// (never nil; replaced by a copy with more names, under v.mu).
	index atomic.Pointer[nodeIndex]
	// The slots of kube-scheduler's node list (snapshotSlots).
	slotCache atomic.Pointer[slotCache]
	// The nodes with bookings sent and not acked, with how many (never nil;
	// a copy replaces it at every booking and ack, under v.mu: it holds a
	// few). Filter compares a node's slot with the few pending ones before
	// anything else, so a node without a pending booking is passed without
	// reading its cell while the table refuses nothing.
	pending atomic.Pointer[pendingSet]
	// Bookings made pending so far: a cycle that read it before the pending
	// set knows, while it is unchanged, that nothing was added since
	// (cyclePending). Counted after the set is stored.
	pendingAdds atomic.Uint64
	// Bookings sent and not acked, by id (ids increase in sending order).
	unacked     map[uint64]*placementv1.VerdictsRequest
	nextBooking uint64
	// acked is closed (and replaced) whenever an ack arrives or the stream
	// breaks: waiters for a pending node wake on it.
	acked chan struct{}

	sendMu sync.Mutex // gRPC allows one Send at a time

	// Bookings are held back for up to linger (0: each is sent at once) and
	// sent together, as one VerdictsRequests message to an extender that
	// takes them (takesBatches): one message and one turn of the extender
	// for several bookings (issue 25: its CPU per booking fell from ~490 to
	// ~280 us with four a message, verdict_stream_bench). A cycle that waits
	// for an ack sends them at once (nextAck), so holding them back delays no
	// cycle by more than a round trip.
	linger       time.Duration
	outbox       []*placementv1.VerdictsRequest // held back, in order (v.mu)
	takesBatches bool                           // the open stream's extender takes VerdictsRequests (v.mu)
	held         chan struct{}                  // cap 1: the outbox was empty and is not
	urged        chan struct{}                  // cap 1: send the outbox now

	cancel context.CancelFunc
	done   chan struct{}
}

// nodeIndex maps node names to their slots in every table. Immutable once
// published: new names publish a copy, so the cycle's reads take no lock
// (issue 25: a lock and a map per read were 6 % of the scheduler's CPU at
// 5,000 nodes).
type nodeIndex map[string]int

// shapeTable is one shape's verdicts. Written by the stream's goroutine
// under verdicts.mu; cells and blind are read without it.
type shapeTable struct {
	id    uint64
	key   string
	pod   *placementv1.Pod // the pod it was subscribed with
	ready bool             // a full table arrived on the current stream (verdicts.mu)
	// One packed verdict per node slot (cell*); a slot beyond the slice or
	// a cell without cellPresent has no verdict: the blind score.
	cells atomic.Pointer[[]cell]
	// The least-harm fallback's state (LeastHarm), nil while it passes none.
	leastHarm atomic.Pointer[leastHarmState]
	blind     atomic.Int64 // the score of a node without telemetry
	// Cells refused: while none is, Filter passes a node without reading it.
	refused atomic.Int64
	// Reasons sent inline (no id), by slot; verdicts.mu.
	inline map[int]string
}

// cell is a node's verdict (v) and, where it is refused softly and its
// second look passes, that second look (fb: fallbackPresent, the group, the
// score, the harm in millionths).
type cell struct {
	v, fb atomic.Uint64
}

// leastHarmState: the fallback passes refused nodes of this group whose
// harm is at most bound (millionths). Immutable once published.
type leastHarmState struct {
	group uint64
	bound uint64
}

const (
	fallbackPresent    = uint64(1) << 63
	fallbackGroupShift = 61
	fallbackScoreShift = 55
	fallbackHarmMask   = uint64(1)<<55 - 1
)

func packFallback(n *placementv1.NodeVerdict) uint64 {
	g := uint64(n.GetFallbackGroup())
	if g == 0 || g > 3 {
		return 0
	}
	return fallbackPresent | g<<fallbackGroupShift |
		uint64(min(max(n.GetFallbackScore(), 0), 63))<<fallbackScoreShift |
		min(n.GetFallbackHarmMicros(), fallbackHarmMask)
}

// passesFallback: a refused cell's second look that the fallback's state
// passes, with its score.
func passesFallback(lh *leastHarmState, fb uint64) (int64, bool) {
	if lh == nil || fb&fallbackPresent == 0 || (fb>>fallbackGroupShift)&3 != lh.group || fb&fallbackHarmMask > lh.bound {
		return 0, false
	}
	return int64((fb >> fallbackScoreShift) & 63), true
}

// A packed verdict: present, feasible, the score (0..63), whether the
// reason came inline, and its id.
const (
	cellPresent    = uint64(1) << 63
	cellFeasible   = uint64(1) << 62
	cellInline     = uint64(1) << 61
	cellScoreShift = 53
	cellScoreMask  = uint64(63)
)

func packVerdict(n *placementv1.NodeVerdict) uint64 {
	c := cellPresent | uint64(min(max(n.GetScore(), 0), 63))<<cellScoreShift
	if n.GetFeasible() {
		return c | cellFeasible
	}
	if n.GetReasonId() == 0 {
		return c | cellInline
	}
	return c | uint64(n.GetReasonId())
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

func newVerdicts(client placementv1.PlacementClient, linger time.Duration) *verdicts {
	ctx, cancel := context.WithCancel(context.Background())
	v := newVerdictsState(client, cancel)
	v.linger = linger
	go v.run(ctx)
	if linger > 0 {
		go v.sender(ctx)
	}
	return v
}

// newVerdictsState is a verdicts without its stream's goroutine.
func newVerdictsState(client placementv1.PlacementClient, cancel context.CancelFunc) *verdicts {
	v := &verdicts{
		client:     client,
		maxUnacked: maxUnackedBookings,
		shapes:     map[string]*shapeTable{},
		seenOnce:   map[string]struct{}{},
		byID:       map[uint64]*shapeTable{},
		unacked:    map[uint64]*placementv1.VerdictsRequest{},
		acked:      make(chan struct{}),
		held:       make(chan struct{}, 1),
		urged:      make(chan struct{}, 1),
		cancel:     cancel,
		done:       make(chan struct{}),
	}
	v.reasons.Store(&sync.Map{})
	v.index.Store(&nodeIndex{})
	v.pending.Store(&pendingSet{})
	return v
}

// slots returns the index with a slot for every node of list, adding those
// it lacks (one copy of the index for all of them); v.mu held.
func (v *verdicts) slots(list []*placementv1.NodeVerdict) *nodeIndex {
	idx := v.index.Load()
	var grown nodeIndex
	for _, n := range list {
		name := n.GetNodeName()
		if _, ok := (*idx)[name]; ok {
			continue
		}
		if grown == nil {
			grown = make(nodeIndex, len(*idx)+64)
			for n, s := range *idx {
				grown[n] = s
			}
		}
		if _, ok := grown[name]; !ok {
			grown[name] = len(grown)
		}
	}
	if grown == nil {
		return idx
	}
	v.index.Store(&grown)
	return &grown
}

// slot is node's slot in the tables, or -1.
func (v *verdicts) slot(node string) int {
	if o, ok := (*v.index.Load())[node]; ok {
		return o
	}
	return -1
}

// read is node's verdict in t as it stands (no wait).
func (v *verdicts) read(t *shapeTable, node string) verdict {
	return v.readSlot(t, v.slot(node))
}

// readSlot is read of the node in slot (-1: a node without one).
func (v *verdicts) readSlot(t *shapeTable, slot int) verdict {
	blind := verdict{feasible: true, score: t.blind.Load()}
	if slot < 0 {
		return blind
	}
	cells := t.cells.Load()
	if cells == nil || slot >= len(*cells) {
		return blind
	}
	c := (*cells)[slot].v.Load()
	if c&cellPresent == 0 {
		return blind
	}
	d := verdict{feasible: c&cellFeasible != 0, score: int64((c >> cellScoreShift) & cellScoreMask)}
	if d.feasible {
		return d
	}
	if score, ok := passesFallback(t.leastHarm.Load(), (*cells)[slot].fb.Load()); ok {
		return verdict{feasible: true, score: score}
	}
	if c&cellInline != 0 {
		v.mu.RLock()
		d.reason = t.inline[slot]
		v.mu.RUnlock()
	} else if text, ok := v.reasons.Load().Load(uint32(c)); ok {
		d.reason = text.(string)
	}
	return d
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
			Subscribe: &placementv1.VerdictsSubscribe{ShapeId: t.id, Pod: m, LeastHarmState: true}}})
	}
	return nil
}

// filterInfo is Filter's read of info's node in t (slots: the cache of
// PreFilter's list, nil: none; pend: the cycle's pending bookings), without
// waiting. No node refused and no booking pending on the node: passed
// without reading a cell (a map access per node was most of Filter's cost,
// issue 25). A node with a booking not acked is judged by its table as it
// stands: passed (ahead: true) where the table passes it, and Reserve then
// waits for the ack and refuses the node if the booking made the table
// refuse it; refused where the table refuses it. A booking sometimes lifts
// a refusal (an Unreserve, or a resident already past its tolerance:
// docs/placement.md), and such a node is then out of this cycle only, on
// the safe side; the next reads its post-booking verdict. (issue 25: a
// Filter wait for such an ack was 2-3 ms, in 8 % of a SchedulingMixed
// round's cycles at 5,000 nodes.) PreFilter's narrowed set still waits for
// its acks where half of it is pending, so that a pod of a shape that passes
// few nodes is not left with none.
func (v *verdicts) filterInfo(t *shapeTable, slots *slotCache, pend *cyclePending, info fwk.NodeInfo) (d verdict, ahead bool) {
	if t.refused.Load() == 0 && !pend.mayBePending(v, info) {
		return verdict{feasible: true}, false
	}
	d, pending := v.scoreInfo(t, slots, info)
	switch {
	case pending && d.feasible:
		return verdict{feasible: true}, true
	case pending:
		passedAheadOfAcks.WithLabelValues("Filter_refused").Inc()
	case t.refused.Load() == 0:
		return verdict{feasible: true}, false
	}
	return d, false
}

// scoreInfo is Score's read of info's node in t, without waiting: its
// verdict as the table stands, and whether a booking on it is not acked yet
// (the verdict is then the one from before that booking).
func (v *verdicts) scoreInfo(t *shapeTable, slots *slotCache, info fwk.NodeInfo) (d verdict, pending bool) {
	slot, name := v.slotOf(slots, info)
	return v.readSlot(t, int(slot)), v.pending.Load().has(slot, info, name)
}

// slotOf is info's slot, found by identity in the cache of PreFilter's
// list (slots, nil: none) with name "": no name hashed. A NodeInfo not in
// it (a preemption dry run's clone, a node that had no slot when the cache
// was made) is looked up by name, which is returned with its slot (-1: none).
func (v *verdicts) slotOf(slots *slotCache, info fwk.NodeInfo) (int32, string) {
	if slots != nil {
		if ni, ok := info.(*framework.NodeInfo); ok {
			if s, ok := slots.byInfo[ni]; ok {
				return s, ""
			}
		}
	}
	name := info.Node().Name
	return int32(v.slot(name)), name
}

// await waits until the node in slot (-1: none; info or name as for has)
// has no unacked booking; false at the deadline. A wait is recorded in
// neighborly_plugin_ack_wait_seconds under point.
func (v *verdicts) await(point string, slot int32, info fwk.NodeInfo, name string, deadline time.Time) bool {
	return v.waitAcks(point, deadline, func() bool { return v.pending.Load().has(slot, info, name) })
}

// waitAcks waits, through the acks as they come, while unacked says a
// booking the caller needs is not acked (called under v.mu's read lock);
// false at the deadline. A wait, if one was needed, is recorded under point.
func (v *verdicts) waitAcks(point string, deadline time.Time, unacked func() bool) bool {
	var start time.Time // when the wait began; zero: none was needed
	done := func(result string, ok bool) bool {
		if !start.IsZero() {
			ackWait.WithLabelValues(point, result).Observe(time.Since(start).Seconds())
		}
		return ok
	}
	for {
		v.mu.RLock()
		wake, waiting, held := v.acked, unacked(), len(v.outbox) > 0
		v.mu.RUnlock()
		if !waiting {
			return done("acked", true)
		}
		if start.IsZero() {
			start = time.Now()
		}
		if !v.nextAck(wake, held, deadline) {
			return done("timed_out", false)
		}
	}
}

// urge sends the held-back bookings now, if any: a cycle passed a node
// ahead of its booking's ack, and reads its verdict in Score.
func (v *verdicts) urge() {
	v.mu.RLock()
	held := len(v.outbox) > 0
	v.mu.RUnlock()
	if held {
		v.urgeSender()
	}
}

// sendAheadOf sends the held-back bookings at once, from the caller's
// goroutine, where one is on a node of names (a narrowed cycle's set, which
// kube-scheduler filters and scores whole): the cycle may meet such a node
// in Reserve or wait in PreFilter for its ack, so its round trip starts now
// rather than when the linger ends. It does not yield: Filter and Score no
// longer wait for acks, and a runtime.Gosched here put kube-scheduler's
// goroutine behind everything runnable in its process (issue 25: 0.28 ms of
// a streamed cycle on average in a SchedulingMixed round at 5,000 nodes,
// 2026-12-07, seventeenth session). gRPC-Go's writer goroutine writes them
// when the cycle's goroutine next blocks, at the latest when it fans out its
// Filter workers. A cycle whose set holds no held booking, and every cycle
// that kube-scheduler samples from the whole list (its rotating start puts
// the last pods' nodes behind it), sends nothing.
func (v *verdicts) sendAheadOf(names sets.Set[string]) {
	v.mu.RLock()
	needed := slices.ContainsFunc(v.outbox, func(req *placementv1.VerdictsRequest) bool { return names.Has(bookingNode(req)) })
	v.mu.RUnlock()
	if needed {
		v.sendHeld("narrowed")
	}
}

// urgeSender tells the sender to send the outbox now.
func (v *verdicts) urgeSender() {
	select {
	case v.urged <- struct{}{}:
	default:
	}
}

// nextAck waits until wake (v.acked as read with what made the caller wait)
// is closed by the next ack; false at the deadline. Bookings held back (held)
// are sent first, as the caller may wait for one of them; with none held the
// sender is left alone (an urge then would cut the next linger short).
func (v *verdicts) nextAck(wake <-chan struct{}, held bool, deadline time.Time) bool {
	if held {
		v.urgeSender()
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		return false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-wake:
		return true
	case <-timer.C:
		return false
	}
}

// passing names the nodes of kube-scheduler's list that t does not refuse,
// for PreFilterResult, when they are at most half of the list: kube-scheduler
// then filters only those, where otherwise it would walk (and record a status
// for) every node Neighborly refuses before it found its share of feasible
// ones; a shape that most nodes refuse (a pinned or hinted latency-critical
// pod) made it walk all 5,000 (issue 25: the filter phase took three times
// the fair baseline's CPU on SchedulingMixed). nil: every node is a candidate.
//
// A node without a verdict (no telemetry, unknown) or with an unacked booking
// is named: Filter then reads it as usual. Nil as well when no
// node passes, so that Filter gives each node's reason.
//
// waiting: half of the named nodes or more have a booking not acked, whose
// delta may refuse them (the booking's own harm) and leave the pod no node
// in this cycle.
func (v *verdicts) passing(t *shapeTable, nodes []fwk.NodeInfo, cache *slotCache) (names sets.Set[string], waiting bool) {
	refused := int(t.refused.Load())
	if refused == 0 || len(nodes)-refused > len(nodes)/2 {
		return nil, false
	}
	slots := cache.slots
	var cells []cell
	if c := t.cells.Load(); c != nil {
		cells = *c
	}
	lh := t.leastHarm.Load()
	pending := v.pending.Load()
	limit := len(nodes) / 2
	list := make([]string, 0, min(limit, 256))
	for i, s := range slots {
		if s >= 0 && int(s) < len(cells) {
			c := cells[s].v.Load()
			if c&cellPresent != 0 && c&cellFeasible == 0 && !pending.has(s, nodes[i], "") {
				if _, passes := passesFallback(lh, cells[s].fb.Load()); !passes {
					continue
				}
			}
		}
		if len(list) == limit {
			return nil, false
		}
		list = append(list, cache.names[i])
	}
	if len(list) == 0 {
		return nil, false
	}
	names = sets.New(list...)
	booked := 0
	for _, n := range *pending {
		if names.Has(n.node) {
			booked++
		}
	}
	return names, booked > 0 && 2*booked >= len(names)
}

// snapshotSlots is the slot of every node of kube-scheduler's node list, in
// its order (-1: none), and by NodeInfo. Kept between cycles: the list and
// its NodeInfos stay the same objects until nodes come or go (the scheduler
// cache updates a node's NodeInfo in place, and a NodeInfo is one node's
// for its life), and the node index only grows, a name's slot never
// changing, so the cache holds while the list holds the same NodeInfos and
// the index is the same.
func (v *verdicts) snapshotSlots(nodes []fwk.NodeInfo) *slotCache {
	idx := v.index.Load()
	if c := v.slotCache.Load(); c != nil && c.index == idx && len(c.nodes) == len(nodes) {
		same := true
		for i := range nodes {
			if c.nodes[i] != nodes[i] {
				same = false
				break
			}
		}
		if same {
			return c
		}
	}
	c := &slotCache{
		index:  idx,
		nodes:  append([]fwk.NodeInfo(nil), nodes...),
		slots:  make([]int32, len(nodes)),
		names:  make([]string, len(nodes)),
		byInfo: make(map[*framework.NodeInfo]int32, len(nodes)),
	}
	top := int32(-1)
	for i, n := range nodes {
		c.slots[i] = -1
		c.names[i] = n.Node().Name
		if s, ok := (*idx)[c.names[i]]; ok {
			c.slots[i] = int32(s)
			top = max(top, int32(s))
			if ni, ok := n.(*framework.NodeInfo); ok {
				c.byInfo[ni] = int32(s)
			}
		}
	}
	c.at = make([]int32, top+1)
	for i := range c.at {
		c.at[i] = -1
	}
	for i, s := range c.slots {
		if s >= 0 {
			c.at[s] = int32(i)
		}
	}
	v.slotCache.Store(c)
	return c
}

// slotCache: snapshotSlots' last answer. Read-only once published.
type slotCache struct {
	index *nodeIndex
	nodes []fwk.NodeInfo
	slots []int32
	// The inverse of slots: each slot's position in nodes (-1: none), by
	// slot; pendingOf finds a pending booking's NodeInfo with it.
	at []int32
	// The nodes' names, in the list's order: PreFilter's narrowing and the
	// windowed calls name nodes without loading each NodeInfo and its Node
	// (issue 25: those loads were half of the narrowing's CPU).
	names []string
	// The nodes with a slot, by identity (kube-scheduler's own NodeInfo
	// type; another implementation is looked up by name): Filter and Score
	// find a node's slot without hashing its name (a string map of 5,000 names, with the name
	// and the key compared through two more pointers, was half of the
	// plugin's CPU in a SchedulingBasic round, issue 25).
	byInfo map[*framework.NodeInfo]int32
}

// settle waits (until deadline) for every unacked booking: the synchronous
// calls then see them. False when the wait timed out. A wait is recorded
// under point, as await's.
func (v *verdicts) settle(point string, deadline time.Time) bool {
	// Without a stream the acks come after the reconnect; the calls go on
	// meanwhile.
	return v.waitAcks(point, deadline, func() bool { return len(*v.pending.Load()) > 0 && v.stream != nil })
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
	v.addPending(node, 1)
	stream := v.stream
	if stream != nil && v.linger > 0 {
		// Held back: the sender sends it with those that follow within linger.
		v.outbox = append(v.outbox, req)
		first := len(v.outbox) == 1
		v.mu.Unlock()
		if first {
			select {
			case v.held <- struct{}{}:
			default:
			}
		}
		return true
	}
	v.mu.Unlock()
	if stream != nil {
		bookingsSent.Inc()
		bookingMessages.WithLabelValues("at_once").Inc()
		v.send(stream, req) // a failed send is resent after the reconnect
		// gRPC-Go writes the message from its writer goroutine, which the
		// send readies to run next on this P; kube-scheduler's next cycle,
		// which this goroutine goes on to, would push it behind its 16
		// Filter workers, and the booking would reach the extender after
		// the cycle that waits for its ack (issue 25: the booking's round
		// trip fell from 8.2 to 5.5 ms on average in a SchedulingMixed
		// round). Yielding lets it write now.
		runtime.Gosched()
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
	v.addPending(bookingNode(req), -1)
}

// bookingNode is the node a Reserve or Unreserve on the stream books.
func bookingNode(req *placementv1.VerdictsRequest) string {
	if node := req.GetReserve().GetNodeName(); node != "" {
		return node
	}
	return req.GetUnreserve().GetNodeName()
}

// addPending counts a booking on node sent (+1) or acked (-1); v.mu held.
func (v *verdicts) addPending(node string, delta int) {
	old := *v.pending.Load()
	next := make(pendingSet, 0, len(old)+1)
	count := delta
	for _, p := range old {
		if p.node == node {
			count += p.count
		} else {
			next = append(next, p)
		}
	}
	if count > 0 {
		next = append(next, pendingNode{node, int32(v.slot(node)), count})
	}
	v.pending.Store(&next)
	if delta > 0 {
		v.pendingAdds.Add(1)
	}
}

// cyclePending: the bookings pending when a cycle's PreFilter ran, as the
// Node objects of that cycle's snapshot. Filter compares a node's Node
// pointer with these instead of its name (issue 25: loading every node's
// name to compare it with the few pending was most of the plugin's Filter
// in a SchedulingBasic round, a cache miss per node). Within a cycle the
// snapshot's NodeInfos, and the clones kube-scheduler makes of them for
// nominated pods and preemption, share their node's Node object. While no
// booking has been added since (adds), the pending set is a subset of
// these: a node not among them has none pending, one among them is
// looked up as before. nil: compare names.
type cyclePending struct {
	adds  uint64
	nodes []*v1.Node
}

// pendingOf is the pending bookings of a cycle whose node list is cache's;
// nil when one cannot be placed in it by slot (a node without a slot, or
// not in the list: kube-scheduler filters only the list's nodes, but a
// caller that filters others is answered by name).
func (v *verdicts) pendingOf(cache *slotCache) *cyclePending {
	adds := v.pendingAdds.Load() // before the set: see pendingAdds
	set := *v.pending.Load()
	c := &cyclePending{adds: adds}
	if len(set) == 0 {
		return c
	}
	for _, p := range set {
		if p.slot < 0 || int(p.slot) >= len(cache.at) || cache.at[p.slot] < 0 {
			return nil
		}
		c.nodes = append(c.nodes, cache.nodes[cache.at[p.slot]].Node())
	}
	return c
}

// mayBePending: info's node may have a booking pending (false: it has none).
func (c *cyclePending) mayBePending(v *verdicts, info fwk.NodeInfo) bool {
	if c == nil || v.pendingAdds.Load() != c.adds {
		return v.pending.Load().has(-1, info, "")
	}
	if len(c.nodes) == 0 {
		return false
	}
	n := info.Node()
	for _, p := range c.nodes {
		if p == n {
			return true
		}
	}
	return false
}

// pendingSet is the nodes with bookings sent and not acked, and how many
// each (a few: Filter compares their slots instead of looking a node up by
// name). Immutable once published.
type pendingSet []pendingNode

type pendingNode struct {
	node  string
	slot  int32 // its slot when booked; -1: none then
	count int
}

// has: the node in slot (-1: none) has a booking not acked. Slots are
// compared where both have one (a name's slot never changes); otherwise the
// names, the node's taken from info when name is "".
func (p *pendingSet) has(slot int32, info fwk.NodeInfo, name string) bool {
	for _, n := range *p {
		if slot >= 0 && n.slot >= 0 {
			if n.slot == slot {
				return true
			}
			continue
		}
		if name == "" && info != nil {
			name = info.Node().Name
		}
		if n.node == name {
			return true
		}
	}
	return false
}

// nothingToFilter: t refuses no node and no booking is pending, so every
// Filter of a cycle that reads t would pass.
func (v *verdicts) nothingToFilter(t *shapeTable) bool {
	return t.refused.Load() == 0 && len(*v.pending.Load()) == 0
}

// sender sends the held-back bookings linger after the first of them was
// held, or at once when urged, until ctx ends.
func (v *verdicts) sender(ctx context.Context) {
	timer := time.NewTimer(v.linger)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.held:
		}
		timer.Reset(v.linger)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-v.urged:
			timer.Stop()
			v.sendHeld("wait")
			continue
		case <-timer.C:
			// An urge that came as the linger ended is answered by this send.
			select {
			case <-v.urged:
			default:
			}
		}
		v.sendHeld("linger")
	}
}

// sendHeld sends what the outbox holds, in one message where the extender
// takes several. Bookings held while the stream was down or that a new
// stream resent are no longer there (serve empties the outbox when it
// resends every unacked booking).
func (v *verdicts) sendHeld(why string) bool {
	// The sender goroutine and a narrowed cycle's PreFilter (sendAheadOf)
	// both send the outbox, and the stream must carry the bookings in the
	// order they were made (an Unreserve after its Reserve): whoever takes
	// the outbox takes the send lock before letting go of v.mu, so outboxes
	// are written in the order they were taken (v.mu before sendMu, as in
	// serve).
	v.mu.Lock()
	out, stream, together := v.outbox, v.stream, v.takesBatches
	v.outbox = nil
	if stream == nil || len(out) == 0 {
		v.mu.Unlock()
		return false
	}
	v.sendMu.Lock()
	v.mu.Unlock()
	defer v.sendMu.Unlock()
	bookingsSent.Add(float64(len(out)))
	if len(out) == 1 || !together {
		bookingMessages.WithLabelValues(why).Add(float64(len(out)))
		for _, req := range out {
			sendLocked(stream, req)
		}
	} else {
		bookingMessages.WithLabelValues(why).Inc()
		sendLocked(stream, &placementv1.VerdictsRequest{Kind: &placementv1.VerdictsRequest_Batch{
			Batch: &placementv1.VerdictsRequests{Requests: out}}})
	}
	return true
}

func (v *verdicts) send(stream placementv1.Placement_VerdictsClient, req *placementv1.VerdictsRequest) {
	v.sendMu.Lock()
	defer v.sendMu.Unlock()
	sendLocked(stream, req)
}

// sendLocked sends req on stream; v.sendMu held. A broken stream shows in
// Recv, which reconnects.
func sendLocked(stream placementv1.Placement_VerdictsClient, req *placementv1.VerdictsRequest) {
	_ = stream.Send(req)
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
	// A turn's updates in one message (VerdictsBatch): one receive, not one per update.
	stream, err := v.client.Verdicts(metadata.AppendToOutgoingContext(sctx, batchMetadata, "1"))
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
	md, _ := stream.Header()
	v.mu.Lock()
	v.supported = true
	v.stream = stream
	v.takesBatches = slices.Equal(md.Get(requestsMetadata), []string{"1"})
	// Every unacked booking is resent below, the held-back ones with them.
	v.outbox = nil
	v.sendMu.Lock()
	for _, t := range v.shapes {
		t.ready = false
		sendLocked(stream, &placementv1.VerdictsRequest{Kind: &placementv1.VerdictsRequest_Subscribe{
			Subscribe: &placementv1.VerdictsSubscribe{ShapeId: t.id, Pod: t.pod, LeastHarmState: true}}})
	}
	for id := uint64(1); id <= v.nextBooking; id++ {
		if req, ok := v.unacked[id]; ok {
			sendLocked(stream, req)
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
			v.reasons.Store(&sync.Map{})
			v.wakeWaiters()
			v.mu.Unlock()
			if ctx.Err() == nil {
				klog.InfoS("Neighborly verdict stream closed; reconnecting", "err", err)
			}
			return true
		}
		v.apply(u)
	}
}

// batchMetadata asks the extender for VerdictsBatch messages on the stream;
// requestsMetadata, in the extender's initial metadata, says that it takes
// VerdictsRequests.
const (
	batchMetadata    = "neighborly-verdicts-batch"
	requestsMetadata = "neighborly-verdicts-requests"
)

func (v *verdicts) apply(u *placementv1.VerdictsUpdate) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if b := u.GetBatch(); b != nil {
		for _, one := range b.GetUpdates() {
			if one.GetBatch() == nil { // never nested; one would be ignored
				v.applyLocked(one)
			}
		}
		return
	}
	v.applyLocked(u)
}

// applyLocked applies one update; v.mu held.
func (v *verdicts) applyLocked(u *placementv1.VerdictsUpdate) {
	switch k := u.Kind.(type) {
	case *placementv1.VerdictsUpdate_Table:
		tab := k.Table
		reasons := v.reasons.Load()
		for id, text := range tab.GetNewReasons() {
			reasons.Store(id, text)
		}
		t := v.byID[tab.GetShapeId()]
		if t == nil {
			return // dropped meanwhile
		}
		list := tab.GetVerdicts()
		idx := v.slots(list)
		// A full table is written into new cells and published whole; a
		// delta into the current ones, grown (copied) first if the index
		// outgrew them.
		cells := t.cells.Load()
		if tab.GetFull() || cells == nil || len(*cells) < len(*idx) {
			grown := make([]cell, len(*idx)+64)
			if cells != nil && !tab.GetFull() {
				for i := range *cells {
					grown[i].v.Store((*cells)[i].v.Load())
					grown[i].fb.Store((*cells)[i].fb.Load())
				}
			}
			cells = &grown
			if !tab.GetFull() {
				t.cells.Store(cells)
			}
		}
		if tab.GetFull() {
			t.inline = nil
		}
		t.blind.Store(int64(tab.GetBlindScore()))
		refused := t.refused.Load()
		if tab.GetFull() {
			refused = 0
		}
		isRefused := func(c uint64) int64 {
			if c&cellPresent != 0 && c&cellFeasible == 0 {
				return 1
			}
			return 0
		}
		for _, n := range list {
			o := (*idx)[n.GetNodeName()]
			c := uint64(0)
			if !n.GetRemoved() {
				c = packVerdict(n)
			}
			if c&cellInline != 0 {
				if t.inline == nil {
					t.inline = map[int]string{}
				}
				t.inline[o] = n.GetReason()
			} else {
				delete(t.inline, o)
			}
			refused += isRefused(c) - isRefused((*cells)[o].v.Load())
			// A refusal counts before its cell is written, a pass after, so
			// that Filter's shortcut (no cell refused) never misses one.
			if refused > t.refused.Load() {
				t.refused.Store(refused)
			}
			// The second look before the verdict: a reader of a refused cell
			// reads its second look after it.
			fb := uint64(0)
			if !n.GetRemoved() {
				fb = packFallback(n)
			}
			(*cells)[o].fb.Store(fb)
			(*cells)[o].v.Store(c)
		}
		// The fallback's state, once the cells it passes are written: in every
		// full table from an extender that sends it, in a delta when it moved.
		if lh := tab.GetLeastHarm(); lh != nil {
			if lh.GetActive() && lh.GetGroup() != 0 {
				t.leastHarm.Store(&leastHarmState{group: uint64(lh.GetGroup()), bound: lh.GetBoundMicros()})
			} else {
				t.leastHarm.Store(nil)
			}
		} else if tab.GetFull() {
			t.leastHarm.Store(nil)
		}
		if tab.GetFull() {
			t.cells.Store(cells)
			t.ready = true
		}
		t.refused.Store(refused)
	case *placementv1.VerdictsUpdate_Ack:
		if e := k.Ack.GetError(); e != "" {
			klog.InfoS("Neighborly refused a booking on the verdict stream", "err", e)
		}
		v.forget(k.Ack.GetBookingId())
		v.wakeWaiters()
	case *placementv1.VerdictsUpdate_DroppedShapeId:
		v.drop(k.DroppedShapeId)
	case *placementv1.VerdictsUpdate_Refused:
		klog.InfoS("Neighborly refused a shape's subscription", "err", k.Refused.GetError())
		v.drop(k.Refused.GetShapeId())
	}
}

// wakeWaiters wakes the cycles waiting for an ack (waitAcks), which then
// look again at what they wait for; v.mu held.
func (v *verdicts) wakeWaiters() {
	close(v.acked)
	v.acked = make(chan struct{})
}

// drop forgets a shape (its next pod subscribes it again); v.mu held.
func (v *verdicts) drop(id uint64) {
	if t := v.byID[id]; t != nil {
		delete(v.byID, id)
		delete(v.shapes, t.key)
	}
}
