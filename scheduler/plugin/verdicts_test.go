package plugin

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// streamingPlacement is fakePlacement with a Verdicts stream: its tables are
// the fake's refusals and scores over `nodes`; a Reserve on the stream
// refuses the node to every shape ("booked") and is acked after that delta,
// `ackDelay` later (or never with holdAcks).
type streamingPlacement struct {
	fakePlacement
	nodes    []string
	ackDelay time.Duration
	holdAcks bool
	// breakAfterReserve: the first stream ends when its first Reserve arrives.
	breakAfterReserve bool
	// oneRequestAMessage: the fake does not announce VerdictsRequests (an
	// extender that predates them).
	oneRequestAMessage bool

	smu        sync.Mutex
	batches    int // turns sent as one VerdictsBatch
	requests   int // VerdictsRequests messages read
	held       int // bookings read in them
	subscribes int
	reserves   []string // "uid@node#booking", in arrival order
	streams    int
	// Nodes whose booking was acked: the unary Filter refuses them too.
	booked map[string]bool
}

// Filter is the fake's, with the nodes booked on the stream refused.
func (f *streamingPlacement) Filter(ctx context.Context, r *placementv1.FilterRequest) (*placementv1.FilterResponse, error) {
	resp, err := f.fakePlacement.Filter(ctx, r)
	if err != nil {
		return nil, err
	}
	f.smu.Lock()
	defer f.smu.Unlock()
	for i, n := range r.GetNodeNames() {
		if f.booked[n] {
			resp.Refused = append(resp.Refused, &placementv1.NodeRefusal{NodeName: n, Reason: "booked"})
			resp.Scores = slices.DeleteFunc(resp.Scores, func(s *placementv1.NodeScore) bool { return s.GetNodeName() == n })
			if i < len(resp.ScoresInOrder) {
				resp.ScoresInOrder[i] = 255
			}
		}
	}
	return resp, nil
}

func (f *streamingPlacement) verdicts(booked map[string]bool, shape uint64, full bool) *placementv1.VerdictsUpdate {
	t := &placementv1.VerdictTable{ShapeId: shape, Full: full, BlindScore: 5, NewReasons: map[uint32]string{}}
	for _, n := range f.nodes {
		v := &placementv1.NodeVerdict{NodeName: n, Feasible: true, Score: f.scores[n]}
		if why, ok := f.refused[n]; ok {
			// Reasons by id for one, inline for the others.
			v.Feasible = false
			if n == "n3" {
				v.ReasonId = 7
				t.NewReasons[7] = why
			} else {
				v.Reason = why
			}
		}
		if booked[n] {
			v.Feasible, v.Reason, v.ReasonId = false, "booked", 0
		}
		if full || booked[n] {
			t.Verdicts = append(t.Verdicts, v)
		}
	}
	return &placementv1.VerdictsUpdate{Kind: &placementv1.VerdictsUpdate_Table{Table: t}}
}

func (f *streamingPlacement) Verdicts(stream placementv1.Placement_VerdictsServer) error {
	f.smu.Lock()
	f.streams++
	first := f.streams == 1
	f.smu.Unlock()
	if !f.oneRequestAMessage {
		if err := stream.SetHeader(metadata.Pairs(requestsMetadata, "1")); err != nil {
			return err
		}
	}
	if err := stream.Send(&placementv1.VerdictsUpdate{Kind: &placementv1.VerdictsUpdate_Ready{Ready: true}}); err != nil {
		return err
	}
	md, _ := metadata.FromIncomingContext(stream.Context())
	batching := slices.Equal(md.Get(batchMetadata), []string{"1"})
	var shapes []uint64
	for {
		r, err := stream.Recv()
		if err != nil {
			return nil
		}
		requests := []*placementv1.VerdictsRequest{r}
		if b := r.GetBatch(); b != nil {
			if f.oneRequestAMessage {
				return fmt.Errorf("a VerdictsRequests message to an extender that did not announce them")
			}
			requests = b.GetRequests()
			f.smu.Lock()
			f.requests++
			f.held += len(requests)
			f.smu.Unlock()
		}
		for _, r := range requests {
			if stop, err := f.handle(stream, r, first, batching, &shapes); stop {
				return err
			}
		}
	}
}

// handle answers one request on the stream; stop: the stream ends (with err).
func (f *streamingPlacement) handle(stream placementv1.Placement_VerdictsServer, r *placementv1.VerdictsRequest, first, batching bool, shapes *[]uint64) (stop bool, err error) {
	switch k := r.Kind.(type) {
	case *placementv1.VerdictsRequest_Subscribe:
		f.smu.Lock()
		f.subscribes++
		f.smu.Unlock()
		*shapes = append(*shapes, k.Subscribe.ShapeId)
		if err := stream.Send(f.verdicts(nil, k.Subscribe.ShapeId, true)); err != nil {
			return true, err
		}
	case *placementv1.VerdictsRequest_Reserve:
		node := k.Reserve.NodeName
		f.smu.Lock()
		f.reserves = append(f.reserves, k.Reserve.Pod.GetUid()+"@"+node)
		f.smu.Unlock()
		if first && f.breakAfterReserve {
			return true, nil // the stream breaks before the ack
		}
		time.Sleep(f.ackDelay)
		if f.holdAcks {
			return false, nil
		}
		// The deltas, then the ack: one batch where the plugin asked for
		// batches, as the extender writes a turn.
		var turn []*placementv1.VerdictsUpdate
		for _, s := range *shapes {
			turn = append(turn, f.verdicts(map[string]bool{node: true}, s, false))
		}
		f.smu.Lock()
		if f.booked == nil {
			f.booked = map[string]bool{}
		}
		f.booked[node] = true
		f.smu.Unlock()
		ack := &placementv1.BookingAck{BookingId: k.Reserve.BookingId, Done: true, BookingsGeneration: 9}
		turn = append(turn, &placementv1.VerdictsUpdate{Kind: &placementv1.VerdictsUpdate_Ack{Ack: ack}})
		if batching {
			f.smu.Lock()
			f.batches++
			f.smu.Unlock()
			turn = []*placementv1.VerdictsUpdate{{Kind: &placementv1.VerdictsUpdate_Batch{
				Batch: &placementv1.VerdictsBatch{Updates: turn}}}}
		}
		for _, u := range turn {
			if err := stream.Send(u); err != nil {
				return true, err
			}
		}
	}
	return false, nil
}

func (f *streamingPlacement) counts() (filters, scoreCalls, subscribes int, reserves []string) {
	f.mu.Lock()
	filters, scoreCalls = len(f.filters), len(f.scoreReqs)
	f.mu.Unlock()
	f.smu.Lock()
	defer f.smu.Unlock()
	return filters, scoreCalls, f.subscribes, append([]string(nil), f.reserves...)
}

func newStreaming() *streamingPlacement {
	return &streamingPlacement{
		fakePlacement: fakePlacement{
			refused: map[string]string{"n2": "membw 91% > 80% on NUMA node 0", "n3": "isolation: a latency-critical pod runs here"},
			scores:  map[string]int32{"n1": 9, "n4": 2},
		},
		nodes: []string{"n1", "n2", "n3", "n4"},
	}
}

// streamedPlugin serves f and returns a plugin whose table for testPod's
// shape is ready.
func streamedPlugin(t *testing.T, f *streamingPlacement, a Args) *Plugin {
	t.Helper()
	a.Address, a.Insecure = serveServer(t, f), true
	on := true
	a.StreamedVerdicts = &on
	p := newPlugin(t, a)
	// The first two pods of the shape take the calls; the second subscribes it.
	for i := 0; i < 2; i++ {
		if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), testPod(), nil); st != nil {
			t.Fatal(st)
		}
		if _, _, subs, _ := f.counts(); i == 0 && subs != 0 {
			t.Fatalf("the shape's first pod subscribed it")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.verdicts.table(podMessage(testPod())) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the shape's table never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	return p
}

