package plugin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// extenderMaxScore is the top of the placement service's 0..10 scale (the
// HTTP extender's MaxExtenderPriority); NormalizeScore maps it to
// fwk.MaxNodeScore, as kube-scheduler scales an HTTP extender's scores.
const extenderMaxScore = 10

const (
	filterKey fwk.StateKey = Name + "/filter"
	scoreKey  fwk.StateKey = Name + "/score"
)

// Plugin asks Neighborly once per extension point per pod:
//
//	PreFilter -> Filter: the refusals among all nodes; Filter looks each node up.
//	PreScore  -> Score:  0..10 for the nodes that passed; Score looks up, NormalizeScore scales.
//	Reserve   -> Reserve: the extender books the pod on the chosen node.
//	Unreserve -> Unreserve: the booking is released.
//
// With StreamedVerdicts (on by default), a pod whose shape's verdict table the
// plugin holds makes no call in its cycle: PreFilter picks the table, Filter
// and Score read it (verdicts.go), Reserve and Unreserve go on the stream
// without waiting; the first pod of a shape makes the calls above and
// subscribes the shape.
//
// When the extender does not answer within the call's deadline and FailOpen
// is set, the cycle goes on without Neighborly (Filter and Score are skipped
// for that pod), counted in neighborly_plugin_fail_open_total and logged.
type Plugin struct {
	args   Args
	conn   *grpc.ClientConn
	client placementv1.PlacementClient
	// Rate-limits the fail-open log lines (one per extension point per 10 s).
	logLimiter *logLimiter
	// Every replica behind Args.PeersAddress, for Reserve and Unreserve; nil without.
	peers *peers
	// The verdict tables (Args.StreamedVerdicts); nil when off.
	verdicts *verdicts
	// What PreFilter and PreScore last wrote, by the CycleState they wrote it
	// to: Filter and Score read it back from here rather than from the
	// CycleState (a sync.Map with a string key: a hash per node per pod was
	// a fifth of the plugin's CPU in a SchedulingBasic round, issue 25).
	lastFilter, lastScore atomic.Pointer[cycleMemo]
	// Close runs once: kube-scheduler's framework closes plugins that are
	// io.Closers when it stops, and a test (scheduler/perf) may too.
	closeOnce sync.Once
	closeErr  error
}

var (
	_ fwk.PreFilterPlugin = (*Plugin)(nil)
	_ fwk.FilterPlugin    = (*Plugin)(nil)
	_ fwk.PreScorePlugin  = (*Plugin)(nil)
	_ fwk.ScorePlugin     = (*Plugin)(nil)
	_ fwk.ScoreExtensions = (*Plugin)(nil)
	_ fwk.ReservePlugin   = (*Plugin)(nil)
)

// New is the plugin factory for app.WithPlugin.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	a, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	return NewWithArgs(a)
}

// NewWithArgs builds the plugin from decoded, validated args.
func NewWithArgs(a Args) (*Plugin, error) { return newPluginWithLookup(a, nil) }

// newPluginWithLookup: `lookup` resolves Args.PeersAddress (nil: the system's resolver).
func newPluginWithLookup(a Args, lookup func(context.Context, string) ([]string, error)) (*Plugin, error) {
	registerMetrics()
	conn, client, err := dial(a)
	if err != nil {
		return nil, err
	}
	p := &Plugin{args: a, conn: conn, client: client, logLimiter: newLogLimiter(10 * time.Second)}
	if a.PeersAddress != "" {
		if p.peers, err = newPeers(a, lookup); err != nil {
			_ = conn.Close()
			return nil, err
		}
	}
	if *a.StreamedVerdicts {
		p.verdicts = newVerdicts(client, a.BookingLinger.Duration)
	}
	klog.InfoS("Neighborly plugin ready", "address", a.Address, "tls", !a.Insecure,
		"filterTimeout", a.FilterTimeout.Duration, "scoreTimeout", a.ScoreTimeout.Duration, "failOpen", *a.FailOpen,
		"peersAddress", a.PeersAddress, "streamedVerdicts", *a.StreamedVerdicts, "bookingLinger", a.BookingLinger.Duration)
	return p, nil
}

