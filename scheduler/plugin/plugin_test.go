package plugin

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// fakePlacement is a real gRPC server on loopback that answers from tables
// and records what it was asked.
type fakePlacement struct {
	placementv1.UnimplementedPlacementServer
	refused map[string]string
	scores  map[string]int32
	delay   time.Duration
	// noFilterScores: an extender that predates FilterRequest.with_scores.
	noFilterScores bool
	// noScoresInOrder: one that predates FilterRequest.scores_in_order;
	// shortScoresInOrder: one that answers them a byte short (not read).
	noScoresInOrder, shortScoresInOrder bool

	mu        sync.Mutex
	filters   []*placementv1.FilterRequest
	scoreReqs []*placementv1.ScoreRequest
	reserved  []string // "uid@node"
	released  []string
}

func (f *fakePlacement) wait(ctx context.Context) error {
	select {
	case <-time.After(f.delay):
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func (f *fakePlacement) Filter(ctx context.Context, r *placementv1.FilterRequest) (*placementv1.FilterResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.filters = append(f.filters, r)
	f.mu.Unlock()
	resp := &placementv1.FilterResponse{NodesJudged: 3}
	for n, why := range f.refused {
		resp.Refused = append(resp.Refused, &placementv1.NodeRefusal{NodeName: n, Reason: why})
	}
	if r.GetWithScores() && !f.noFilterScores {
		inOrder := r.GetScoresInOrder() && !f.noScoresInOrder && len(r.GetNodeNames()) > 0
		for _, n := range r.GetNodeNames() {
			if _, refused := f.refused[n]; refused {
				if inOrder {
					resp.ScoresInOrder = append(resp.ScoresInOrder, 255)
				}
				continue
			}
			s, ok := f.scores[n]
			if !ok {
				s = 5
			}
			if inOrder {
				resp.ScoresInOrder = append(resp.ScoresInOrder, byte(s))
			} else {
				resp.Scores = append(resp.Scores, &placementv1.NodeScore{NodeName: n, Score: s})
			}
		}
		if inOrder && f.shortScoresInOrder {
			resp.ScoresInOrder = resp.ScoresInOrder[1:]
		}
	}
	return resp, nil
}

func (f *fakePlacement) Score(ctx context.Context, r *placementv1.ScoreRequest) (*placementv1.ScoreResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.scoreReqs = append(f.scoreReqs, r)
	f.mu.Unlock()
	resp := &placementv1.ScoreResponse{}
	for _, n := range r.GetNodeNames() {
		if s, ok := f.scores[n]; ok {
			resp.Scores = append(resp.Scores, &placementv1.NodeScore{NodeName: n, Score: s})
		}
	}
	return resp, nil
}

func (f *fakePlacement) Reserve(ctx context.Context, r *placementv1.ReserveRequest) (*placementv1.ReserveResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reserved = append(f.reserved, r.GetPod().GetUid()+"@"+r.GetNodeName())
	return &placementv1.ReserveResponse{Booked: true}, nil
}

func (f *fakePlacement) Unreserve(_ context.Context, r *placementv1.UnreserveRequest) (*placementv1.UnreserveResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, r.GetPodUid()+"@"+r.GetNodeName())
	return &placementv1.UnreserveResponse{Released: true}, nil
}

// serve starts f on a free loopback port; creds nil means plaintext.
func serve(t *testing.T, f *fakePlacement, creds credentials.TransportCredentials) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	s := grpc.NewServer(opts...)
	placementv1.RegisterPlacementServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func newPlugin(t *testing.T, a Args) *Plugin {
	t.Helper()
	a.SetDefaults()
	if errs := a.Validate(nil); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, err := NewWithArgs(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func nodeInfo(name string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return ni
}

func testPod() *v1.Pod {
	yes := true
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: "uid-1", Namespace: "search", Name: "indexer-abc12",
			Labels:          map[string]string{"app": "indexer"},
			Annotations:     map[string]string{"neighborly.io/class": "batch"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "indexer-28411", Controller: &yes}},
		},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
			}}},
			InitContainers: []v1.Container{{Name: "init"}},
		},
		Status: v1.PodStatus{QOSClass: v1.PodQOSBurstable},
	}
}

