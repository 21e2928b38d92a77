package plugin

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// jobPod is testPod as a pod of Job `job`: pods of different Jobs are of
// different shapes (the workload key comes from the owner).
func jobPod(uid, job string) *v1.Pod {
	p := testPod()
	p.UID = types.UID(uid)
	p.Name = job + "-" + uid
	p.OwnerReferences[0].Name = job
	return p
}

// lookAheadPlugin serves f and returns a plugin with streamed verdicts and
// the look-ahead at most `max` shapes, once its stream is open.
func lookAheadPlugin(t *testing.T, f *streamingPlacement, max int) *Plugin {
	t.Helper()
	on := true
	p := newPlugin(t, Args{Address: serveServer(t, f), Insecure: true, StreamedVerdicts: &on, LookAheadShapes: &max})
	eventually(t, "the verdict stream to open", func() bool {
		p.verdicts.mu.RLock()
		defer p.verdicts.mu.RUnlock()
		return p.verdicts.supported && p.verdicts.stream != nil
	})
	return p
}

// tableReady: the pod's shape has a ready table here.
func tableReady(p *Plugin, pod *v1.Pod) bool {
	key := shapeKey(podMessage(pod))
	p.verdicts.mu.RLock()
	defer p.verdicts.mu.RUnlock()
	t := p.verdicts.shapes[key]
	return t != nil && t.ready
}

func subscribed(p *Plugin, pod *v1.Pod) bool {
	key := shapeKey(podMessage(pod))
	p.verdicts.mu.RLock()
	defer p.verdicts.mu.RUnlock()
	return p.verdicts.shapes[key] != nil
}

func (f *streamingPlacement) unsubscribed() []uint64 {
	f.smu.Lock()
	defer f.smu.Unlock()
	return append([]uint64(nil), f.unsubscribes...)
}

func TestLookAheadGivesAQueuedPodOfANewShapeItsTableBeforeItsCycle(t *testing.T) {
	f := newStreaming()
	p := lookAheadPlugin(t, f, 4)
	ready0 := counterValue(t, lookAheads.WithLabelValues("ready"))
	unsub0 := counterValue(t, lookAheads.WithLabelValues("unsubscribed"))
	pod := jobPod("u-1", "scan-1")
	if st := p.PreEnqueue(context.Background(), pod); st != nil {
		t.Fatalf("PreEnqueue held the pod back: %v", st)
	}
	eventually(t, "the queued pod's table", func() bool { return tableReady(p, pod) })

	// Its cycle reads the table: no call, the extender's verdicts.
	got := runCycle(t, p, pod, f.nodes)
	filters, scoreCalls, subs, _ := f.counts()
	if filters != 0 || scoreCalls != 0 || subs != 1 {
		t.Errorf("the pod's cycle: %d Filter and %d Score calls, %d subscriptions; want 0, 0, 1", filters, scoreCalls, subs)
	}
	want := cycleResult{
		refused: map[string]string{"n2": "neighborly: membw 91% > 80% on NUMA node 0", "n3": "neighborly: isolation: a latency-critical pod runs here"},
		scores:  map[string]int64{"n1": 9, "n4": 2},
	}
	if !equalCycle(got, want) {
		t.Errorf("cycle = %+v, want %+v", got, want)
	}
	if d := counterValue(t, lookAheads.WithLabelValues("ready")) - ready0; d != 1 {
		t.Errorf("look_ahead_total{outcome=ready} rose by %v, want 1", d)
	}
	if u := f.unsubscribed(); len(u) != 0 {
		t.Fatalf("unsubscribed %v while its cycle could still read it", u)
	}

	// The next cycle (another shape's pod) begins: no pod of the shape is
	// queued, so it is unsubscribed, here and at the extender.
	runCycle(t, p, jobPod("u-2", "scan-2"), f.nodes)
	if subscribed(p, pod) {
		t.Error("the shape read by the last cycle is still subscribed")
	}
	eventually(t, "the extender to read the unsubscription", func() bool { return len(f.unsubscribed()) == 1 })
	if d := counterValue(t, lookAheads.WithLabelValues("unsubscribed")) - unsub0; d != 1 {
		t.Errorf("look_ahead_total{outcome=unsubscribed} rose by %v, want 1", d)
	}
}

func TestLookAheadPodPoppedBeforeItsTableWaitsForIt(t *testing.T) {
	f := newStreaming()
	f.tableDelay = 50 * time.Millisecond
	p := lookAheadPlugin(t, f, 4)
	notReady0 := counterValue(t, lookAheads.WithLabelValues("not_ready"))
	pod := jobPod("u-1", "scan-1")
	p.PreEnqueue(context.Background(), pod)
	// Popped at once, as a pod queued alone is: its cycle waits for the
	// table on the way rather than asking the extender again.
	start := time.Now()
	runCycle(t, p, pod, f.nodes)
	if filters, scoreCalls, subs, _ := f.counts(); filters != 0 || scoreCalls != 0 || subs != 1 {
		t.Errorf("%d Filter and %d Score calls, %d subscriptions; want 0, 0, 1", filters, scoreCalls, subs)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Errorf("the cycle took %v: it did not wait for the table", waited)
	}
	if d := counterValue(t, lookAheads.WithLabelValues("not_ready")) - notReady0; d != 1 {
		t.Errorf("look_ahead_total{outcome=not_ready} rose by %v, want 1", d)
	}

	// A table that does not come by filterTimeout: the cycle takes the calls.
	f.tableDelay = time.Second
	slow := jobPod("u-2", "scan-2")
	p.PreEnqueue(context.Background(), slow)
	start = time.Now()
	runCycle(t, p, slow, f.nodes)
	if filters, _, _, _ := f.counts(); filters != 1 {
		t.Errorf("with the table late: %d Filter calls, want 1", filters)
	}
	if took := time.Since(start); took < p.args.FilterTimeout.Duration || took > 900*time.Millisecond {
		t.Errorf("with the table late the cycle took %v, want filterTimeout (%v) and the calls", took, p.args.FilterTimeout.Duration)
	}
}

