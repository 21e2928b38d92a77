package plugin

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The plugin's series in kube-scheduler's own /metrics.
var (
	rpcDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "rpc_duration_seconds",
		Help:           "Round trip of the plugin's calls to the Neighborly placement service, by method and gRPC code.",
		Buckets:        []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		StabilityLevel: metrics.ALPHA,
	}, []string{"method", "code"})
	failOpen = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "fail_open_total",
		Help:           "Scheduling cycles in which the plugin let a pod through without Neighborly's answer, by extension point and reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"extension_point", "reason"})
	peerCalls = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "peer_calls_total",
		Help:           "Reserve and Unreserve calls sent to every extender replica behind peersAddress, by method (PeerReserve, PeerUnreserve) and result (ok, or the failure's reason).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"method", "result"})
	cycles = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "cycles_total",
		Help:           "Scheduling cycles the plugin served, by path: streamed (read from the verdict tables, no call), calls (the synchronous calls, the whole fleet judged at PreFilter) or windowed (the synchronous calls, a window of nodes judged at a time from Filter).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"path"})
	narrowed = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "narrowed_cycles_total",
		Help:           "Streamed scheduling cycles in which PreFilter named the nodes the verdict table passes (at most half of the nodes), so that kube-scheduler filtered only those.",
		StabilityLevel: metrics.ALPHA,
	})
	skippedFilters = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "filter_skipped_cycles_total",
		Help:           "Streamed scheduling cycles in which the shape's table refused no node and no booking was pending, so PreFilter told kube-scheduler to skip the plugin's Filter.",
		StabilityLevel: metrics.ALPHA,
	})
	settledWaits = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "narrowed_ack_waits_total",
		Help:           "Streamed scheduling cycles whose PreFilter waited for bookings' acks because at least half of the nodes the table passed had one in flight, so that the narrowed set is taken from the acked verdicts.",
		StabilityLevel: metrics.ALPHA,
	})
	bookingMessages = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "booking_messages_total",
		Help:           "Messages that carried Reserve and Unreserve on the verdict stream, by why they were sent: at_once (bookingLinger 0), linger (the held bookings' linger ended), wait (a cycle waited for an ack) or narrowed (a narrowed cycle's set held a node of one, sent as the cycle began). neighborly_plugin_bookings_sent_total over it is the bookings per message.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sent"})
	bookingsSent = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "bookings_sent_total",
		Help:           "Reserve and Unreserve sent on the verdict stream (resends after a reconnect not counted).",
		StabilityLevel: metrics.ALPHA,
	})
	ackWait = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "ack_wait_seconds",
		Help:           "Time a scheduling cycle waited for the acks of bookings sent on the verdict stream before reading a verdict, by extension point (PreFilter; Filter, for a windowed cycle's node judged again; PreScore, before the Score call; Reserve, for a node passed ahead of its ack) and result (acked, timed_out: the cycle then failed open or was retried). Cycles that did not wait are not counted.",
		Buckets:        []float64{0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.3},
		StabilityLevel: metrics.ALPHA,
	}, []string{"extension_point", "result"})
	passedAheadOfAcks = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "neighborly",
		Subsystem:      "plugin",
		Name:           "passed_ahead_of_ack_total",
		Help:           "Nodes with a booking not yet acked that a streamed cycle judged without waiting for the ack, by outcome: Filter (passed: the verdict table passed them as it stood), Filter_refused (refused: the table refused them as it stood), Score (scored as the table stood, at most the neutral middle), and Reserve_refused (of those passed and chosen, the ones Reserve refused because the acked table refuses them: the pod is tried again).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"outcome"})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(rpcDuration, failOpen, peerCalls, cycles, narrowed, skippedFilters, settledWaits,
			bookingMessages, bookingsSent, ackWait, passedAheadOfAcks)
	})
}