func TestFilterAppliesTheRefusalsPerNode(t *testing.T) {
	f := &fakePlacement{refused: map[string]string{"node-2": "membw 84% > 80% on NUMA node 1"}}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true})
	state := framework.NewCycleState()
	pod := testPod()
	if _, st := p.PreFilter(context.Background(), state, pod, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if st := p.Filter(context.Background(), state, pod, nodeInfo("node-1")); !st.IsSuccess() {
		t.Errorf("node-1 should pass, got %v", st)
	}
	st := p.Filter(context.Background(), state, pod, nodeInfo("node-2"))
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "membw 84% > 80% on NUMA node 1") {
		t.Errorf("node-2: got %v %q", st.Code(), st.Message())
	}
	if len(f.filters) != 1 || len(f.filters[0].GetNodeNames()) != 0 {
		t.Fatalf("want one Filter call for the pod with no node list, got %v", f.filters)
	}
	// The pod arrives as the extender's HTTP path would decode it.
	got := f.filters[0].GetPod()
	c := got.GetContainers()[0]
	if got.GetUid() != "uid-1" || got.GetNamespace() != "search" || got.GetQosClass() != "Burstable" ||
		got.GetAnnotations()["neighborly.io/class"] != "batch" || got.GetOwnerReferences()[0].GetKind() != "Job" ||
		!got.GetOwnerReferences()[0].GetController() || c.GetCpuRequestMillicores() != 1500 ||
		c.GetCpuLimitMillicores() != 2000 || c.GetMemoryRequestBytes() != 2<<30 || c.MemoryLimitBytes != nil {
		t.Errorf("pod message: %v", got)
	}
	if init := got.GetInitContainers()[0]; init.CpuRequestMillicores != nil || init.MemoryRequestBytes != nil {
		t.Errorf("unset requests must stay absent: %v", init)
	}
}

// Filter reads what PreFilter wrote from the plugin's memo of the last
// cycle, never another cycle's: a second cycle with other refusals, the first
// cycle's state read again afterwards, a clone of it (a preemption dry run's),
// and a cycle whose PreFilter wrote nothing (Filter then fails open) each get
// their own cycle's answer.
func TestFilterReadsItsOwnCyclesState(t *testing.T) {
	f := &fakePlacement{refused: map[string]string{"node-2": "membw"}}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true})
	pod := testPod()
	refused := func(state fwk.CycleState, node string) bool {
		return p.Filter(context.Background(), state, pod, nodeInfo(node)).Code() == fwk.UnschedulableAndUnresolvable
	}
	first := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), first, pod, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if !refused(first, "node-2") || refused(first, "node-1") {
		t.Fatalf("first cycle: want node-2 refused and node-1 passed")
	}
	f.mu.Lock()
	f.refused = map[string]string{"node-1": "l3 full"}
	f.mu.Unlock()
	second := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), second, pod, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if !refused(second, "node-1") || refused(second, "node-2") {
		t.Errorf("second cycle: want node-1 refused and node-2 passed")
	}
	if !refused(first, "node-2") || refused(first, "node-1") {
		t.Errorf("the first cycle's state read after the second's PreFilter: want its own refusals")
	}
	if clone := second.Clone(); !refused(clone, "node-1") || refused(clone, "node-2") {
		t.Errorf("a clone of the second cycle's state: want its refusals")
	}
	if empty := framework.NewCycleState(); refused(empty, "node-1") || refused(empty, "node-2") {
		t.Errorf("a cycle whose PreFilter wrote nothing must fail open, not read the last cycle's refusals")
	}
}