// serveServer starts srv on a free loopback port, plaintext.
func serveServer(t *testing.T, srv placementv1.PlacementServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	placementv1.RegisterPlacementServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func shapeReplica(uid string) *v1.Pod {
	p := testPod()
	p.UID = types.UID(uid)
	p.Name = "indexer-" + uid
	return p
}

type cycleResult struct {
	refused map[string]string
	scores  map[string]int64
}

// runCycle runs PreFilter, Filter on every node, PreScore and Score on the
// feasible ones.
func runCycle(t *testing.T, p *Plugin, pod *v1.Pod, nodes []string) cycleResult {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	_, st := p.PreFilter(ctx, state, pod, nil)
	if st != nil && st.Code() != fwk.Skip {
		t.Fatalf("PreFilter: %v", st)
	}
	// As kube-scheduler does: a PreFilter that answers Skip has no Filter run.
	skipFilter := st != nil
	res := cycleResult{refused: map[string]string{}, scores: map[string]int64{}}
	var feasible []fwk.NodeInfo
	for _, n := range nodes {
		if skipFilter {
			feasible = append(feasible, nodeInfo(n))
			continue
		}
		if st := p.Filter(ctx, state, pod, nodeInfo(n)); st != nil {
			res.refused[n] = st.Message()
			continue
		}
		feasible = append(feasible, nodeInfo(n))
	}
	if st := p.PreScore(ctx, state, pod, feasible); st != nil {
		t.Fatalf("PreScore: %v", st)
	}
	for _, n := range feasible {
		s, st := p.Score(ctx, state, pod, n)
		if st != nil {
			t.Fatalf("Score(%s): %v", n.Node().Name, st)
		}
		res.scores[n.Node().Name] = s
	}
	return res
}

func TestStreamedVerdictsServeAKnownShapeWithoutCalls(t *testing.T) {
	f := newStreaming()
	p := streamedPlugin(t, f, Args{})
	filters0, scores0, subs, _ := f.counts()
	if filters0 != 2 || subs != 1 {
		t.Fatalf("the first two pods: %d Filter calls and %d subscriptions, want 2 and 1", filters0, subs)
	}
	nodes := append(f.nodes, "unknown")
	got := runCycle(t, p, shapeReplica("uid-2"), nodes)
	filters, scoreCalls, _, _ := f.counts()
	if filters != filters0 || scoreCalls != scores0 {
		t.Errorf("a known shape made calls: Filter %d -> %d, Score %d -> %d", filters0, filters, scores0, scoreCalls)
	}
	want := cycleResult{
		refused: map[string]string{"n2": "neighborly: membw 91% > 80% on NUMA node 0", "n3": "neighborly: isolation: a latency-critical pod runs here"},
		// n1, n4 as the table says; a node without telemetry gets the blind score.
		scores: map[string]int64{"n1": 9, "n4": 2, "unknown": 5},
	}
	if !equalCycle(got, want) {
		t.Errorf("streamed cycle = %+v, want %+v", got, want)
	}
	// The same pod through the calls (the plugin with the stream off) agrees.
	a := Args{Address: p.args.Address, Insecure: true}
	off := false
	a.StreamedVerdicts = &off
	sync := runCycle(t, newPlugin(t, a), shapeReplica("uid-3"), nodes)
	// The fake's Score call leaves out nodes it has no score for: the plugin's
	// neutral 5, the blind score the table gives them.
	if !equalCycle(sync, want) {
		t.Errorf("synchronous cycle = %+v, want %+v", sync, want)
	}
}

func equalCycle(a, b cycleResult) bool {
	if len(a.refused) != len(b.refused) || len(a.scores) != len(b.scores) {
		return false
	}
	for k, v := range a.refused {
		if b.refused[k] != v {
			return false
		}
	}
	for k, v := range a.scores {
		if w, ok := b.scores[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestStreamedReserveIsAckedAfterItsDeltaAndItsNodeWaits(t *testing.T) {
	f := newStreaming()
	f.ackDelay = 150 * time.Millisecond
	p := streamedPlugin(t, f, Args{})
	start := time.Now()
	if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica("uid-2"), "n1"); st != nil {
		t.Fatal(st)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Reserve waited %v for the extender", d)
	}
	state := framework.NewCycleState()
	pod := shapeReplica("uid-3")
	if _, st := p.PreFilter(context.Background(), state, pod, nil); st != nil {
		t.Fatal(st)
	}
	// n4 has no booking in flight: answered at once.
	start = time.Now()
	if st := p.Filter(context.Background(), state, pod, nodeInfo("n4")); st != nil {
		t.Errorf("Filter(n4) = %v", st)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Filter on a node without a pending booking waited %v", d)
	}
	// n1, which the table passed before the booking, is passed at once,
	// ahead of its ack, and scored at once: its score before the booking (9)
	// held to the neutral middle. Reserve waits for the ack and reads the
	// booking's verdict, a refusal.
	if st := p.Filter(context.Background(), state, pod, nodeInfo("n1")); st != nil {
		t.Errorf("Filter(n1) with its booking not acked = %v, want passed ahead of the ack", st)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Filter(n1) waited %v for the ack", d)
	}
	if st := p.PreScore(context.Background(), state, pod, []fwk.NodeInfo{nodeInfo("n1"), nodeInfo("n4")}); st != nil {
		t.Fatal(st)
	}
	if s, st := p.Score(context.Background(), state, pod, nodeInfo("n1")); st != nil || s != extenderMaxScore/2 {
		t.Errorf("Score(n1) = %d, %v; want %d, its score before the booking held to the middle", s, st, extenderMaxScore/2)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Score(n1) waited %v for the ack", d)
	}
	st := p.Reserve(context.Background(), state, pod, "n1")
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "booked") {
		t.Errorf("Reserve(n1) = %v, want the refusal the ack came after", st)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("Reserve(n1) answered after %v, before the ack", d)
	}
	if _, _, _, reserves := f.counts(); len(reserves) != 1 || reserves[0] != "uid-2@n1" {
		t.Errorf("reserves on the stream = %v", reserves)
	}
	if f.reserved != nil {
		t.Errorf("synchronous Reserve calls = %v, want none", f.reserved)
	}
	// The plugin asked for batches: the delta and its ack came in one, and
	// were applied in their order (the refusal above was read after the ack).
	f.smu.Lock()
	batches := f.batches
	f.smu.Unlock()
	if batches != 1 {
		t.Errorf("turns sent as one batch = %d, want 1 (the plugin asks for batches)", batches)
	}
}

// Bookings are held back for bookingLinger and go together in one
// VerdictsRequests message; a cycle that passes a pending node ahead of its
// ack (and may wait for it in Reserve) sends them at once instead of waiting
// out the linger.
func TestHeldBookingsGoTogetherAndAWaitSendsThem(t *testing.T) {
	f := newStreaming()
	p := streamedPlugin(t, f, Args{BookingLinger: &Duration{time.Second}})
	messages0, sent0 := counterValue(t, bookingMessages.WithLabelValues("wait")), counterValue(t, bookingsSent)
	for i, node := range []string{"n1", "n2", "n4"} {
		if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica(fmt.Sprintf("uid-%d", 10+i)), node); st != nil {
			t.Fatal(st)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if _, _, _, reserves := f.counts(); len(reserves) != 0 {
		t.Fatalf("bookings sent before the linger or a wait: %v", reserves)
	}
	state := framework.NewCycleState()
	pod := shapeReplica("uid-20")
	if _, st := p.PreFilter(context.Background(), state, pod, nil); st != nil {
		t.Fatal(st)
	}
	// Filter passes n1 ahead of its ack and urges the held bookings out, long
	// before the linger ends; Reserve on it waits for the ack.
	start := time.Now()
	if st := p.Filter(context.Background(), state, pod, nodeInfo("n1")); st != nil {
		t.Fatalf("Filter(n1) = %v, want passed ahead of its ack", st)
	}
	for {
		if _, _, _, reserves := f.counts(); len(reserves) == 3 {
			break
		}
		if time.Since(start) > 500*time.Millisecond {
			t.Fatalf("the held bookings were not sent when Filter passed n1 ahead of its ack")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := p.Reserve(context.Background(), state, pod, "n1")
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Reserve(n1) answered after %v: the held bookings waited out the linger", d)
	}
	if st == nil || !strings.Contains(st.Message(), "booked") {
		t.Errorf("Reserve(n1) = %v, want the refusal its booking's ack came after", st)
	}
	_, _, _, reserves := f.counts()
	f.smu.Lock()
	requests, held := f.requests, f.held
	f.smu.Unlock()
	if want := []string{"uid-10@n1", "uid-11@n2", "uid-12@n4"}; !slices.Equal(reserves, want) {
		t.Errorf("reserves on the stream = %v, want %v in their order", reserves, want)
	}
	if requests != 1 || held != 3 {
		t.Errorf("VerdictsRequests messages = %d holding %d bookings, want 1 holding 3", requests, held)
	}
	if m, n := counterValue(t, bookingMessages.WithLabelValues("wait"))-messages0, counterValue(t, bookingsSent)-sent0; m != 1 || n != 3 {
		t.Errorf("counted %v messages sent for a wait, %v bookings; want 1 and 3", m, n)
	}
	// The wait's urge is spent: the next booking is held for its linger.
	if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica("uid-13"), "n5"); st != nil {
		t.Fatal(st)
	}
	time.Sleep(100 * time.Millisecond)
	if _, _, _, reserves := f.counts(); len(reserves) != 3 {
		t.Errorf("reserves on the stream = %v: the booking after the wait was not held", reserves)
	}
	if f.reserved != nil {
		t.Errorf("synchronous Reserve calls = %v, want none", f.reserved)
	}
}

// Filter passes a pending node its table passes without waiting, and sends
// the held bookings at once so that the ack comes while kube-scheduler
// filters the other nodes; Score reads the node's post-booking verdict and
// Reserve refuses it where the booking made the table refuse it. The other
// nodes are untouched.
func TestFilterPassesAPendingNodeAheadOfItsAckAndSendsItsBooking(t *testing.T) {
	registerMetrics()
	f := newStreaming()
	f.ackDelay = 100 * time.Millisecond
	p := streamedPlugin(t, f, Args{BookingLinger: &Duration{time.Second}})
	ahead0, refused0 := counterValue(t, passedAheadOfAcks.WithLabelValues("Filter")), counterValue(t, passedAheadOfAcks.WithLabelValues("Reserve_refused"))
	ctx := context.Background()
	if st := p.Reserve(ctx, framework.NewCycleState(), shapeReplica("uid-10"), "n1"); st != nil {
		t.Fatal(st)
	}
	state := framework.NewCycleState()
	pod := shapeReplica("uid-11")
	if _, st := p.PreFilter(ctx, state, pod, nil); st != nil {
		t.Fatal(st)
	}
	start := time.Now()
	for _, n := range []string{"n1", "n4"} {
		if st := p.Filter(ctx, state, pod, nodeInfo(n)); st != nil {
			t.Errorf("Filter(%s) = %v, want passed", n, st)
		}
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Filter waited %v for a booking's ack", d)
	}
	// Sent at once, not after the second of linger.
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		if _, _, _, reserves := f.counts(); len(reserves) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held booking was not sent when Filter passed its node ahead of the ack")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := counterValue(t, passedAheadOfAcks.WithLabelValues("Filter")) - ahead0; n != 1 {
		t.Errorf("nodes counted as passed ahead = %v, want 1", n)
	}
	if st := p.PreScore(ctx, state, pod, []fwk.NodeInfo{nodeInfo("n1"), nodeInfo("n4")}); st != nil {
		t.Fatal(st)
	}
	// Scored without waiting: n1's score before the booking (9) held to the
	// middle, as it may be acked by now; n4's as the table has it.
	scored0 := counterValue(t, passedAheadOfAcks.WithLabelValues("Score"))
	scores := map[string]int64{}
	for _, n := range []string{"n1", "n4"} {
		s, st := p.Score(ctx, state, pod, nodeInfo(n))
		if st != nil {
			t.Fatalf("Score(%s): %v", n, st)
		}
		scores[n] = s
	}
	scored := counterValue(t, passedAheadOfAcks.WithLabelValues("Score")) - scored0
	switch {
	case scores["n4"] != 2:
		t.Errorf("Score(n4) = %d, want 2", scores["n4"])
	case scored == 1 && scores["n1"] != extenderMaxScore/2:
		t.Errorf("Score(n1) before its ack = %d, want %d", scores["n1"], extenderMaxScore/2)
	case scored == 0 && scores["n1"] != 0:
		t.Errorf("Score(n1) after its ack = %d, want 0 (refused after the booking)", scores["n1"])
	}
	if st := p.Reserve(ctx, state, pod, "n4"); st != nil {
		t.Errorf("Reserve(n4), not passed ahead = %v", st)
	}
	if st := p.Reserve(ctx, state, pod, "n1"); st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "booked") {
		t.Errorf("Reserve(n1) = %v, want the refusal of its acked booking", st)
	}
	if n := counterValue(t, passedAheadOfAcks.WithLabelValues("Reserve_refused")) - refused0; n != 1 {
		t.Errorf("refusals at Reserve counted = %v, want 1", n)
	}
}

// An extender that does not announce VerdictsRequests gets held bookings one
// a message, and unwaited-for bookings leave once the linger is over.
func TestHeldBookingsGoOneAMessageToAnExtenderThatTakesNoBatches(t *testing.T) {
	f := newStreaming()
	f.oneRequestAMessage = true
	p := streamedPlugin(t, f, Args{BookingLinger: &Duration{30 * time.Millisecond}})
	for i, node := range []string{"n1", "n2"} {
		if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica(fmt.Sprintf("uid-%d", 10+i)), node); st != nil {
			t.Fatal(st)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(*p.verdicts.pending.Load()) != 0 {
		if time.Now().After(deadline) {
			_, _, _, reserves := f.counts()
			t.Fatalf("bookings never acked; the fake read %v", reserves)
		}
		time.Sleep(2 * time.Millisecond)
	}
	_, _, _, reserves := f.counts()
	f.smu.Lock()
	requests, streams := f.requests, f.streams
	f.smu.Unlock()
	if !slices.Equal(reserves, []string{"uid-10@n1", "uid-11@n2"}) || requests != 0 || streams != 1 {
		t.Errorf("reserves %v in %d VerdictsRequests on %d streams, want both one a message on one stream", reserves, requests, streams)
	}
}

// With bookingLinger 0 each booking goes at once, in a message of its own.
func TestBookingsWithoutLingerGoAtOnce(t *testing.T) {
	f := newStreaming()
	p := streamedPlugin(t, f, Args{BookingLinger: &Duration{0}})
	if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica("uid-10"), "n1"); st != nil {
		t.Fatal(st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(*p.verdicts.pending.Load()) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the booking was never acked")
		}
		time.Sleep(time.Millisecond)
	}
	f.smu.Lock()
	requests := f.requests
	f.smu.Unlock()
	if _, _, _, reserves := f.counts(); len(reserves) != 1 || requests != 0 {
		t.Errorf("reserves %v in %d VerdictsRequests, want one alone", reserves, requests)
	}
}

// A cycle that waits for an ack urges the sender only while bookings are
// held: an urge with none held would cut the next booking's linger short.
func TestAWaitUrgesOnlyWhileBookingsAreHeld(t *testing.T) {
	v := newVerdictsState(nil, func() {})
	v.linger = time.Second
	v.mu.Lock()
	v.addPending("n1", 1) // sent, not acked: nothing held
	v.mu.Unlock()
	past := time.Now().Add(-time.Millisecond)
	if v.await("Filter", -1, nil, "n1", past) {
		t.Fatal("await of a pending node returned true at a past deadline")
	}
	if len(v.urged) != 0 {
		t.Errorf("a wait with nothing held urged the sender")
	}
	v.mu.Lock()
	v.outbox = append(v.outbox, &placementv1.VerdictsRequest{})
	v.mu.Unlock()
	v.await("Filter", -1, nil, "n1", past)
	if len(v.urged) != 1 {
		t.Errorf("a wait with a booking held did not urge the sender")
	}
}

func counterValue(t *testing.T, c metrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// narrowedNames is the set PreFilter narrows nodes to for a replica of the
// test shape, sorted; nil when it names none (every node a candidate).
func narrowedNames(t *testing.T, p *Plugin, nodes []fwk.NodeInfo) []string {
	t.Helper()
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), shapeReplica("uid-9"), nodes)
	if st != nil {
		t.Fatal(st)
	}
	if res.AllNodes() {
		return nil
	}
	return sets.List(res.NodeNames)
}