func TestLookAheadSubscribesAFewShapesAtATimeInQueueOrder(t *testing.T) {
	f := newStreaming()
	p := lookAheadPlugin(t, f, 2)
	ctx := context.Background()
	a1, a2 := jobPod("u-a1", "job-a"), jobPod("u-a2", "job-a")
	b, c := jobPod("u-b", "job-b"), jobPod("u-c", "job-c")
	for _, pod := range []*v1.Pod{a1, b, a2, c} {
		p.PreEnqueue(ctx, pod)
	}
	// Two shapes at most: a's and b's, not c's.
	eventually(t, "two tables", func() bool { return tableReady(p, a1) && tableReady(p, b) })
	if subscribed(p, c) {
		t.Fatal("a third shape subscribed ahead with lookAheadShapes 2")
	}
	// a1's cycle reads a's table; c's shape takes the place it leaves.
	runCycle(t, p, a1, f.nodes)
	eventually(t, "c's table", func() bool { return tableReady(p, c) })
	runCycle(t, p, b, f.nodes)
	// As the next cycle begins, the shapes the last one read go unless a pod
	// of theirs is queued: b's goes, a's stays for a2.
	runCycle(t, p, a2, f.nodes)
	if !subscribed(p, a2) || subscribed(p, b) {
		t.Errorf("in a2's cycle: a subscribed %v (want true), b subscribed %v (want false)", subscribed(p, a2), subscribed(p, b))
	}
	runCycle(t, p, c, f.nodes)
	if filters, scoreCalls, subs, _ := f.counts(); filters != 0 || scoreCalls != 0 || subs != 3 {
		t.Errorf("%d Filter and %d Score calls, %d subscriptions; want 0, 0, 3", filters, scoreCalls, subs)
	}
	if subscribed(p, a1) {
		t.Error("a's shape still subscribed after its last queued pod's cycle and the next")
	}
}

func TestLookAheadPodWhoseCycleComesFirstTakesTheCalls(t *testing.T) {
	f := newStreaming()
	p := lookAheadPlugin(t, f, 1)
	behind0 := counterValue(t, lookAheads.WithLabelValues("behind"))
	a, b := jobPod("u-a", "job-a"), jobPod("u-b", "job-b")
	p.PreEnqueue(context.Background(), a)
	p.PreEnqueue(context.Background(), b)
	eventually(t, "a's table", func() bool { return tableReady(p, a) })
	// b's cycle comes before a's (a backed off, say): b's shape was still
	// waiting for its turn, so b takes the calls, and its entry goes.
	runCycle(t, p, b, f.nodes)
	if filters, _, _, _ := f.counts(); filters != 1 {
		t.Errorf("b's cycle made %d Filter calls, want 1", filters)
	}
	if d := counterValue(t, lookAheads.WithLabelValues("behind")) - behind0; d != 1 {
		t.Errorf("look_ahead_total{outcome=behind} rose by %v, want 1", d)
	}
	runCycle(t, p, a, f.nodes)
	if filters, _, subs, _ := f.counts(); filters != 1 || subs != 1 {
		t.Errorf("after a's cycle: %d Filter calls and %d subscriptions, want 1 and 1", filters, subs)
	}
	p.verdicts.mu.RLock()
	open, queued := p.verdicts.ahead.open, len(p.verdicts.ahead.queue)
	p.verdicts.mu.RUnlock()
	if open != 0 || queued != 0 {
		t.Errorf("look-ahead left %d open and %d queued, want none", open, queued)
	}
}

func TestLookAheadOffSubscribesNothingAhead(t *testing.T) {
	f := newStreaming()
	p := lookAheadPlugin(t, f, 0)
	pod := jobPod("u-1", "scan-1")
	p.PreEnqueue(context.Background(), pod)
	runCycle(t, p, pod, f.nodes)
	if filters, _, subs, _ := f.counts(); filters != 1 || subs != 0 {
		t.Errorf("lookAheadShapes 0: %d Filter calls and %d subscriptions, want 1 and 0", filters, subs)
	}
	if u := f.unsubscribed(); !slices.Equal(u, nil) {
		t.Errorf("unsubscribed %v", u)
	}
}

func TestLookAheadKeepsAShapeThatRecurs(t *testing.T) {
	f := newStreaming()
	p := lookAheadPlugin(t, f, 4)
	ctx := context.Background()
	// Pods of one Job queued one at a time, each scheduled before the next
	// is queued: the shape is unsubscribed after the first, and kept after
	// the second, as a shape that recurs.
	for i, uid := range []string{"u-1", "u-2", "u-3"} {
		pod := jobPod(uid, "steady")
		p.PreEnqueue(ctx, pod)
		runCycle(t, p, pod, f.nodes)
		runCycle(t, p, jobPod("other-"+uid, "other-"+uid), f.nodes) // the next cycle retires what the last read
		if want := i > 0; subscribed(p, pod) != want {
			t.Errorf("after pod %d: subscribed %v, want %v", i+1, subscribed(p, pod), want)
		}
	}
	// The others, not queued through PreEnqueue, take the calls and
	// subscribe nothing (each is its shape's first pod).
	if _, _, subs, _ := f.counts(); subs != 2 {
		t.Errorf("%d subscriptions, want 2: the recurring shape's, twice", subs)
	}
}