// Close releases the connections (the framework calls it when the scheduler
// stops; tests too). A second call does nothing and returns the first's error.
func (p *Plugin) Close() error {
	p.closeOnce.Do(func() {
		if p.peers != nil {
			p.peers.close()
		}
		if p.verdicts != nil {
			p.verdicts.close()
		}
		p.closeErr = p.conn.Close()
	})
	return p.closeErr
}

func (p *Plugin) Name() string { return Name }

// refusals: node name -> the extender's reason. Read-only once written.
type refusals map[string]string

func (r refusals) Clone() fwk.StateData { return r }

// scores: node name -> 0..10. Read-only once written.
type scores map[string]int64

func (s scores) Clone() fwk.StateData { return s }

// cycleMemo: what the plugin wrote under one key of one cycle's CycleState.
// Holding the CycleState keeps it alive, so no later cycle's can have its
// address; a clone (a preemption dry run's) is another CycleState and is
// read the usual way. Write replaces the memo, so a cycle that writes a key
// again is read from the CycleState (the memo then names another one, or
// this one with the new value).
type cycleMemo struct {
	state fwk.CycleState
	data  fwk.StateData
}

// write stores data under key in state and in memo.
func write(state fwk.CycleState, key fwk.StateKey, data fwk.StateData, memo *atomic.Pointer[cycleMemo]) {
	state.Write(key, data)
	memo.Store(&cycleMemo{state: state, data: data})
}

// read is state.Read(key), from memo when it holds this state's value.
func read(state fwk.CycleState, key fwk.StateKey, memo *atomic.Pointer[cycleMemo]) (fwk.StateData, error) {
	if m := memo.Load(); m != nil && m.state == state {
		return m.data, nil
	}
	return state.Read(key)
}

// streamedCycle: this cycle reads the pod's shape's verdict table, a node
// with an unacked booking as the table stands (docs/placement.md, "Where
// the wait is made").
type streamedCycle struct {
	table   *shapeTable
	slots   *slotCache    // the slots of PreFilter's node list, by NodeInfo
	pending *cyclePending // the bookings pending at PreFilter (Filter's)
	// Filter's deadline: Reserve waits for the ack of a node passed ahead
	// until then (reserveTimeout from Reserve at least).
	deadline time.Time
	// The nodes Filter passed while a booking on them was not acked (the
	// table passed them as it stood): Score gives one the least if the ack
	// has come and refuses it, and Reserve refuses one that the booking made
	// the table refuse. Shared by the cycle's Filter and Score states.
	ahead *passedAhead
}

// passedAhead: the nodes of a cycle passed ahead of their acks. Filter runs
// on parallel workers; a cycle holds a few (the nodes of recent bookings).
type passedAhead struct {
	mu    sync.Mutex
	nodes []string
}

func (a *passedAhead) add(node string) {
	a.mu.Lock()
	a.nodes = append(a.nodes, node)
	a.mu.Unlock()
}

// has: node was passed ahead of its ack in this cycle (a nil set: none was).
func (a *passedAhead) has(node string) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.nodes, node)
}

func (s *streamedCycle) Clone() fwk.StateData { return s }