// tenNodesRefusingTheFirst gives f the nodes n1..n10, the first k refused by
// interference, and returns them as kube-scheduler's node list.
func tenNodesRefusingTheFirst(f *streamingPlacement, k int) []fwk.NodeInfo {
	f.nodes, f.refused = nil, map[string]string{}
	var list []fwk.NodeInfo
	for i := 1; i <= 10; i++ {
		n := fmt.Sprintf("n%d", i)
		f.nodes = append(f.nodes, n)
		if i <= k {
			f.refused[n] = "interference: predicted slowdown 1.36x > 1.20x"
		}
		list = append(list, nodeInfo(n))
	}
	return list
}

// PreFilter's narrowed set, when half of it or more is nodes whose bookings
// wait for their acks, is taken again once the acks are read: an ack's
// delta may refuse its node (the booking's own harm), and a set of only such
// nodes would leave the pod no node in this cycle and a retry.
func TestPreFilterWaitsForAcksThatMayEmptyItsNarrowedSet(t *testing.T) {
	f := newStreaming()
	f.ackDelay = 100 * time.Millisecond
	list := tenNodesRefusingTheFirst(f, 7)
	p := streamedPlugin(t, f, Args{})
	prefilter := func() ([]string, time.Duration) {
		t.Helper()
		start := time.Now()
		res, st := p.PreFilter(context.Background(), framework.NewCycleState(), shapeReplica("uid-9"), list)
		if st != nil {
			t.Fatal(st)
		}
		if res.AllNodes() {
			return nil, time.Since(start)
		}
		return sets.List(res.NodeNames), time.Since(start)
	}
	// One booking in flight on a set of three: named at once, the booked node
	// with them (Filter judges it by the table as it stands).
	book := func(uid, node string) {
		t.Helper()
		if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica(uid), node); st != nil {
			t.Fatal(st)
		}
	}
	book("uid-1", "n10")
	if got, took := prefilter(); !slices.Equal(got, []string{"n10", "n8", "n9"}) || took > 50*time.Millisecond {
		t.Errorf("PreFilter with one of three booked = %v after %v, want [n10 n8 n9] at once", got, took)
	}
	// Its ack read (n10 refused, "booked"), two more bookings on a set of two:
	// PreFilter waits for their acks, which refuse both, and then names none
	// (every node a candidate, so that Filter gives the reasons).
	if !p.verdicts.settle("PreFilter", time.Now().Add(5*time.Second)) {
		t.Fatal("the first ack never came")
	}
	book("uid-2", "n8")
	book("uid-3", "n9")
	got, took := prefilter()
	if got != nil {
		t.Errorf("PreFilter after n8 and n9 were booked named %v, want every node (none passes once acked)", got)
	}
	if took < 100*time.Millisecond {
		t.Errorf("PreFilter answered after %v, before the acks", took)
	}
}