// On a cluster larger than the window, a pod of a shape without a table is
// judged a window of nodes at a time from the first node Filter meets, in
// PreFilter's order, wrapping around; a node outside the windows asked so far
// asks for the next.
func TestFilterJudgesAWindowOfNodesAtATime(t *testing.T) {
	const n = 1000
	window := filterWindow(n) // 16 chunks of 31, 420 to find, a chunk on each side
	if window != 978 {
		t.Fatalf("filterWindow(%d) = %d, want 978", n, window)
	}
	if got := filterWindow(5000); got != 1760 {
		t.Errorf("filterWindow(5000) = %d, want 1760 (16 chunks of 70, 500 to find, a chunk on each side)", got)
	}
	if got := filterWindow(50); got <= 50 {
		t.Errorf("filterWindow(50) = %d: a small cluster must be judged whole at PreFilter", got)
	}
	nodes := make([]fwk.NodeInfo, n)
	for i := range nodes {
		nodes[i] = nodeInfo(fmt.Sprintf("node-%04d", i))
	}
	f := &fakePlacement{refused: map[string]string{"node-0950": "l3 full", "node-0100": "membw"}}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true})
	state := framework.NewCycleState()
	pod := testPod()
	if _, st := p.PreFilter(context.Background(), state, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if len(f.filters) != 0 {
		t.Fatalf("PreFilter must not call on a windowed cycle, got %d calls", len(f.filters))
	}
	// kube-scheduler's walk starts at node 900 and wraps: one call for 978
	// nodes, from a chunk (31 nodes) before it.
	for i := 900; i < 900+600; i++ {
		name := nodes[i%n].Node().Name
		st := p.Filter(context.Background(), state, pod, nodes[i%n])
		if name == "node-0950" || name == "node-0100" {
			if st.Code() != fwk.UnschedulableAndUnresolvable {
				t.Errorf("%s: got %v, want refused", name, st)
			}
		} else if !st.IsSuccess() {
			t.Errorf("%s: got %v, want feasible", name, st)
		}
	}
	if len(f.filters) != 1 {
		t.Fatalf("want one call for the walk, got %d", len(f.filters))
	}
	asked := f.filters[0].GetNodeNames()
	if len(asked) != window || asked[0] != "node-0900" || asked[1] != "node-0869" || asked[130] != "node-0999" || asked[131] != "node-0000" {
		t.Errorf("the window: %d nodes %v..., want %d: node-0900, then from node-0869 wrapping to node-0000", len(asked), asked[:3], window)
	}
	// Node 850 lies outside the first window (869..846): a second call, for
	// the nodes not judged yet only.
	if st := p.Filter(context.Background(), state, pod, nodes[850]); !st.IsSuccess() {
		t.Errorf("node-0850: %v", st)
	}
	if len(f.filters) != 2 {
		t.Fatalf("want a second call, got %d", len(f.filters))
	}
	if second := f.filters[1].GetNodeNames(); len(second) != n-window || second[0] != "node-0850" || second[1] != "node-0847" {
		t.Errorf("second window: %d nodes from %v, want %d: node-0850, then from node-0847", len(second), second[:2], n-window)
	}
	// A small cluster is judged whole at PreFilter, as before.
	small := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), small, pod, nodes[:50]); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if len(f.filters) != 3 || len(f.filters[2].GetNodeNames()) != 0 {
		t.Errorf("a 50-node cluster: want one whole-fleet call at PreFilter, got %d calls", len(f.filters))
	}
}

// A windowed call that misses its deadline lets the rest of the cycle through
// when failing open, counted once; without fail-open it is an error.
func TestWindowedFilterFailsOpen(t *testing.T) {
	nodes := make([]fwk.NodeInfo, 1000) // more than a window (978)
	for i := range nodes {
		nodes[i] = nodeInfo(fmt.Sprintf("node-%04d", i))
	}
	f := &fakePlacement{delay: 2 * time.Second, refused: map[string]string{"node-0001": "x"}}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true, FilterTimeout: Duration{50 * time.Millisecond}})
	state := framework.NewCycleState()
	pod := testPod()
	if _, st := p.PreFilter(context.Background(), state, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	before := failOpenCount(t, "Filter", "deadline_exceeded")
	for _, ni := range nodes[:3] {
		if st := p.Filter(context.Background(), state, pod, ni); !st.IsSuccess() {
			t.Errorf("%s: a slow extender must let the node through, got %v", ni.Node().Name, st)
		}
	}
	if got := failOpenCount(t, "Filter", "deadline_exceeded"); got != before+1 {
		t.Errorf("fail-open count %v, want %v (one per cycle)", got, before+1)
	}
	no := false
	strict := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true, FilterTimeout: Duration{50 * time.Millisecond}, FailOpen: &no})
	state = framework.NewCycleState()
	if _, st := strict.PreFilter(context.Background(), state, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if st := strict.Filter(context.Background(), state, pod, nodes[0]); st.Code() != fwk.Error {
		t.Errorf("without fail-open: got %v, want an error", st)
	}
}

