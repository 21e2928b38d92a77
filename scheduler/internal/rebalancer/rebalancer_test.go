package rebalancer

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

type fixedAdvice struct {
	proposals []Proposal
	err       error
}

func (f *fixedAdvice) Proposals(context.Context) ([]Proposal, error) { return f.proposals, f.err }

func proposal(name, uid, from, to string) Proposal {
	p := Proposal{Victim: "content/article", VictimNode: from, PersistingWindows: 11,
		Move: "analytics/" + name, MoveUID: uid, FromNode: from}
	if to != "" {
		p.ToNode = &to
	}
	return p
}

func runningPod(name, uid, node string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "analytics", UID: types.UID(uid)},
		Spec: v1.PodSpec{NodeName: node}}
}

// harness: a fake API server that records evictions and answers them with
// evictErr.
type harness struct {
	advice    *fixedAdvice
	client    *fake.Clientset
	evictions []*policyv1.Eviction
	evictErr  error
	clock     time.Time
	logs      bytes.Buffer
	metrics   *Metrics
	r         *Rebalancer
}

func newHarness(t *testing.T, o Options, pods ...*v1.Pod) *harness {
	t.Helper()
	h := &harness{advice: &fixedAdvice{}, clock: time.Unix(1000, 0)}
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	h.client = fake.NewClientset(objs...)
	h.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		h.evictions = append(h.evictions, a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction))
		return true, nil, h.evictErr
	})
	h.metrics = NewMetrics(prometheus.NewRegistry())
	h.r = New(h.advice, h.client, o, slog.New(slog.NewTextHandler(&h.logs, nil)), h.metrics,
		func() time.Time { return h.clock })
	return h
}