// A narrowed cycle whose set holds a node with a booking still held back
// sends the held bookings as it begins, not after the linger or when a
// Filter worker waits; a set without one leaves them held.
func TestNarrowedCycleSendsTheHeldBookingsOnItsNodes(t *testing.T) {
	registerMetrics()
	f := newStreaming()
	list := tenNodesRefusingTheFirst(f, 7)
	p := streamedPlugin(t, f, Args{BookingLinger: &Duration{time.Second}})
	narrowed0 := counterValue(t, bookingMessages.WithLabelValues("narrowed"))
	prefilter := func() []string { return narrowedNames(t, p, list) }
	book := func(uid, node string) {
		t.Helper()
		if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica(uid), node); st != nil {
			t.Fatal(st)
		}
	}
	reservesAfter := func(d time.Duration) []string {
		time.Sleep(d)
		_, _, _, reserves := f.counts()
		return reserves
	}
	// A booking on a node outside the list: the set [n10 n8 n9] does not
	// hold it, and it stays held.
	book("uid-1", "n42")
	if got := prefilter(); !slices.Equal(got, []string{"n10", "n8", "n9"}) {
		t.Fatalf("PreFilter named %v, want [n10 n8 n9]", got)
	}
	if r := reservesAfter(50 * time.Millisecond); len(r) != 0 {
		t.Errorf("reserves on the stream after a set without their nodes = %v, want none (held)", r)
	}
	// A booking on n9, in the set: PreFilter sends both held ones, in their
	// order, long before the linger ends.
	book("uid-2", "n9")
	if got := prefilter(); !slices.Equal(got, []string{"n10", "n8", "n9"}) {
		t.Fatalf("PreFilter named %v, want [n10 n8 n9]", got)
	}
	if r, want := reservesAfter(50*time.Millisecond), []string{"uid-1@n42", "uid-2@n9"}; !slices.Equal(r, want) {
		t.Errorf("reserves on the stream after a set holding n9 = %v, want %v", r, want)
	}
	if n := counterValue(t, bookingMessages.WithLabelValues("narrowed")) - narrowed0; n != 1 {
		t.Errorf("messages counted as sent for a narrowed cycle = %v, want 1", n)
	}
}