// windowedCycle: a pod whose shape has no verdict table here, on a cluster
// larger than the window. Its verdicts are asked for a window of nodes at a
// time, starting at the first node Filter meets, in the order of the node list
// PreFilter receives: the snapshot's list, which kube-scheduler walks from a
// rotating start until it has found its share of feasible nodes (10 % of
// 5,000). One call then judges about the nodes the cycle looks at, not the
// whole fleet (issue 25: such calls averaged 3.5-4 ms at 5,000 nodes).
// Filter runs on parallel workers: the first to miss asks, the others wait on
// mu for the same answer.
type windowedCycle struct {
	pod   *v1.Pod
	m     *placementv1.Pod
	nodes []fwk.NodeInfo
	names []string // nodes' names, from the slot cache; nil: read from nodes

	mu     sync.Mutex
	judged map[string]string // node -> refusal reason; "" feasible
	// The feasible judged nodes' scores, answered with the verdicts
	// (FilterRequest.with_scores): PreScore reads them instead of calling.
	scores scores
	open   bool // a call failed and the cycle fails open
	// Nodes judged while a booking on them was unacked, whose answer the
	// booking may change, with the window they were judged in: asked again,
	// after the ack, if a Filter reaches them. The calls do not wait for
	// every ack (issue 25: that wait was 4 ms a pod of a new shape in
	// SchedulingMixed).
	stale map[string][]string
}

func (w *windowedCycle) Clone() fwk.StateData { return w }

// scoresOf is the windowed calls' scores, which Score reads as they are, when
// they cover nodes (those that passed every filter; the filtering is over,
// so nothing writes them any more); nil when a node has none (its window
// failed open, or the extender predates FilterRequest.with_scores): PreScore
// then makes the Score call.
func (w *windowedCycle) scoresOf(nodes []fwk.NodeInfo) scores {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range nodes {
		if _, ok := w.scores[n.Node().Name]; !ok {
			return nil
		}
	}
	return w.scores
}

// filterWindow is how many nodes one windowed call judges on a cluster of n:
// at least twice kube-scheduler's share of feasible nodes to find, k
// (numFeasibleNodesToFind without percentageOfNodesToScore: 50 % - n/125,
// at least 5 %, at least 100 nodes), and at least the stretch its walk
// covers. The walk hands out chunks of c = filterChunk(n) consecutive nodes
// to filterParallelism (P) workers; the first windowed call holds them all at
// the first node of their chunks, and once it answers, the workers that get
// the CPU first finish their chunks and take the next ones while the others
// still hold theirs. So the walk reaches about P chunks plus k nodes past its
// start: P*c + k, with a chunk of slack on each side (the window starts a
// chunk before the node that asked). 1,760 of 5,000 nodes; 978 of 1,000.
func filterWindow(n int) int {
	percent := 50 - n/125
	if percent < 5 {
		percent = 5
	}
	k := n * percent / 100
	if k < 100 {
		k = 100
	}
	c := filterChunk(n)
	return max(2*k, filterParallelism*c+k+2*c)
}

// filterParallelism is kube-scheduler's default parallelism (its
// configuration's `parallelism`), the number of workers that run Filter.
const filterParallelism = 16

// filterChunk is the chunk of nodes each Filter worker takes at a time
// (kube-scheduler's parallelize.chunkSizeFor: sqrt(n), at most
// n/parallelism + 1, at least 1).
func filterChunk(n int) int {
	s := int(math.Sqrt(float64(n)))
	if r := n/filterParallelism + 1; s > r {
		s = r
	}
	return max(s, 1)
}

// judge answers Filter for a windowed cycle: the node's verdict, asking for
// the window that starts at it when it has none yet.
func (p *Plugin) judge(ctx context.Context, w *windowedCycle, info fwk.NodeInfo) *fwk.Status {
	node := info.Node().Name
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.judged[node]; !ok {
		if w.open {
			return nil
		}
		names := w.window(info)
		var pending *pendingSet
		if p.verdicts != nil {
			pending = p.verdicts.pending.Load()
		}
		resp, st := p.callWindow(ctx, w, names)
		if st != nil || w.open {
			return st
		}
		w.take(resp, names, "")
		w.markStale(pending, names)
	}
	if window, ok := w.stale[node]; ok && !w.open {
		delete(w.stale, node)
		return p.judgeAgain(ctx, w, info, window)
	}
	return refusalStatus(w.judged[node])
}

