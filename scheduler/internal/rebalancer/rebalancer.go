package rebalancer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Options are the rebalancer's limits (flags of neighborly-rebalancer).
type Options struct {
	// DryRun: ask the API server to evaluate each eviction (dryRun=All: the
	// PodDisruptionBudget check included) and delete nothing.
	DryRun bool
	// Hysteresis: a proposal is acted on once the same move (pod UID, from
	// node) was in MinPolls consecutive answers spanning at least
	// MinDuration. A poll that fails keeps what was seen; an answer without
	// the move forgets it.
	MinPolls    int
	MinDuration time.Duration
	// Rate limit: at most MaxEvictions evictions (in dry-run, evictions the
	// API server would accept) in any EvictionWindow.
	MaxEvictions   int
	EvictionWindow time.Duration
}

// Validate names the first problem.
func (o Options) Validate() error {
	switch {
	case o.MinPolls < 1:
		return fmt.Errorf("min-polls must be at least 1, got %d", o.MinPolls)
	case o.MinDuration < 0:
		return fmt.Errorf("min-duration must not be negative, got %v", o.MinDuration)
	case o.MaxEvictions < 1:
		return fmt.Errorf("max-evictions must be at least 1, got %d", o.MaxEvictions)
	case o.EvictionWindow <= 0:
		return fmt.Errorf("eviction-window must be positive, got %v", o.EvictionWindow)
	}
	return nil
}

// Results of one proposal acted on (the `result` label of
// neighborly_rebalancer_evictions_total).
const (
	ResultEvicted     = "evicted"      // live: the API server accepted the eviction
	ResultWouldEvict  = "would_evict"  // dry-run: it would accept it; nothing deleted
	ResultRefused     = "refused"      // 429: a PodDisruptionBudget does not allow it now
	ResultStale       = "stale"        // the pod is gone, replaced (other UID), terminating or elsewhere
	ResultNoTarget    = "no_target"    // the advice has no node that takes the pod
	ResultRateLimited = "rate_limited" // MaxEvictions already reached in the window
	ResultFailed      = "failed"       // any other error of the API server
)

type seen struct {
	first time.Time
	polls int
}

// Rebalancer turns persisting proposals into evictions. Not safe for
// concurrent Poll calls (one loop drives it).
type Rebalancer struct {
	advice  AdviceSource
	client  kubernetes.Interface
	options Options
	log     *slog.Logger
	now     func() time.Time
	metrics *Metrics

	seen      map[string]seen      // proposal key -> since when, how many polls
	evictions []time.Time          // accepted evictions in the window
	done      map[string]time.Time // UIDs evicted (or accepted in dry-run): not asked again
}

// New returns a rebalancer; now may be nil (time.Now).
func New(advice AdviceSource, client kubernetes.Interface, options Options, log *slog.Logger,
	metrics *Metrics, now func() time.Time) *Rebalancer {
	if now == nil {
		now = time.Now
	}
	return &Rebalancer{advice: advice, client: client, options: options, log: log, now: now, metrics: metrics,
		seen: map[string]seen{}, done: map[string]time.Time{}}
}

// Outcome is what one poll did with one proposal that had persisted.
type Outcome struct {
	Pod    string // namespace/name
	UID    string
	Result string
	Detail string
}

func key(p Proposal) string { return p.MoveUID + "@" + p.FromNode }

// Poll reads the advice once and acts on the proposals that persisted.
func (r *Rebalancer) Poll(ctx context.Context) ([]Outcome, error) {
	proposals, err := r.advice.Proposals(ctx)
	if err != nil {
		r.metrics.polls.WithLabelValues("error").Inc()
		return nil, err
	}
	r.metrics.polls.WithLabelValues("ok").Inc()
	now := r.now()
	present := map[string]bool{}
	var ready []Proposal
	for _, p := range proposals {
		k := key(p)
		if present[k] {
			continue
		}
		present[k] = true
		s, ok := r.seen[k]
		if !ok {
			s = seen{first: now}
		}
		s.polls++
		r.seen[k] = s
		if s.polls >= r.options.MinPolls && now.Sub(s.first) >= r.options.MinDuration {
			ready = append(ready, p)
		}
	}
	for k := range r.seen {
		if !present[k] {
			delete(r.seen, k)
		}
	}
	for uid, at := range r.done {
		if now.Sub(at) > time.Hour {
			delete(r.done, uid)
		}
	}
	r.metrics.pending.Set(float64(len(r.seen) - len(ready)))
	// The longest-persisting victims first, as the extender orders them.
	sort.SliceStable(ready, func(i, j int) bool { return ready[i].PersistingWindows > ready[j].PersistingWindows })

	var out []Outcome
	for _, p := range ready {
		if _, ok := r.done[p.MoveUID]; ok {
			continue // evicted already; the advice lags the telemetry
		}
		o := r.act(ctx, p, now)
		r.metrics.evictions.WithLabelValues(o.Result, fmt.Sprint(r.options.DryRun)).Inc()
		out = append(out, o)
	}
	return out, nil
}