func TestStreamedPendingNodeFailsOpenAtTheDeadline(t *testing.T) {
	registerMetrics()
	f := newStreaming()
	f.holdAcks = true
	p := streamedPlugin(t, f, Args{FilterTimeout: Duration{80 * time.Millisecond}, ReserveTimeout: Duration{80 * time.Millisecond}})
	for i, node := range []string{"n1", "n2"} {
		if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica(fmt.Sprintf("uid-%d", 2+i)), node); st != nil {
			t.Fatal(st)
		}
	}
	state := framework.NewCycleState()
	pod := shapeReplica("uid-4")
	if _, st := p.PreFilter(context.Background(), state, pod, nil); st != nil {
		t.Fatal(st)
	}
	refused0 := counterValue(t, passedAheadOfAcks.WithLabelValues("Filter_refused"))
	start := time.Now()
	// n2, refused in the table before its booking, stays refused without a
	// wait; n1, passed before its booking, is passed ahead of the ack.
	if st := p.Filter(context.Background(), state, pod, nodeInfo("n2")); st == nil || !strings.Contains(st.Message(), "membw") {
		t.Errorf("Filter(n2) with its booking unacked = %v, want the table's refusal", st)
	}
	if st := p.Filter(context.Background(), state, pod, nodeInfo("n1")); st != nil {
		t.Errorf("Filter(n1) with its booking unacked = %v, want passed ahead", st)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Filter waited %v for acks", d)
	}
	if n := counterValue(t, passedAheadOfAcks.WithLabelValues("Filter_refused")) - refused0; n != 1 {
		t.Errorf("pending nodes refused as the table stood = %v, want 1", n)
	}
	// Chosen, n1's ack never comes: Reserve does not decide on the verdict
	// from before the booking, it lets the node through at the deadline.
	start = time.Now()
	if st := p.Reserve(context.Background(), state, pod, "n1"); st != nil {
		t.Errorf("Reserve(n1) with its booking unacked past the deadline = %v, want fail-open", st)
	}
	if d := time.Since(start); d < 60*time.Millisecond || d > 2*time.Second {
		t.Errorf("waited %v, want about the 80ms deadline", d)
	}
}

func TestStreamedReconnectResendsUnackedBookings(t *testing.T) {
	f := newStreaming()
	f.breakAfterReserve = true
	p := streamedPlugin(t, f, Args{})
	if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica("uid-2"), "n4"); st != nil {
		t.Fatal(st)
	}
	// The first stream ends without the ack; the second gets the booking
	// again, acks it, and the shape's table is fetched again.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, subs, reserves := f.counts()
		if len(reserves) == 2 && subs == 2 && len(*p.verdicts.pending.Load()) == 0 {
			if reserves[0] != "uid-2@n4" || reserves[1] != "uid-2@n4" {
				t.Errorf("reserves = %v", reserves)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the reconnect: reserves %v, subscriptions %d, pending %d", reserves, subs, len(*p.verdicts.pending.Load()))
		}
		time.Sleep(2 * time.Millisecond)
	}
	got := runCycle(t, p, shapeReplica("uid-3"), f.nodes)
	if !strings.Contains(got.refused["n4"], "booked") {
		t.Errorf("after the reconnect n4 = %q, want the booking's verdict", got.refused["n4"])
	}
}

// lookup reads node's verdict in t as Filter (filtering) or Score reads it,
// by name (no slot cache, no cycle's pending set).
func lookup(v *verdicts, t *shapeTable, node string, filtering bool) verdict {
	if filtering {
		d, _ := v.filterInfo(t, nil, nil, nodeInfo(node))
		return d
	}
	d, _ := v.scoreInfo(t, nil, nodeInfo(node))
	return d
}

// The plugin's copy of a table (issue 25): a full table, then deltas that
// refuse, pass, remove and add nodes, read as Filter and Score read them;
// while no node is refused Filter passes without reading a cell, and a node
// with an unacked booking is read as the table stands, without a wait.
func TestVerdictTableAppliesFullTablesAndDeltas(t *testing.T) {
	v := newVerdictsState(nil, func() {})
	tab := &shapeTable{id: 1, key: "k"}
	v.byID[1] = tab
	v.shapes["k"] = tab
	update := func(full bool, blind int32, reasons map[uint32]string, nodes ...*placementv1.NodeVerdict) {
		v.apply(&placementv1.VerdictsUpdate{Kind: &placementv1.VerdictsUpdate_Table{Table: &placementv1.VerdictTable{
			ShapeId: 1, Full: full, BlindScore: blind, NewReasons: reasons, Verdicts: nodes}}})
	}
	pass := func(name string, score int32) *placementv1.NodeVerdict {
		return &placementv1.NodeVerdict{NodeName: name, Feasible: true, Score: score}
	}
	refuse := func(name string, id uint32, inline string) *placementv1.NodeVerdict {
		return &placementv1.NodeVerdict{NodeName: name, ReasonId: id, Reason: inline}
	}
	check := func(step, node string, filtering bool, want verdict) {
		t.Helper()
		if got := lookup(v, tab, node, filtering); got != want {
			t.Errorf("%s: %s (filtering %v) = %+v; want %+v", step, node, filtering, got, want)
		}
	}
	update(true, 5, map[uint32]string{1: "membw 84% > 80%"}, pass("a", 7), refuse("b", 1, ""), refuse("c", 0, "inline reason"))
	if !tab.ready || tab.refused.Load() != 2 {
		t.Fatalf("after the full table: ready %v, refused %d; want true, 2", tab.ready, tab.refused.Load())
	}
	check("full", "a", false, verdict{feasible: true, score: 7})
	check("full", "b", true, verdict{reason: "membw 84% > 80%"})
	check("full", "c", true, verdict{reason: "inline reason"})
	check("full", "unknown", false, verdict{feasible: true, score: 5})

	update(false, 6, nil, pass("b", 3), &placementv1.NodeVerdict{NodeName: "c", Removed: true}, refuse("d", 1, ""))
	check("delta", "a", false, verdict{feasible: true, score: 7})
	check("delta", "b", false, verdict{feasible: true, score: 3})
	check("delta", "c", false, verdict{feasible: true, score: 6})
	check("delta", "d", true, verdict{reason: "membw 84% > 80%"})
	if n := tab.refused.Load(); n != 1 {
		t.Errorf("after the delta: %d refused, want 1", n)
	}
	// No node refused: Filter's shortcut; Score still reads the score.
	update(false, 6, nil, pass("d", 9))
	if n := tab.refused.Load(); n != 0 {
		t.Errorf("all passing: %d refused, want 0", n)
	}
	check("all pass", "d", true, verdict{feasible: true})
	check("all pass", "d", false, verdict{feasible: true, score: 9})
	// A node with an unacked booking is read as the table stands, and told
	// pending; Filter passes it ahead of its ack. The others are not pending.
	v.mu.Lock()
	v.addPending("a", 1)
	v.mu.Unlock()
	if d, pending := v.scoreInfo(tab, nil, nodeInfo("a")); !pending || d != (verdict{feasible: true, score: 7}) {
		t.Errorf("a with its booking unacked: %+v, pending %v; want its verdict as it stands, pending", d, pending)
	}
	if _, ahead := v.filterInfo(tab, nil, nil, nodeInfo("a")); !ahead {
		t.Error("Filter did not pass a ahead of its booking's ack")
	}
	if _, pending := v.scoreInfo(tab, nil, nodeInfo("b")); pending {
		t.Error("b told pending for a's booking")
	}
	check("pending elsewhere", "b", false, verdict{feasible: true, score: 3})
	// A booking on a node no table has named yet: the blind verdict, passed
	// ahead of its ack.
	v.mu.Lock()
	v.addPending("new", 1)
	v.mu.Unlock()
	if d, ahead := v.filterInfo(tab, nil, nil, nodeInfo("new")); !ahead || !d.feasible {
		t.Errorf("a node without a verdict, its booking unacked: %+v, ahead %v; want passed ahead", d, ahead)
	}
	check("pending on a new node", "a", true, verdict{feasible: true})
	v.mu.Lock()
	v.addPending("new", -1)
	v.addPending("a", -1)
	v.mu.Unlock()
	check("acked new node", "new", false, verdict{feasible: true, score: tab.blind.Load()})
	// A full table replaces everything, nodes beyond the first table's included.
	names := make([]*placementv1.NodeVerdict, 0, 200)
	for i := range 200 {
		names = append(names, pass(string(rune('A'+i%26))+strings.Repeat("x", i/26), int32(i%11)))
	}
	update(true, 1, nil, names...)
	check("second full", "a", false, verdict{feasible: true, score: 1})
	check("second full", "Hxxxxxxx", false, verdict{feasible: true, score: int64((7 + 26*7) % 11)})
}

