package plugin

import (
	v1 "k8s.io/api/core/v1"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// Look-ahead (Args.LookAheadShapes, issue 25). A pod whose shape has no
// verdict table here makes a synchronous call in its cycle: at 5,000 nodes,
// 4-6 ms on a 2-core VM, against a cycle of 3-4 ms, for the one pod in ten of
// SchedulingMixed that has a shape of its own. PreEnqueue sees every pod when
// it is queued, well before its cycle: the shapes of queued pods without a
// table are subscribed then, a few at a time (lookAhead.max), in the order the
// pods were queued, which is the order kube-scheduler pops pods of one
// priority in. The pod's cycle then reads the table, as any later pod of its
// shape does.
//
// A shape subscribed ahead is unsubscribed once a cycle has read it and no
// other pod of it is queued: the cycle after the one that read it does so,
// when nothing can still read it (Reserve's check of a node passed ahead of
// its ack is in the cycle). So a pod of a shape of its own costs the extender
// one table and its refreshes while the pod waits, not a table for good. A
// shape is unsubscribed so once: subscribed ahead again, it recurs (pods of
// a workload created about as fast as they are scheduled, each queued alone)
// and its table is kept, as a table subscribed by a shape's second pod is
// (issue 25: unsubscribing every time cost 1,000 whole tables in a
// SchedulingMixed workload, whose 1,000 first pods are created one by one).
//
// Nothing here decides: a pod whose table is on the way when its cycle
// begins waits for it (verdicts.awaitTable, up to filterTimeout), and one
// whose shape was not subscribed in time, or whose table did not come,
// takes the calls, as it would without look-ahead.

// lookAhead is verdicts' look-ahead state; verdicts.mu.
type lookAhead struct {
	max   int // shapes subscribed ahead whose first pod's cycle has not come, at most (0: off)
	open  int // such shapes now
	queue []aheadPod
	// Pods in queue by shape key.
	queued map[string]int
	// Shapes subscribed ahead that the cycle under way read: unsubscribed as
	// the next cycle begins if no pod of theirs is queued by then.
	read []*shapeTable
	// Shapes unsubscribed so, at most maxAheadQueue (then forgotten): one
	// subscribed ahead again is a shape that recurs, and is kept.
	retired map[string]struct{}
}

// aheadPod: a queued pod whose shape had no table, waiting for its turn to
// be subscribed.
type aheadPod struct {
	uid string
	key string
	m   *placementv1.Pod
}

// maxAheadQueue bounds lookAhead.queue: pods queued beyond it are not looked
// ahead for (their cycles call, as without look-ahead).
const maxAheadQueue = 4096

// enqueued is PreEnqueue's part: the pod is queued for scheduling.
func (v *verdicts) enqueued(pod *v1.Pod) {
	if v.ahead.max == 0 {
		return
	}
	m := podMessage(pod)
	key := shapeKey(m)
	if key == "" {
		return
	}
	v.mu.Lock()
	if !v.supported || v.stream == nil {
		v.mu.Unlock()
		return
	}
	if t := v.shapes[key]; t != nil {
		if t.aheadOf {
			t.queuedPods++
		}
		v.mu.Unlock()
		return
	}
	if len(v.ahead.queue) >= maxAheadQueue {
		v.mu.Unlock()
		return
	}
	v.ahead.queue = append(v.ahead.queue, aheadPod{uid: m.Uid, key: key, m: m})
	v.ahead.queued[key]++
	out := v.fillAheadLocked(nil)
	stream := v.stream
	v.mu.Unlock()
	v.sendAll(stream, out)
}

// fillAheadLocked subscribes the shapes at the head of the queue while fewer
// than max are open; returns the requests to send (after v.mu). v.mu held.
func (v *verdicts) fillAheadLocked(out []*placementv1.VerdictsRequest) []*placementv1.VerdictsRequest {
	for v.ahead.open < v.ahead.max && len(v.ahead.queue) > 0 {
		head := v.ahead.queue[0]
		v.ahead.queue = v.ahead.queue[1:]
		n := v.ahead.queued[head.key]
		delete(v.ahead.queued, head.key)
		if n == 0 || v.shapes[head.key] != nil {
			// A later pod of a shape subscribed already (its count went with
			// the first), or subscribed meanwhile.
			continue
		}
		t, req := v.subscribeLocked(head.key, head.m)
		t.aheadOf = true
		t.queuedPods = n
		v.ahead.open++
		lookAheads.WithLabelValues("subscribed").Inc()
		out = append(out, req)
	}
	if len(v.ahead.queue) == 0 {
		v.ahead.queue = nil // the backing array goes with the last entry
	}
	return out
}

// meet is table's part for a cycle whose pod has shape key (t: its table,
// nil: none): the look-ahead learns that this pod's cycle has come. Returns
// the requests to send (after v.mu). v.mu held.
func (v *verdicts) meetLocked(uid, key string, t *shapeTable, out []*placementv1.VerdictsRequest) []*placementv1.VerdictsRequest {
	if t != nil && t.aheadOf {
		t.queuedPods--
		if !t.met {
			t.met = true
			v.ahead.open--
			if t.ready {
				lookAheads.WithLabelValues("ready").Inc()
			} else {
				lookAheads.WithLabelValues("not_ready").Inc()
			}
		}
		if t.queuedPods <= 0 {
			v.ahead.read = append(v.ahead.read, t)
		}
		return v.fillAheadLocked(out)
	}
	if v.ahead.queued[key] == 0 {
		return out
	}
	// Its shape is still queued: the cycles caught up with the look-ahead.
	// The pod's entry goes, with every entry before it (pods queued earlier,
	// whose cycles came or that wait elsewhere: a subscription for them now
	// would likely come too late).
	for i, p := range v.ahead.queue {
		if p.uid != uid {
			continue
		}
		for _, q := range v.ahead.queue[:i+1] {
			if n := v.ahead.queued[q.key] - 1; n > 0 {
				v.ahead.queued[q.key] = n
			} else {
				delete(v.ahead.queued, q.key)
			}
		}
		v.ahead.queue = v.ahead.queue[i+1:]
		lookAheads.WithLabelValues("behind").Inc()
		break
	}
	return v.fillAheadLocked(out)
}

// retireLocked unsubscribes the shapes subscribed ahead that the last cycle
// read and no queued pod still needs; returns the requests to send (after
// v.mu). v.mu held.
func (v *verdicts) retireLocked(out []*placementv1.VerdictsRequest) []*placementv1.VerdictsRequest {
	for _, t := range v.ahead.read {
		if t.queuedPods > 0 || v.shapes[t.key] != t {
			continue // queued again meanwhile, or dropped
		}
		if _, again := v.ahead.retired[t.key]; again {
			t.aheadOf = false // a shape that recurs: kept, as any other
			continue
		}
		if len(v.ahead.retired) >= maxAheadQueue {
			clear(v.ahead.retired)
		}
		v.ahead.retired[t.key] = struct{}{}
		delete(v.shapes, t.key)
		delete(v.byID, t.id)
		lookAheads.WithLabelValues("unsubscribed").Inc()
		out = append(out, &placementv1.VerdictsRequest{Kind: &placementv1.VerdictsRequest_Unsubscribe{
			Unsubscribe: &placementv1.VerdictsUnsubscribe{ShapeId: t.id}}})
	}
	v.ahead.read = v.ahead.read[:0]
	return out
}

// sendAll sends reqs on stream (nil: none open; the subscriptions go when it
// reopens, the unsubscriptions with the stream they were for).
func (v *verdicts) sendAll(stream placementv1.Placement_VerdictsClient, reqs []*placementv1.VerdictsRequest) {
	if stream == nil || len(reqs) == 0 {
		return
	}
	v.sendMu.Lock()
	defer v.sendMu.Unlock()
	for _, r := range reqs {
		sendLocked(stream, r)
	}
}