// poll advances the clock by step and polls once.
func (h *harness) poll(t *testing.T, step time.Duration) []Outcome {
	t.Helper()
	h.clock = h.clock.Add(step)
	out, err := h.r.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func count(h *harness, result string, dryRun bool) float64 {
	return testutil.ToFloat64(h.metrics.evictions.WithLabelValues(result, map[bool]string{true: "true", false: "false"}[dryRun]))
}

var live = Options{MinPolls: 3, MinDuration: time.Minute, MaxEvictions: 1, EvictionWindow: 10 * time.Minute}

func TestHysteresisNeedsPollsAndDuration(t *testing.T) {
	h := newHarness(t, live, runningPod("ingest", "uid-1", "node-1"))
	h.advice.proposals = []Proposal{proposal("ingest", "uid-1", "node-1", "node-3")}
	// Three polls 10 s apart: enough polls, not enough time.
	for i := 0; i < 3; i++ {
		if out := h.poll(t, 10*time.Second); len(out) != 0 {
			t.Fatalf("poll %d acted before the proposal persisted: %+v", i, out)
		}
	}
	if got := testutil.ToFloat64(h.metrics.pending); got != 1 {
		t.Errorf("pending proposals = %v, want 1", got)
	}
	out := h.poll(t, 50*time.Second) // 60 s since first seen, 4 polls
	if len(out) != 1 || out[0].Result != ResultEvicted {
		t.Fatalf("after 4 polls over 60 s: %+v, want one eviction", out)
	}
	if len(h.evictions) != 1 {
		t.Fatalf("%d evictions sent, want 1", len(h.evictions))
	}
	e := h.evictions[0]
	if e.Name != "ingest" || e.Namespace != "analytics" || e.DeleteOptions == nil ||
		e.DeleteOptions.Preconditions == nil || string(*e.DeleteOptions.Preconditions.UID) != "uid-1" ||
		len(e.DeleteOptions.DryRun) != 0 {
		t.Errorf("eviction sent: %+v (want analytics/ingest, UID precondition uid-1, no dryRun)", e)
	}
	if count(h, ResultEvicted, false) != 1 {
		t.Errorf("evictions_total{result=evicted,dry_run=false} = %v", count(h, ResultEvicted, false))
	}
	if !strings.Contains(h.logs.String(), `msg=evicted pod=analytics/ingest uid=uid-1 from=node-1`) {
		t.Errorf("no structured log of the eviction:\n%s", h.logs.String())
	}
	// Evicted once: not asked again while the advice still lags.
	if out := h.poll(t, time.Minute); len(out) != 0 || len(h.evictions) != 1 {
		t.Errorf("the evicted pod was acted on again: %+v", out)
	}
}

func TestAProposalThatDisappearsStartsOver(t *testing.T) {
	h := newHarness(t, Options{MinPolls: 3, MinDuration: 0, MaxEvictions: 5, EvictionWindow: time.Minute},
		runningPod("ingest", "uid-1", "node-1"))
	p := proposal("ingest", "uid-1", "node-1", "node-3")
	h.advice.proposals = []Proposal{p}
	h.poll(t, time.Second)
	h.poll(t, time.Second)
	h.advice.proposals = nil // the victim recovered for one poll
	h.poll(t, time.Second)
	h.advice.proposals = []Proposal{p}
	h.poll(t, time.Second)
	if out := h.poll(t, time.Second); len(out) != 0 {
		t.Fatalf("acted after 2 consecutive polls: %+v", out)
	}
	// A failed poll neither counts nor resets.
	h.advice.err = errors.New("connection refused")
	if _, err := h.r.Poll(context.Background()); err == nil {
		t.Fatal("the advice's error was not returned")
	}
	h.advice.err = nil
	if out := h.poll(t, time.Second); len(out) != 1 || out[0].Result != ResultEvicted {
		t.Fatalf("third consecutive poll: %+v, want an eviction", out)
	}
	if got := testutil.ToFloat64(h.metrics.polls.WithLabelValues("error")); got != 1 {
		t.Errorf("advice_polls_total{result=error} = %v, want 1", got)
	}
}

func TestDryRunAsksTheAPIServerAndDeletesNothing(t *testing.T) {
	o := live
	o.DryRun, o.MinPolls, o.MinDuration = true, 1, 0
	h := newHarness(t, o, runningPod("ingest", "uid-1", "node-1"))
	h.advice.proposals = []Proposal{proposal("ingest", "uid-1", "node-1", "node-3")}
	out := h.poll(t, time.Second)
	if len(out) != 1 || out[0].Result != ResultWouldEvict {
		t.Fatalf("dry-run: %+v, want would_evict", out)
	}
	if len(h.evictions) != 1 || len(h.evictions[0].DeleteOptions.DryRun) != 1 || h.evictions[0].DeleteOptions.DryRun[0] != metav1.DryRunAll {
		t.Fatalf("dry-run eviction not sent with dryRun=All: %+v", h.evictions)
	}
	if count(h, ResultWouldEvict, true) != 1 || count(h, ResultEvicted, true) != 0 {
		t.Errorf("dry-run counters: would_evict %v, evicted %v", count(h, ResultWouldEvict, true), count(h, ResultEvicted, true))
	}
	if !strings.Contains(h.logs.String(), `msg="dry-run: would evict"`) {
		t.Errorf("no dry-run log line:\n%s", h.logs.String())
	}
}

func TestRefusedByDisruptionBudget(t *testing.T) {
	o := live
	o.MinPolls, o.MinDuration = 1, 0
	h := newHarness(t, o, runningPod("ingest", "uid-1", "node-1"))
	refusal := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	refusal.ErrStatus.Details.Causes = append(refusal.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget ingest needs 1 healthy pods and has 1 currently"})
	h.evictErr = refusal
	h.advice.proposals = []Proposal{proposal("ingest", "uid-1", "node-1", "node-3")}
	for i := 0; i < 2; i++ {
		out := h.poll(t, time.Second)
		if len(out) != 1 || out[0].Result != ResultRefused || !strings.Contains(out[0].Detail, "budget ingest needs 1 healthy pods") {
			t.Fatalf("poll %d: %+v, want refused naming the budget", i, out)
		}
	}
	// A refusal does not use up the rate limit: once allowed, it evicts.
	h.evictErr = nil
	if out := h.poll(t, time.Second); len(out) != 1 || out[0].Result != ResultEvicted {
		t.Fatalf("after the budget allows it: %+v", out)
	}
	if count(h, ResultRefused, false) != 2 {
		t.Errorf("refused = %v, want 2", count(h, ResultRefused, false))
	}
}

func TestRateLimit(t *testing.T) {
	o := Options{MinPolls: 1, MaxEvictions: 1, EvictionWindow: 10 * time.Minute}
	h := newHarness(t, o, runningPod("a", "uid-a", "node-1"), runningPod("b", "uid-b", "node-2"))
	h.advice.proposals = []Proposal{proposal("a", "uid-a", "node-1", "node-3"), proposal("b", "uid-b", "node-2", "node-3")}
	out := h.poll(t, time.Second)
	if len(out) != 2 || out[0].Result != ResultEvicted || out[1].Result != ResultRateLimited {
		t.Fatalf("two proposals, max 1: %+v", out)
	}
	h.advice.proposals = h.advice.proposals[1:]
	if out := h.poll(t, 9*time.Minute); len(out) != 1 || out[0].Result != ResultRateLimited {
		t.Fatalf("within the window: %+v", out)
	}
	if out := h.poll(t, 2*time.Minute); len(out) != 1 || out[0].Result != ResultEvicted {
		t.Fatalf("after the window: %+v", out)
	}
	if len(h.evictions) != 2 {
		t.Errorf("%d evictions sent, want 2", len(h.evictions))
	}
}

func TestNeverEvictsWhatTheAdviceDoesNotName(t *testing.T) {
	o := Options{MinPolls: 1, MaxEvictions: 10, EvictionWindow: time.Minute}
	terminating := runningPod("leaving", "uid-l", "node-1")
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	h := newHarness(t, o, runningPod("renamed", "uid-new", "node-1"), runningPod("moved", "uid-m", "node-4"), terminating)
	h.advice.proposals = []Proposal{
		proposal("gone", "uid-g", "node-1", "node-3"),      // no such pod
		proposal("renamed", "uid-old", "node-1", "node-3"), // a new pod of the same name
		proposal("moved", "uid-m", "node-1", "node-3"),     // runs elsewhere now
		proposal("leaving", "uid-l", "node-1", "node-3"),   // terminating
		proposal("stuck", "uid-s", "node-1", ""),           // no target node
	}
	out := h.poll(t, time.Second)
	want := []string{ResultStale, ResultStale, ResultStale, ResultStale, ResultNoTarget}
	if len(out) != len(want) {
		t.Fatalf("outcomes %+v", out)
	}
	for i, w := range want {
		if out[i].Result != w {
			t.Errorf("%s: %s (%s), want %s", out[i].Pod, out[i].Result, out[i].Detail, w)
		}
	}
	if len(h.evictions) != 0 {
		t.Errorf("evicted %d pods the advice did not name as they are", len(h.evictions))
	}
}

func TestOtherAPIErrorsAreFailures(t *testing.T) {
	h := newHarness(t, Options{MinPolls: 1, MaxEvictions: 1, EvictionWindow: time.Minute}, runningPod("ingest", "uid-1", "node-1"))
	h.evictErr = apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "ingest", errors.New("RBAC"))
	h.advice.proposals = []Proposal{proposal("ingest", "uid-1", "node-1", "node-3")}
	if out := h.poll(t, time.Second); len(out) != 1 || out[0].Result != ResultFailed || !strings.Contains(out[0].Detail, "forbidden") {
		t.Fatalf("%+v, want failed naming the error", out)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{MinPolls: 0, MaxEvictions: 1, EvictionWindow: time.Minute},
		{MinPolls: 1, MinDuration: -time.Second, MaxEvictions: 1, EvictionWindow: time.Minute},
		{MinPolls: 1, MaxEvictions: 0, EvictionWindow: time.Minute},
		{MinPolls: 1, MaxEvictions: 1},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := live.Validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}