// A shape that most nodes refuse: PreFilter names the nodes that pass, so
// kube-scheduler filters only those; a node without a verdict and one with an
// unacked booking are named too (Filter reads them).
func TestPreFilterNamesTheFewNodesAShapePasses(t *testing.T) {
	f := newStreaming()
	f.holdAcks = true
	list := append(tenNodesRefusingTheFirst(f, 8), nodeInfo("unknown"))
	p := streamedPlugin(t, f, Args{})
	prefilter := func(nodes []fwk.NodeInfo) []string { return narrowedNames(t, p, nodes) }
	if got, want := prefilter(list), []string{"n10", "n9", "unknown"}; !slices.Equal(got, want) {
		t.Errorf("PreFilter named %v, want %v", got, want)
	}
	// Asked again with the same list (the cached slots), and after a booking
	// on a refused node that the extender has not acked yet.
	if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica("uid-2"), "n1"); st != nil {
		t.Fatal(st)
	}
	if got, want := prefilter(list), []string{"n1", "n10", "n9", "unknown"}; !slices.Equal(got, want) {
		t.Errorf("PreFilter with n1's booking unacked named %v, want %v", got, want)
	}
	// A new node list (a node came): the slots are looked up again.
	grown := append(append([]fwk.NodeInfo(nil), list...), nodeInfo("new"))
	if got, want := prefilter(grown), []string{"n1", "n10", "n9", "new", "unknown"}; !slices.Equal(got, want) {
		t.Errorf("PreFilter over a grown list named %v, want %v", got, want)
	}
	// More than half of the list passing: every node stays a candidate.
	if got := prefilter(list[6:]); got != nil {
		t.Errorf("PreFilter over a list most of which passes named %v, want every node", got)
	}
	// None passing: every node stays a candidate, so Filter gives the reasons.
	if got := prefilter(list[1:8]); got != nil {
		t.Errorf("PreFilter over refused nodes named %v, want every node (Filter's reasons)", got)
	}
}

// Filter and Score find a node of PreFilter's list by identity in the list's
// slot cache; a NodeInfo not in it (a preemption dry run's clone, a node
// named after the cache was made) by name; a pending booking is matched by
// slot, or by name where either side had no slot.
func TestLookupByNodeInfoAgreesWithLookupByName(t *testing.T) {
	v := newVerdictsState(nil, func() {})
	tab := &shapeTable{id: 1, key: "k"}
	v.byID[1] = tab
	v.shapes["k"] = tab
	update := func(full bool, nodes ...*placementv1.NodeVerdict) {
		v.apply(&placementv1.VerdictsUpdate{Kind: &placementv1.VerdictsUpdate_Table{Table: &placementv1.VerdictTable{
			ShapeId: 1, Full: full, BlindScore: 5, NewReasons: map[uint32]string{1: "membw 84% > 80%"}, Verdicts: nodes}}})
	}
	update(true, &placementv1.NodeVerdict{NodeName: "a", Feasible: true, Score: 7},
		&placementv1.NodeVerdict{NodeName: "b", ReasonId: 1})
	list := []fwk.NodeInfo{nodeInfo("a"), nodeInfo("b"), nodeInfo("c")}
	cache := v.snapshotSlots(list)
	if len(cache.byInfo) != 2 {
		t.Fatalf("the cache holds %d nodes by identity, want 2 (a and b; c has no slot)", len(cache.byInfo))
	}
	// Every node's name in the list's order, with a slot or without.
	if want := []string{"a", "b", "c"}; !slices.Equal(cache.names, want) {
		t.Errorf("the cache names %v, want %v", cache.names, want)
	}
	if again := v.snapshotSlots([]fwk.NodeInfo{list[0], list[1], list[2]}); again != cache {
		t.Error("the same NodeInfos in the same order made a new cache")
	}
	// c gets its slot after the cache was made.
	update(false, &placementv1.NodeVerdict{NodeName: "c", Feasible: true, Score: 2})
	for _, info := range append(list, nodeInfo("a"), nodeInfo("b"), nodeInfo("c"), nodeInfo("unknown")) {
		name := info.Node().Name
		if got, _ := v.filterInfo(tab, cache, nil, info); got != lookup(v, tab, name, true) {
			t.Errorf("%s: Filter's read by NodeInfo %+v, by name %+v", name, got, lookup(v, tab, name, true))
		}
		if got, _ := v.scoreInfo(tab, cache, info); got != lookup(v, tab, name, false) {
			t.Errorf("%s: Score's read by NodeInfo %+v, by name %+v", name, got, lookup(v, tab, name, false))
		}
	}
	// Pending: a (slot) by slot, from the cached NodeInfo and from a clone;
	// "late" (no slot when booked, one since) by name.
	v.mu.Lock()
	v.addPending("a", 1)
	v.addPending("late", 1)
	v.mu.Unlock()
	update(false, &placementv1.NodeVerdict{NodeName: "late", Feasible: true, Score: 1})
	for _, info := range []fwk.NodeInfo{list[0], nodeInfo("a"), nodeInfo("late")} {
		if _, pending := v.scoreInfo(tab, cache, info); !pending {
			t.Errorf("%s: its unacked booking not found by NodeInfo", info.Node().Name)
		}
	}
	for _, info := range []fwk.NodeInfo{list[1], list[2], nodeInfo("c")} {
		if _, pending := v.scoreInfo(tab, cache, info); pending {
			t.Errorf("%s: told pending for another node's booking", info.Node().Name)
		}
	}
}