// window names the nodes to judge with info's: the node itself, then the
// nodes not judged yet from a chunk before it on, filterWindow in all. The
// window starts a chunk before the node: the first Filter of a cycle may
// come from a worker a chunk or so ahead of the walk's start. w.mu held.
func (w *windowedCycle) window(info fwk.NodeInfo) []string {
	node := info.Node().Name
	n := len(w.nodes)
	start := (position(w.nodes, info) - filterChunk(n) + n) % n
	size := filterWindow(n)
	names := make([]string, 0, size+1)
	names = append(names, node)
	for i := 0; i < n && len(names) < size; i++ {
		name := w.nameAt((start + i) % n)
		if _, done := w.judged[name]; !done && name != node {
			names = append(names, name)
		}
	}
	return names
}

// nameAt is the name of the node at position i of the cycle's node list:
// from the slot cache's names where PreFilter had one for this list (no
// NodeInfo and Node to load per name), else from the NodeInfo.
func (w *windowedCycle) nameAt(i int) string {
	if w.names != nil {
		return w.names[i]
	}
	return w.nodes[i].Node().Name
}

// markStale records, for judging again after their acks, the nodes of a
// call for names that had a booking unacked when it went out (pending, nil:
// none): the call may have judged them before or after the booking, and a
// booking can lift a refusal as well as make one. (A call with names judges
// exactly those nodes, so its refusals are among them.) w.mu held.
func (w *windowedCycle) markStale(pending *pendingSet, names []string) {
	if pending == nil {
		return
	}
	for _, b := range *pending {
		if slices.Contains(names, b.node) {
			if w.stale == nil {
				w.stale = map[string][]string{}
			}
			w.stale[b.node] = names
		}
	}
}

// judgeAgain judges a node of a window again once its bookings are acked,
// with the same window (the least-harm fallback looks at it as a set); only
// that node's answer is taken. w.mu held.
func (p *Plugin) judgeAgain(ctx context.Context, w *windowedCycle, info fwk.NodeInfo, window []string) *fwk.Status {
	node := info.Node().Name
	if !p.verdicts.await("Filter", int32(p.verdicts.slot(node)), info, node, time.Now().Add(p.args.FilterTimeout.Duration)) {
		return p.pendingTimedOut("Filter", w.pod, node)
	}
	resp, st := p.callWindow(ctx, w, window)
	if st != nil || w.open {
		return st
	}
	w.take(resp, window, node)
	return refusalStatus(w.judged[node])
}

// take writes a windowed call's answer for names into the cycle's verdicts
// and scores: every node of names and of its refusals, or, where only is
// not "", that node alone (judged again after its ack). Straight into the
// cycle: no maps of the answer's own (copying 1,760 entries twice was a
// fifth of a windowed call's CPU in kube-scheduler, issue 25). The scores
// come one byte a requested node (scores_in_order; an answer of another
// length is not read, and its nodes then have no score: PreScore asks), or
// as NodeScore messages from an extender that predates that field. w.mu held.
func (w *windowedCycle) take(resp *placementv1.FilterResponse, names []string, only string) {
	wanted := func(name string) bool { return only == "" || name == only }
	if only != "" {
		w.judged[only] = ""
		delete(w.scores, only)
	} else {
		for _, name := range names {
			w.judged[name] = ""
		}
	}
	for _, r := range resp.GetRefused() {
		if wanted(r.GetNodeName()) {
			w.judged[r.GetNodeName()] = r.GetReason()
		}
	}
	if in := resp.GetScoresInOrder(); len(in) > 0 {
		if len(in) == len(names) {
			for i, b := range in {
				if b <= extenderMaxScore && wanted(names[i]) {
					w.scores[names[i]] = int64(b)
				}
			}
		}
		return
	}
	for _, sc := range resp.GetScores() {
		if wanted(sc.GetNodeName()) {
			w.scores[sc.GetNodeName()] = int64(sc.GetScore())
		}
	}
}