// A windowed cycle's Filter calls answer the feasible nodes' scores too, so
// its Score makes no call; an extender that does not answer them gets the
// Score call as before.
func TestWindowedCycleScoresFromItsFilterCalls(t *testing.T) {
	nodes := make([]fwk.NodeInfo, 1000)
	for i := range nodes {
		nodes[i] = nodeInfo(fmt.Sprintf("node-%04d", i))
	}
	// The extender: current (scores one byte a node), one that answers
	// NodeScore messages, one that answers no scores with its verdicts, and
	// one whose scores in order are a byte short. The last two cost a Score
	// call; the scores are the same.
	for _, kind := range []string{"in order", "messages", "none", "short"} {
		f := &fakePlacement{
			refused:            map[string]string{"node-0003": "l3 full"},
			scores:             map[string]int32{"node-0001": 9, "node-0002": 2},
			noFilterScores:     kind == "none",
			noScoresInOrder:    kind == "messages",
			shortScoresInOrder: kind == "short",
		}
		old := kind == "none" || kind == "short"
		p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true})
		state := framework.NewCycleState()
		pod := testPod()
		if _, st := p.PreFilter(context.Background(), state, pod, nodes); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		var feasible []fwk.NodeInfo
		for _, ni := range nodes[:5] {
			if st := p.Filter(context.Background(), state, pod, ni); st.IsSuccess() {
				feasible = append(feasible, ni)
			}
		}
		if len(f.filters) != 1 || !f.filters[0].GetWithScores() || !f.filters[0].GetScoresInOrder() {
			t.Fatalf("want one windowed Filter call asking for scores in order, got %d", len(f.filters))
		}
		if st := p.PreScore(context.Background(), state, pod, feasible); !st.IsSuccess() {
			t.Fatalf("PreScore: %v", st)
		}
		got := map[string]int64{}
		for _, ni := range feasible {
			s, st := p.Score(context.Background(), state, pod, ni)
			if !st.IsSuccess() {
				t.Fatalf("Score(%s): %v", ni.Node().Name, st)
			}
			got[ni.Node().Name] = s
		}
		want := map[string]int64{"node-0000": 5, "node-0001": 9, "node-0002": 2, "node-0004": 5}
		if !maps.Equal(got, want) {
			t.Errorf("extender with scores %s: scores %v, want %v", kind, got, want)
		}
		if calls := len(f.scoreReqs); (calls == 1) != old {
			t.Errorf("extender with scores %s: %d Score calls", kind, calls)
		}
	}
}

func TestScoreIsOneCallAndNormalizesLikeAnExtender(t *testing.T) {
	f := &fakePlacement{scores: map[string]int32{"node-1": 10, "node-2": 3, "node-3": 0}}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true})
	state := framework.NewCycleState()
	pod := testPod()
	nodes := []fwk.NodeInfo{nodeInfo("node-1"), nodeInfo("node-2"), nodeInfo("node-3"), nodeInfo("node-4")}
	if st := p.PreScore(context.Background(), state, pod, nodes); !st.IsSuccess() {
		t.Fatal(st)
	}
	list := make(fwk.NodeScoreList, 0, len(nodes))
	for _, n := range nodes {
		s, st := p.Score(context.Background(), state, pod, n)
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		list = append(list, fwk.NodeScore{Name: n.Node().Name, Score: s})
	}
	if st := p.NormalizeScore(context.Background(), state, pod, list); !st.IsSuccess() {
		t.Fatal(st)
	}
	want := map[string]int64{"node-1": 100, "node-2": 30, "node-3": 0, "node-4": 50} // node-4: not answered, neutral
	for _, s := range list {
		if s.Score != want[s.Name] {
			t.Errorf("%s: score %d, want %d", s.Name, s.Score, want[s.Name])
		}
	}
	if len(f.scoreReqs) != 1 || strings.Join(f.scoreReqs[0].GetNodeNames(), ",") != "node-1,node-2,node-3,node-4" {
		t.Errorf("want one Score call with the four nodes, got %v", f.scoreReqs)
	}
}

func TestReserveAndUnreserveReachTheExtender(t *testing.T) {
	f := &fakePlacement{}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true})
	pod := testPod()
	if st := p.Reserve(context.Background(), framework.NewCycleState(), pod, "node-5"); !st.IsSuccess() {
		t.Fatal(st)
	}
	p.Unreserve(context.Background(), framework.NewCycleState(), pod, "node-5")
	if strings.Join(f.reserved, ",") != "uid-1@node-5" || strings.Join(f.released, ",") != "uid-1@node-5" {
		t.Errorf("reserved %v released %v", f.reserved, f.released)
	}
}