// A shape subscribed with least_harm_state: refused nodes carry their second
// look, and the table the fallback's state; the plugin passes a refused node
// of the state's group whose harm is within its bound, with the second
// look's score, and a move of the bound is one field, not a row per node.
func TestLeastHarmStateAppliedToRefusedNodes(t *testing.T) {
	v := newVerdictsState(nil, func() {})
	tab := &shapeTable{id: 1, key: "k"}
	v.byID[1] = tab
	v.shapes["k"] = tab
	table := func(full bool, state *placementv1.LeastHarm, nodes ...*placementv1.NodeVerdict) {
		v.apply(&placementv1.VerdictsUpdate{Kind: &placementv1.VerdictsUpdate_Table{Table: &placementv1.VerdictTable{
			ShapeId: 1, Full: full, BlindScore: 5, NewReasons: map[uint32]string{1: "interference: 1.40x > 1.20x"},
			Verdicts: nodes, LeastHarm: state}}})
	}
	soft := func(name string, group uint32, score int32, harm uint64) *placementv1.NodeVerdict {
		return &placementv1.NodeVerdict{NodeName: name, ReasonId: 1, FallbackGroup: group, FallbackScore: score, FallbackHarmMicros: harm}
	}
	check := func(step, node string, want verdict) {
		t.Helper()
		for _, filtering := range []bool{false, true} {
			if got := lookup(v, tab, node, filtering); got != want {
				t.Errorf("%s: %s (filtering %v) = %+v, want %+v", step, node, filtering, got, want)
			}
		}
	}
	refused := verdict{reason: "interference: 1.40x > 1.20x"}
	hard := func(name string) *placementv1.NodeVerdict {
		return &placementv1.NodeVerdict{NodeName: name, ReasonId: 1}
	}
	table(true, &placementv1.LeastHarm{Active: true, Group: 1, BoundMicros: 450_000},
		soft("a", 1, 7, 400_000), soft("b", 1, 4, 450_000), soft("c", 1, 9, 450_001), soft("d", 2, 8, 100_000),
		hard("e"), hard("g"), hard("h"), hard("i"), hard("j"))
	check("active", "a", verdict{feasible: true, score: 7})
	check("active", "b", verdict{feasible: true, score: 4})
	check("active", "c", refused) // past the bound
	check("active", "d", refused) // the other group
	check("active", "e", refused) // no second look
	// The bound moves: one field, no node sent.
	table(false, &placementv1.LeastHarm{Active: true, Group: 1, BoundMicros: 500_000})
	check("bound moved", "c", verdict{feasible: true, score: 9})
	// The group that passes changes.
	table(false, &placementv1.LeastHarm{Active: true, Group: 2, BoundMicros: 150_000})
	check("group 2", "a", refused)
	check("group 2", "d", verdict{feasible: true, score: 8})
	// A delta without the state keeps it; a node's second look moves with it.
	table(false, nil, soft("d", 2, 3, 120_000))
	check("delta", "d", verdict{feasible: true, score: 3})
	// The fallback off: every refused node refused again.
	table(false, &placementv1.LeastHarm{})
	check("off", "d", refused)
	// PreFilter's narrowing counts the fallback's passes as passing nodes.
	table(false, &placementv1.LeastHarm{Active: true, Group: 1, BoundMicros: 500_000})
	var list []fwk.NodeInfo
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		list = append(list, nodeInfo(n))
	}
	names, _ := v.passing(tab, list, v.snapshotSlots(list))
	if got, want := sets.List(names), []string{"a", "b", "c", "f"}; !slices.Equal(got, want) {
		t.Errorf("PreFilter named %v, want %v (the fallback's passes, and f without a verdict)", got, want)
	}
	// A full table from an extender without the state: none applied.
	table(true, nil, soft("a", 1, 7, 400_000))
	check("full without state", "a", refused)
}

func TestPreFilterSkipsFilterWhileNothingIsRefusedOrPending(t *testing.T) {
	f := newStreaming()
	f.refused = map[string]string{}
	f.ackDelay = 150 * time.Millisecond
	p := streamedPlugin(t, f, Args{})
	ctx := context.Background()
	prefilter := func(uid string) (*framework.CycleState, *fwk.Status) {
		state := framework.NewCycleState()
		_, st := p.PreFilter(ctx, state, shapeReplica(uid), nil)
		return state, st
	}
	// Nothing refused, nothing pending: kube-scheduler skips the Filter calls,
	// and Score still reads the table.
	if _, st := prefilter("uid-2"); st.Code() != fwk.Skip {
		t.Fatalf("PreFilter with nothing refused or pending = %v, want Skip", st)
	}
	got := runCycle(t, p, shapeReplica("uid-2"), append(f.nodes, "unknown"))
	want := cycleResult{refused: map[string]string{}, scores: map[string]int64{"n1": 9, "n2": 0, "n3": 0, "n4": 2, "unknown": 5}}
	if !equalCycle(got, want) {
		t.Errorf("cycle with Filter skipped = %+v, want %+v", got, want)
	}
	// A booking not acked yet: Filter runs and passes every node at once, the
	// booked one ahead of its ack; Reserve on it waits for the ack, whose
	// delta refuses it.
	if st := p.Reserve(ctx, framework.NewCycleState(), shapeReplica("uid-3"), "n1"); st != nil {
		t.Fatal(st)
	}
	state, st := prefilter("uid-4")
	if st != nil {
		t.Fatalf("PreFilter with a booking pending = %v, want nil (Filter runs)", st)
	}
	start := time.Now()
	for _, n := range []string{"n4", "n1"} {
		if st := p.Filter(ctx, state, shapeReplica("uid-4"), nodeInfo(n)); st != nil {
			t.Errorf("Filter(%s) = %v", n, st)
		}
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Filter waited %v", d)
	}
	if st := p.Reserve(ctx, state, shapeReplica("uid-4"), "n1"); st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "booked") {
		t.Errorf("Reserve(n1) passed ahead of its booking's ack = %v, want the refusal its ack came after", st)
	}
	// Acked, the table now refuses n1: Filter runs and gives the refusal.
	state, st = prefilter("uid-5")
	if st != nil {
		t.Fatalf("PreFilter with a node refused = %v, want nil (Filter runs)", st)
	}
	if st := p.Filter(ctx, state, shapeReplica("uid-5"), nodeInfo("n1")); st == nil {
		t.Errorf("Filter(n1) refused in the table passed")
	}
}

// A pod of a shape without a table, on a cluster larger than the window, is
// judged by windowed calls that do not wait for the bookings in flight; a
// node of the window whose booking was unacked at the call is judged again
// after its ack, when a Filter reaches it, whatever the call answered (a
// booking can lift a refusal as well as make one), the call's own node too.
func TestWindowedCycleJudgesAPendingNodeAgainAfterItsAck(t *testing.T) {
	f := newStreaming()
	f.ackDelay = 150 * time.Millisecond
	f.refused["node-0006"] = "membw 91% > 80% on NUMA node 0"
	p := streamedPlugin(t, f, Args{})
	nodes := make([]fwk.NodeInfo, 1000) // more than a window (978)
	for i := range nodes {
		nodes[i] = nodeInfo(fmt.Sprintf("node-%04d", i))
	}
	ctx := context.Background()
	began := time.Now()
	for _, node := range []string{"node-0005", "node-0006"} {
		if st := p.Reserve(ctx, framework.NewCycleState(), shapeReplica("uid-"+node), node); st != nil {
			t.Fatal(st)
		}
	}
	before, _, _, _ := f.counts()
	calls := func() int {
		n, _, _, _ := f.counts()
		return n - before
	}
	pod := testPod()
	pod.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("3Gi") // a shape of its own
	state := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if st := p.Filter(ctx, state, pod, nodes[4]); st != nil {
		t.Errorf("Filter(node-0004) = %v", st)
	}
	if d := time.Since(began); d > 100*time.Millisecond {
		t.Errorf("the window was judged after %v: it waited for the bookings' acks", d)
	}
	if n := calls(); n != 1 {
		t.Errorf("%d calls before a booked node was reached, want 1", n)
	}
	// node-0005 passed in the call; its booking's ack (150 ms) refuses it.
	if st := p.Filter(ctx, state, pod, nodes[5]); st == nil || !strings.Contains(st.Message(), "booked") {
		t.Errorf("Filter(node-0005) = %v, want the refusal of the booking acked after the call", st)
	}
	if d := time.Since(began); d < 140*time.Millisecond {
		t.Errorf("node-0005 answered after %v, before its ack", d)
	}
	// node-0006 was refused in the call: judged again after its ack too (300 ms).
	if st := p.Filter(ctx, state, pod, nodes[6]); st == nil {
		t.Errorf("Filter(node-0006) passes, want a refusal")
	}
	if d := time.Since(began); d < 290*time.Millisecond {
		t.Errorf("node-0006 answered after %v, before its ack", d)
	}
	if n := calls(); n != 3 {
		t.Errorf("%d calls, want 3 (the window, then each booked node's window again)", n)
	}
	if st := p.Filter(ctx, state, pod, nodes[5]); st == nil || !strings.Contains(st.Message(), "booked") {
		t.Errorf("Filter(node-0005) again = %v", st)
	}
	if n := calls(); n != 3 {
		t.Errorf("%d calls after node-0005 was asked twice, want 3", n)
	}
	if st := p.PreScore(ctx, state, pod, []fwk.NodeInfo{nodes[4]}); st != nil {
		t.Fatalf("PreScore: %v", st)
	}
	if _, scoreCalls, _, _ := f.counts(); scoreCalls != 0 {
		t.Errorf("Score calls = %d, want the windows' scores", scoreCalls)
	}

	// The node that makes the call is the one booked meanwhile: it is judged
	// again at once, after its ack.
	if st := p.Reserve(ctx, framework.NewCycleState(), shapeReplica("uid-node-0007"), "node-0007"); st != nil {
		t.Fatal(st)
	}
	began = time.Now()
	state = framework.NewCycleState()
	if _, st := p.PreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if st := p.Filter(ctx, state, pod, nodes[7]); st == nil || !strings.Contains(st.Message(), "booked") {
		t.Errorf("Filter(node-0007), the call's own node = %v, want the refusal of the booking acked after the call", st)
	}
	if d := time.Since(began); d < 140*time.Millisecond {
		t.Errorf("node-0007 answered after %v, before its ack", d)
	}
}