// callWindow asks for the verdicts (FilterResponse.refused: the refusals,
// every other node of names feasible) and the feasible nodes' scores of
// names. A failed call fails the cycle open (w.open set, no answer) or is
// the error. w.mu held.
func (p *Plugin) callWindow(ctx context.Context, w *windowedCycle, names []string) (*placementv1.FilterResponse, *fwk.Status) {
	// Not the cycle's cancellation: kube-scheduler cancels the filtering once
	// it has found its share of nodes, which must not read as a failure here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.args.FilterTimeout.Duration)
	defer cancel()
	began := time.Now()
	resp, err := p.client.Filter(ctx, &placementv1.FilterRequest{Pod: w.m, NodeNames: names, WithScores: true, ScoresInOrder: true})
	observe("Filter", began, err)
	if err != nil {
		if *p.args.FailOpen {
			w.open = true
			p.countFailOpen("Filter", w.pod, err)
			return nil, nil
		}
		return nil, fwk.AsStatus(fmt.Errorf("neighborly filter: %w", err))
	}
	return resp, nil
}

// position is info's index in nodes (0 when absent): by identity, as
// kube-scheduler filters the NodeInfos of the list PreFilter got (comparing
// 5,000 names was a percent of its CPU); by name for a copy (a preemption
// dry run filters clones).
func position(nodes []fwk.NodeInfo, info fwk.NodeInfo) int {
	for i, ni := range nodes {
		if ni == info {
			return i
		}
	}
	name := info.Node().Name
	for i, ni := range nodes {
		if ni.Node().Name == name {
			return i
		}
	}
	return 0
}

// refusalStatus: nil for "" (feasible), else the refusal. It comes from the
// node's measured contention, which evicting pods in a preemption dry run
// would not change in this cycle.
func refusalStatus(reason string) *fwk.Status {
	if reason == "" {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "neighborly: "+reason)
}

func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	m := podMessage(pod)
	if p.verdicts != nil {
		if t := p.verdicts.table(m); t != nil {
			slots := p.verdicts.snapshotSlots(nodes)
			deadline := time.Now().Add(p.args.FilterTimeout.Duration)
			names, waiting := p.verdicts.passing(t, nodes, slots)
			if names != nil {
				// The held bookings on nodes of the set leave now: this
				// cycle meets them, and waits for their acks.
				p.verdicts.sendAheadOf(names)
			}
			if waiting && p.verdicts.settle("PreFilter", deadline) {
				// Half the nodes left to this pod or more are ones whose
				// bookings wait for their acks, which may refuse them: the
				// pod would find no node in this cycle and wait out a retry
				// (issue 25: 166 pods retried in a SchedulingMixed round,
				// each retry an event, a status update and a cycle). The
				// acks are in flight; the set is taken again once they are
				// read.
				settledWaits.Inc()
				names, _ = p.verdicts.passing(t, nodes, slots)
			}
			write(state, filterKey, &streamedCycle{table: t, slots: slots, pending: p.verdicts.pendingOf(slots),
				deadline: deadline, ahead: &passedAhead{}}, &p.lastFilter)
			cycles.WithLabelValues("streamed").Inc()
			if names != nil {
				narrowed.Inc()
				return &fwk.PreFilterResult{NodeNames: names}, nil
			}
			// The table refuses no node and no booking waits for its ack:
			// every Filter of this cycle would pass, so kube-scheduler is
			// told to skip them (issue 25: a Filter call per node was 2 % of
			// its CPU in a SchedulingBasic round). Bookings are made in
			// Reserve, after this cycle's filtering; a delta that refuses a
			// node while this cycle runs is read by the next one, as it
			// would be by a Filter that ran a moment earlier.
			if p.verdicts.nothingToFilter(t) {
				skippedFilters.Inc()
				return nil, fwk.NewStatus(fwk.Skip)
			}
			return nil, nil
		}
	}
	// The windowed calls judge again a node whose booking they may have
	// missed (judge); the whole-fleet call sees the bookings sent on the
	// stream once they are acked.
	if window := filterWindow(len(nodes)); len(nodes) > window {
		w := &windowedCycle{pod: pod, m: m, nodes: nodes, judged: make(map[string]string, window), scores: make(scores, window)}
		if p.verdicts != nil {
			w.names = p.verdicts.snapshotSlots(nodes).names
		}
		write(state, filterKey, w, &p.lastFilter)
		cycles.WithLabelValues("windowed").Inc()
		return nil, nil
	}
	if p.verdicts != nil {
		if !p.verdicts.settle("PreFilter", time.Now().Add(p.args.FilterTimeout.Duration)) {
			cycles.WithLabelValues("calls").Inc()
			return nil, p.failed("PreFilter", pod, status.Error(codes.DeadlineExceeded, "bookings on the verdict stream unacked"))
		}
	}
	cycles.WithLabelValues("calls").Inc()
	ctx, cancel := context.WithTimeout(ctx, p.args.FilterTimeout.Duration)
	defer cancel()
	start := time.Now()
	// No node names: the extender judges every node it knows and answers only
	// the refusals, so the message stays small on a 5,000-node cluster.
	resp, err := p.client.Filter(ctx, &placementv1.FilterRequest{Pod: m})
	observe("Filter", start, err)
	if err != nil {
		return nil, p.failed("PreFilter", pod, err)
	}
	r := make(refusals, len(resp.GetRefused()))
	for _, n := range resp.GetRefused() {
		r[n.GetNodeName()] = n.GetReason()
	}
	write(state, filterKey, r, &p.lastFilter)
	return nil, nil
}