func failOpenCount(t *testing.T, point, reason string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(failOpen.WithLabelValues(point, reason))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSlowExtenderFailsOpenAndIsCounted(t *testing.T) {
	f := &fakePlacement{delay: 2 * time.Second, refused: map[string]string{"node-1": "x"}}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true,
		FilterTimeout: Duration{50 * time.Millisecond}, ScoreTimeout: Duration{50 * time.Millisecond},
		ReserveTimeout: Duration{50 * time.Millisecond}})
	before := failOpenCount(t, "PreFilter", "deadline_exceeded")
	start := time.Now()
	_, st := p.PreFilter(context.Background(), framework.NewCycleState(), testPod(), nil)
	if st.Code() != fwk.Skip {
		t.Fatalf("a slow extender must be skipped, got %v", st)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("PreFilter waited %v, beyond its 50ms deadline", waited)
	}
	if got := failOpenCount(t, "PreFilter", "deadline_exceeded"); got != before+1 {
		t.Errorf("fail-open count %v, want %v", got, before+1)
	}
	if st := p.PreScore(context.Background(), framework.NewCycleState(), testPod(), []fwk.NodeInfo{nodeInfo("node-1")}); st.Code() != fwk.Skip {
		t.Errorf("PreScore: got %v, want Skip", st)
	}
	if st := p.Reserve(context.Background(), framework.NewCycleState(), testPod(), "node-1"); !st.IsSuccess() {
		t.Errorf("Reserve must let the pod through, got %v", st)
	}
}

func TestExtenderDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	before := failOpenCount(t, "PreFilter", "unavailable")
	p := newPlugin(t, Args{Address: addr, Insecure: true})
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, testPod(), nil); st.Code() != fwk.Skip {
		t.Fatalf("got %v, want Skip", st)
	}
	if st := p.Filter(context.Background(), state, testPod(), nodeInfo("node-1")); !st.IsSuccess() {
		t.Errorf("Filter after a skipped PreFilter must pass, got %v", st)
	}
	if got := failOpenCount(t, "PreFilter", "unavailable"); got != before+1 {
		t.Errorf("fail-open count %v, want %v", got, before+1)
	}

	closed := false
	strict := newPlugin(t, Args{Address: addr, Insecure: true, FailOpen: &closed})
	if _, st := strict.PreFilter(context.Background(), framework.NewCycleState(), testPod(), nil); st.Code() != fwk.Error ||
		!strings.Contains(st.Message(), "neighborly filter") {
		t.Errorf("failOpen false: got %v %q, want an error naming neighborly", st.Code(), st.Message())
	}
	if st := strict.Reserve(context.Background(), framework.NewCycleState(), testPod(), "node-1"); st.Code() != fwk.Error {
		t.Errorf("failOpen false Reserve: got %v", st)
	}
}

// After an extender restart the plugin is answered again within about a
// second or two (the channel's reconnect backoff is capped at 1 s), not after gRPC's
// default backoff of up to two minutes.
func TestReconnectsSoonAfterTheExtenderReturns(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	p := newPlugin(t, Args{Address: addr, Insecure: true})
	// Several failed attempts while nothing listens grow the backoff.
	for i := 0; i < 20; i++ { // 6 s down: gRPC's default backoff would be at 5-10 s by then
		if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), testPod(), nil); st.Code() != fwk.Skip {
			t.Fatalf("attempt %d with the extender down: %v", i, st)
		}
		time.Sleep(300 * time.Millisecond)
	}
	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	s := grpc.NewServer()
	f := &fakePlacement{}
	placementv1.RegisterPlacementServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, st := p.PreFilter(context.Background(), framework.NewCycleState(), testPod(), nil)
		if st.IsSuccess() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing open 2 s after the extender came back: %v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Walked as kube-scheduler walks (its Filter workers: 16, chunks of sqrt(n)
// consecutive nodes from a rotating start, cancelled once its share of
// feasible nodes is found), a windowed cycle on 5,000 nodes makes one call.
func TestWindowedCycleWalkedAsKubeSchedulerWalksIsOneCall(t *testing.T) {
	const n, cycles, toFind = 5000, 20, 500
	nodes := make([]fwk.NodeInfo, n)
	for i := range nodes {
		nodes[i] = nodeInfo(fmt.Sprintf("node-%04d", i))
	}
	f := &fakePlacement{}
	p := newPlugin(t, Args{Address: serve(t, f, nil), Insecure: true})
	for cycle := 0; cycle < cycles; cycle++ {
		state := framework.NewCycleState()
		pod := testPod()
		if _, st := p.PreFilter(context.Background(), state, pod, nodes); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		start := cycle * 613 % n
		ctx, cancel := context.WithCancel(context.Background())
		var found atomic.Int32
		workqueue.ParallelizeUntil(ctx, filterParallelism, n, func(i int) {
			if st := p.Filter(ctx, state, pod, nodes[(start+i)%n]); st.IsSuccess() && found.Add(1) >= toFind {
				cancel()
			}
		}, workqueue.WithChunkSize(filterChunk(n)))
		cancel()
	}
	if len(f.filters) != cycles {
		t.Errorf("%d windowed calls for %d cycles, want one each", len(f.filters), cycles)
	}
}