// With PreFilter given the node list (as kube-scheduler gives it), Filter
// tells the pending nodes by their Node objects while the table refuses
// nothing: the booked node, and a clone of its NodeInfo (preemption's,
// nominated pods'), wait for the ack; the others pass at once; a booking made
// after PreFilter is still waited for (the cycle then compares names); with
// a pending node outside the list the cycle compares names.
func TestFilterTellsPendingNodesByTheirNodeObjects(t *testing.T) {
	ctx := context.Background()
	list := []fwk.NodeInfo{nodeInfo("n1"), nodeInfo("n2"), nodeInfo("n3"), nodeInfo("n4")}
	setup := func(t *testing.T) *Plugin {
		f := newStreaming()
		f.refused = map[string]string{}
		f.ackDelay = 150 * time.Millisecond
		return streamedPlugin(t, f, Args{FilterTimeout: Duration{2 * time.Second}})
	}
	book := func(t *testing.T, p *Plugin, uid, node string) {
		if st := p.Reserve(ctx, framework.NewCycleState(), shapeReplica(uid), node); st != nil {
			t.Fatal(st)
		}
	}
	prefilter := func(t *testing.T, p *Plugin, uid string, nodes []fwk.NodeInfo) *framework.CycleState {
		state := framework.NewCycleState()
		if _, st := p.PreFilter(ctx, state, shapeReplica(uid), nodes); st != nil {
			t.Fatalf("PreFilter with a booking pending = %v, want nil (Filter runs)", st)
		}
		return state
	}
	// Filter passes the pending node ahead of its ack, and Reserve on it
	// waits for the ack and refuses it: the node was told as pending.
	waitsForAck := func(t *testing.T, p *Plugin, state *framework.CycleState, uid string, info fwk.NodeInfo) {
		t.Helper()
		if st := p.Filter(ctx, state, shapeReplica(uid), info); st != nil {
			t.Errorf("Filter(%s) = %v, want passed ahead of its booking's ack", info.Node().Name, st)
		}
		st := p.Reserve(ctx, state, shapeReplica(uid), info.Node().Name)
		if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "booked") {
			t.Errorf("Reserve(%s) = %v, want the refusal its booking's ack came after", info.Node().Name, st)
		}
	}
	t.Run("booked and cloned", func(t *testing.T) {
		p := setup(t)
		book(t, p, "uid-3", "n1")
		state := prefilter(t, p, "uid-4", list)
		c, _ := state.Read(filterKey)
		if sc, ok := c.(*streamedCycle); !ok || sc.pending == nil || len(sc.pending.nodes) != 1 || sc.pending.nodes[0] != list[0].Node() {
			t.Fatalf("the cycle's pending bookings = %+v, want n1's Node", c)
		}
		start := time.Now()
		if st := p.Filter(ctx, state, shapeReplica("uid-4"), list[3]); st != nil {
			t.Errorf("Filter(n4) = %v", st)
		}
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Errorf("Filter on a node without a pending booking waited %v", d)
		}
		waitsForAck(t, p, state, "uid-4", list[0].(*framework.NodeInfo).Snapshot())
	})
	t.Run("booked after PreFilter", func(t *testing.T) {
		p := setup(t)
		book(t, p, "uid-3", "n1")
		state := prefilter(t, p, "uid-4", list)
		book(t, p, "uid-5", "n3") // an Unreserve's, in kube-scheduler
		waitsForAck(t, p, state, "uid-4", list[2])
	})
	t.Run("pending outside the list", func(t *testing.T) {
		p := setup(t)
		book(t, p, "uid-3", "n4")
		state := prefilter(t, p, "uid-4", list[:2])
		if c, _ := state.Read(filterKey); c.(*streamedCycle).pending != nil {
			t.Errorf("a pending node outside the list: want names compared, got %+v", c.(*streamedCycle).pending)
		}
		waitsForAck(t, p, state, "uid-4", nodeInfo("n4"))
	})
}

// A cycle's wait for acks is recorded under its extension point and how it
// ended; a lookup that needs no wait records nothing.
func TestAckWaitsAreRecordedByPointAndResult(t *testing.T) {
	registerMetrics()
	count := func(point, result string) uint64 {
		t.Helper()
		n, err := testutil.GetHistogramMetricCount(ackWait.WithLabelValues(point, result))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	v := newVerdictsState(nil, func() {})
	v.supported = true
	before := map[string]uint64{}
	for _, k := range [][2]string{{"Filter", "acked"}, {"Filter", "timed_out"}, {"Score", "acked"}, {"PreFilter", "acked"}} {
		before[k[0]+"/"+k[1]] = count(k[0], k[1])
	}
	soon := time.Now().Add(5 * time.Second)
	if !v.await("Score", -1, nil, "n1", soon) || !v.settle("PreFilter", soon) {
		t.Fatal("a wait with nothing pending failed")
	}
	if got := count("Score", "acked") - before["Score/acked"]; got != 0 {
		t.Errorf("a lookup without a pending booking recorded %d waits", got)
	}
	v.mu.Lock()
	v.addPending("n1", 1)
	v.mu.Unlock()
	if v.await("Filter", -1, nil, "n1", time.Now().Add(5*time.Millisecond)) {
		t.Fatal("a pending node was read before its ack")
	}
	if got := count("Filter", "timed_out") - before["Filter/timed_out"]; got != 1 {
		t.Errorf("a wait that timed out recorded %d, want 1", got)
	}
	sumBefore, _ := testutil.GetHistogramMetricValue(ackWait.WithLabelValues("Filter", "acked"))
	go ackAfter(v, "n1", 10*time.Millisecond)
	if !v.await("Filter", -1, nil, "n1", soon) {
		t.Fatal("the wait for an ack failed")
	}
	if got := count("Filter", "acked") - before["Filter/acked"]; got != 1 {
		t.Errorf("an acked wait recorded %d, want 1", got)
	}
	sum, err := testutil.GetHistogramMetricValue(ackWait.WithLabelValues("Filter", "acked"))
	if err != nil || sum-sumBefore < 0.005 {
		t.Errorf("the acked wait's seconds: %v (%v), want at least 5 ms", sum-sumBefore, err)
	}
}

// ackAfter acks one booking on node after d, as the stream's reader does.
func ackAfter(v *verdicts, node string, d time.Duration) {
	time.Sleep(d)
	v.mu.Lock()
	v.addPending(node, -1)
	v.wakeWaiters()
	v.mu.Unlock()
}