func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	d, err := read(state, filterKey, &p.lastFilter)
	if err != nil {
		return nil // PreFilter failed open
	}
	if w, ok := d.(*windowedCycle); ok {
		return p.judge(ctx, w, nodeInfo)
	}
	if c, ok := d.(*streamedCycle); ok {
		v, ahead := p.verdicts.filterInfo(c.table, c.slots, c.pending, nodeInfo)
		if ahead {
			c.ahead.add(nodeInfo.Node().Name)
			passedAheadOfAcks.WithLabelValues("Filter").Inc()
			p.verdicts.urge() // the ack is wanted by Reserve should this node be chosen
			return nil
		}
		if !v.feasible {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "neighborly: "+v.reason)
		}
		return nil
	}
	if reason, refused := d.(refusals)[nodeInfo.Node().Name]; refused {
		// The refusal comes from the node's measured contention, which evicting
		// pods in a preemption dry run would not change in this cycle.
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "neighborly: "+reason)
	}
	return nil
}

func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if d, err := read(state, filterKey, &p.lastFilter); err == nil {
		if c, ok := d.(*streamedCycle); ok {
			write(state, scoreKey, &streamedCycle{table: c.table, slots: c.slots, ahead: c.ahead}, &p.lastScore)
			return nil
		}
		if w, ok := d.(*windowedCycle); ok {
			if s := w.scoresOf(nodes); s != nil {
				write(state, scoreKey, s, &p.lastScore)
				return nil
			}
		}
	}
	if p.verdicts != nil && !p.verdicts.settle("PreScore", time.Now().Add(p.args.ScoreTimeout.Duration)) {
		if *p.args.FailOpen {
			p.countFailOpen("PreScore", pod, status.Error(codes.DeadlineExceeded, "bookings on the verdict stream unacked"))
			return fwk.NewStatus(fwk.Skip)
		}
		return fwk.AsStatus(fmt.Errorf("neighborly score: bookings on the verdict stream unacked"))
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Node().Name
	}
	ctx, cancel := context.WithTimeout(ctx, p.args.ScoreTimeout.Duration)
	defer cancel()
	start := time.Now()
	resp, err := p.client.Score(ctx, &placementv1.ScoreRequest{Pod: podMessage(pod), NodeNames: names})
	observe("Score", start, err)
	if err != nil {
		if *p.args.FailOpen {
			p.countFailOpen("PreScore", pod, err)
			return fwk.NewStatus(fwk.Skip)
		}
		return fwk.AsStatus(fmt.Errorf("neighborly score: %w", err))
	}
	s := make(scores, len(resp.GetScores()))
	for _, n := range resp.GetScores() {
		s[n.GetNodeName()] = int64(n.GetScore())
	}
	write(state, scoreKey, s, &p.lastScore)
	return nil
}