func (r *Rebalancer) act(ctx context.Context, p Proposal, now time.Time) Outcome {
	ns, name, _ := p.pod()
	o := Outcome{Pod: p.Move, UID: p.MoveUID}
	attrs := []any{"pod", p.Move, "uid", p.MoveUID, "from", p.FromNode, "victim", p.Victim,
		"victimNode", p.VictimNode, "polls", r.seen[key(p)].polls, "dryRun", r.options.DryRun}
	finish := func(result, detail string, level slog.Level, msg string) Outcome {
		o.Result, o.Detail = result, detail
		r.log.Log(ctx, level, msg, append(attrs, "result", result, "detail", detail)...)
		return o
	}
	if p.ToNode == nil || *p.ToNode == "" {
		return finish(ResultNoTarget, "the advice names no node that takes it", slog.LevelInfo, "not evicting")
	}
	attrs = append(attrs, "to", *p.ToNode)

	// What the advice names, and nothing else: the same UID, on the node
	// the advice saw it on, not already terminating.
	pod, err := r.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return finish(ResultStale, "the pod no longer exists", slog.LevelInfo, "not evicting")
	case err != nil:
		return finish(ResultFailed, err.Error(), slog.LevelWarn, "reading the pod failed")
	case string(pod.UID) != p.MoveUID:
		return finish(ResultStale, fmt.Sprintf("the pod now has UID %s (a new pod of the same name)", pod.UID),
			slog.LevelInfo, "not evicting")
	case pod.Spec.NodeName != p.FromNode:
		return finish(ResultStale, fmt.Sprintf("the pod runs on %q, the advice saw it on %q", pod.Spec.NodeName, p.FromNode),
			slog.LevelInfo, "not evicting")
	case pod.DeletionTimestamp != nil:
		return finish(ResultStale, "the pod is already terminating", slog.LevelInfo, "not evicting")
	}

	window := now.Add(-r.options.EvictionWindow)
	kept := r.evictions[:0]
	for _, t := range r.evictions {
		if t.After(window) {
			kept = append(kept, t)
		}
	}
	r.evictions = kept
	if len(r.evictions) >= r.options.MaxEvictions {
		return finish(ResultRateLimited, fmt.Sprintf("%d eviction(s) in the last %v already (max-evictions %d)",
			len(r.evictions), r.options.EvictionWindow, r.options.MaxEvictions), slog.LevelInfo, "not evicting")
	}

	uid := types.UID(p.MoveUID)
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: name, Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	if r.options.DryRun {
		eviction.DeleteOptions.DryRun = []string{metav1.DryRunAll}
	}
	err = r.client.PolicyV1().Evictions(ns).Evict(ctx, eviction)
	switch {
	case err == nil:
		r.evictions = append(r.evictions, now)
		r.done[p.MoveUID] = now
		if r.options.DryRun {
			return finish(ResultWouldEvict, "the API server accepts the eviction (dryRun=All: nothing deleted)",
				slog.LevelInfo, "dry-run: would evict")
		}
		return finish(ResultEvicted, "the API server accepted the eviction", slog.LevelInfo, "evicted")
	case apierrors.IsTooManyRequests(err):
		return finish(ResultRefused, withCauses(err), slog.LevelInfo, "eviction refused")
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return finish(ResultStale, err.Error(), slog.LevelInfo, "not evicting")
	default:
		return finish(ResultFailed, err.Error(), slog.LevelWarn, "eviction failed")
	}
}

// withCauses appends the API server's causes (the budget's own message: "The
// disruption budget X needs 1 healthy pods and has 1 currently").
func withCauses(err error) string {
	msg := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if c.Message != "" && !strings.Contains(msg, c.Message) {
				msg += ": " + c.Message
			}
		}
	}
	return msg
}

// Metrics are the rebalancer's Prometheus series.
type Metrics struct {
	polls     *prometheus.CounterVec
	evictions *prometheus.CounterVec
	pending   prometheus.Gauge
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "neighborly_rebalancer_advice_polls_total",
			Help: "Reads of the extender's /v1/rebalance, by result (ok, error).",
		}, []string{"result"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "neighborly_rebalancer_evictions_total",
			Help: "Persisting proposals acted on, by result (evicted, would_evict, refused, stale, no_target, rate_limited, failed) and dry_run.",
		}, []string{"result", "dry_run"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "neighborly_rebalancer_pending_proposals",
			Help: "Proposals in the advice that have not persisted long enough yet (hysteresis).",
		}),
	}
	reg.MustRegister(m.polls, m.evictions, m.pending)
	return m
}