func (p *Plugin) Score(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	d, err := read(state, scoreKey, &p.lastScore)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("neighborly: no scores for this cycle: %w", err))
	}
	if c, ok := d.(*streamedCycle); ok {
		v, pending := p.verdicts.scoreInfo(c.table, c.slots, nodeInfo)
		if !v.feasible && c.ahead.has(nodeInfo.Node().Name) {
			// Passed ahead of its ack, refused after it: the least, and
			// Reserve refuses it should it still be chosen.
			return 0, nil
		}
		if pending {
			// Its booking is not acked: scored without waiting, as its table
			// stood before the booking but no higher than a node the
			// extender knows nothing about (the booking adds load there).
			// Reserve waits for the ack if kube-scheduler still chooses it.
			passedAheadOfAcks.WithLabelValues("Score").Inc()
			return min(v.score, extenderMaxScore/2), nil
		}
		return v.score, nil
	}
	s, ok := d.(scores)[nodeInfo.Node().Name]
	if !ok {
		// Not in the answer: the neutral middle, as the model scores a node it
		// knows nothing about.
		return extenderMaxScore / 2, nil
	}
	return s, nil
}

func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore maps the extender's 0..10 to 0..fwk.MaxNodeScore, the factor
// kube-scheduler applies to an HTTP extender's priorities, so the two
// integration modes weigh Neighborly the same for the same weight.
func (p *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, list fwk.NodeScoreList) *fwk.Status {
	for i := range list {
		s := list[i].Score
		if s < 0 {
			s = 0
		} else if s > extenderMaxScore {
			s = extenderMaxScore
		}
		list[i].Score = s * fwk.MaxNodeScore / extenderMaxScore
	}
	return nil
}

func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if st := p.checkAhead(state, pod, nodeName); st != nil {
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, p.args.ReserveTimeout.Duration)
	defer cancel()
	req := &placementv1.ReserveRequest{Pod: podMessage(pod), NodeName: nodeName}
	if p.peers != nil {
		p.peers.reserve(req) // beside the primary call, never waited for
	}
	if p.verdicts != nil && p.verdicts.book(&placementv1.VerdictsRequest{Kind: &placementv1.VerdictsRequest_Reserve{
		Reserve: &placementv1.VerdictsReserve{Pod: req.Pod, NodeName: nodeName}}}, nodeName) {
		return nil // acked on the stream; the node is pending until then
	}
	start := time.Now()
	_, err := p.client.Reserve(ctx, req)
	observe("Reserve", start, err)
	if err != nil {
		if *p.args.FailOpen {
			// The pod still binds; the extender just does not book it until its
			// node reports it.
			p.countFailOpen("Reserve", pod, err)
			return nil
		}
		return fwk.AsStatus(fmt.Errorf("neighborly reserve on %s: %w", nodeName, err))
	}
	return nil
}

// checkAhead: nil, or the refusal of nodeName where Filter passed it ahead
// of a booking's ack and the table, once the ack came, refuses it (the pod
// is tried again, as after any refusal). Waits for the ack until Filter's
// deadline (reserveTimeout from now at least), then fails open as Filter
// would have.
func (p *Plugin) checkAhead(state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if p.verdicts == nil || state == nil {
		return nil
	}
	d, err := read(state, filterKey, &p.lastFilter)
	if err != nil {
		return nil
	}
	c, ok := d.(*streamedCycle)
	if !ok || !c.ahead.has(nodeName) {
		return nil
	}
	// The wait Filter would have made, until its deadline (reserveTimeout
	// from now at least).
	deadline := c.deadline
	if d := time.Now().Add(p.args.ReserveTimeout.Duration); d.After(deadline) {
		deadline = d
	}
	if !p.verdicts.await("Reserve", int32(p.verdicts.slot(nodeName)), nil, nodeName, deadline) {
		return p.pendingTimedOut("Reserve", pod, nodeName)
	}
	v := p.verdicts.read(c.table, nodeName)
	if v.feasible {
		return nil
	}
	passedAheadOfAcks.WithLabelValues("Reserve_refused").Inc()
	return fwk.NewStatus(fwk.Unschedulable, "neighborly: "+v.reason)
}

// Unreserve is best effort and idempotent on the extender's side.
func (p *Plugin) Unreserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) {
	ctx, cancel := context.WithTimeout(ctx, p.args.ReserveTimeout.Duration)
	defer cancel()
	req := &placementv1.UnreserveRequest{PodUid: string(pod.UID), NodeName: nodeName}
	if p.peers != nil {
		p.peers.unreserve(req)
	}
	if p.verdicts != nil && p.verdicts.book(&placementv1.VerdictsRequest{Kind: &placementv1.VerdictsRequest_Unreserve{
		Unreserve: &placementv1.VerdictsUnreserve{PodUid: req.PodUid, NodeName: nodeName}}}, nodeName) {
		return
	}
	start := time.Now()
	_, err := p.client.Unreserve(ctx, req)
	observe("Unreserve", start, err)
	if err != nil {
		p.countFailOpen("Unreserve", pod, err)
	}
}

// pendingTimedOut answers a node whose booking on the verdict stream was not
// acked by the extension point's deadline: the node goes through without
// Neighborly's verdict when failing open (counted, logged), else the cycle
// fails (the pod is retried).
func (p *Plugin) pendingTimedOut(point string, pod *v1.Pod, node string) *fwk.Status {
	err := status.Errorf(codes.DeadlineExceeded, "the booking on %s is not acked", node)
	if *p.args.FailOpen {
		p.countFailOpen(point, pod, err)
		return nil
	}
	return fwk.AsStatus(fmt.Errorf("neighborly %s: %w", strings.ToLower(point), err))
}

// failed answers PreFilter's error: Skip (Filter skipped for this pod) when
// failing open, else an error status (the pod is retried later).
func (p *Plugin) failed(point string, pod *v1.Pod, err error) *fwk.Status {
	if *p.args.FailOpen {
		p.countFailOpen(point, pod, err)
		return fwk.NewStatus(fwk.Skip)
	}
	return fwk.AsStatus(fmt.Errorf("neighborly filter: %w", err))
}

func (p *Plugin) countFailOpen(point string, pod *v1.Pod, err error) {
	reason := reasonOf(err)
	failOpen.WithLabelValues(point, reason).Inc()
	if p.logLimiter.allow(point) {
		klog.InfoS("Neighborly did not answer; scheduling without it", "extensionPoint", point,
			"pod", klog.KObj(pod), "reason", reason, "err", err)
	}
}

func observe(method string, start time.Time, err error) {
	rpcDuration.WithLabelValues(method, status.Code(err).String()).Observe(time.Since(start).Seconds())
}

// reasonOf names a failure by its gRPC code (bounded label values).
func reasonOf(err error) string {
	switch c := status.Code(err); c {
	case codes.DeadlineExceeded:
		return "deadline_exceeded"
	case codes.Unavailable:
		return "unavailable"
	case codes.Unauthenticated, codes.PermissionDenied:
		return "refused"
	case codes.InvalidArgument:
		return "invalid_argument"
	case codes.ResourceExhausted:
		return "resource_exhausted"
	default:
		return "error"
	}
}
