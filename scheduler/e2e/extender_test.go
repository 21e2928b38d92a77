package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStockSchedulerWithExtender runs the stock kube-scheduler of the pinned
// release with the KubeSchedulerConfiguration the chart renders (mode
// second-scheduler: extender entry over HTTPS with the scheduler's client
// certificate), against the real neighborly-extender fed by
// `neighborly-agent --simulate` with the seed scenario.
func TestStockSchedulerWithExtender(t *testing.T) {
	p := getPaths(t)
	cp := startControlPlane(t)
	certs := newPKI(t)
	picks := demoPicks(t, p)

	ext := startExtender(t, p, certs, freePort(t), freePort(t))
	nodes := readScenario(t, p)
	startProcess(t, "agent", p.agent, "--simulate", p.scenario,
		"--extender", fmt.Sprintf("127.0.0.1:%d", ext.grpcPort),
		"--interval", "1s", "--insecure-plaintext", "--log-level", "warn")
	ext.waitForFleet(t, len(nodes))
	createCluster(t, cp, nodes)
	createNamespaces(t, cp, "neighborly", "analytics", "content", "e2e")

	// 1. The seed scenario's two pods, with ignorable: false, so that a
	// placement can only happen with the extender's answer.
	pods := incomingPods(t, p)
	if len(pods) != len(picks) {
		t.Fatalf("the demo printed %d decisions for %d pods", len(picks), len(pods))
	}
	sched := startScheduler(t, p, schedulerConfig(t, p, cp, certs, ext, "schedulerExtender.ignorable=false"))
	before := ext.requests(t)
	for i, pod := range pods {
		createPod(t, cp, pod)
		got := waitScheduled(t, cp, pod.Namespace, pod.Name, 60*time.Second)
		if i >= 2 {
			// Beyond the seed's two pods the demo's world (where each pod went
			// to Neighborly's pick) and this one may differ after a near-tie.
			t.Logf("%s/%s bound to %s (the demo, in its own world, picks %s)", pod.Namespace, pod.Name, got, picks[i].node)
			continue
		}
		switch {
		case got == picks[i].node:
			t.Logf("%s/%s bound to %s, as in the demo", pod.Namespace, pod.Name, got)
		case picks[i].agrees(got):
			t.Logf("%s/%s bound to %s (Neighborly %d/10), the demo's pick %s (%d/10): a near-tie kube-scheduler's own plugins broke",
				pod.Namespace, pod.Name, got, picks[i].scores[got], picks[i].node, picks[i].scores[picks[i].node])
		default:
			t.Errorf("%s/%s bound to %s; the demo says Neighborly picks %s (scores %v)", pod.Namespace, pod.Name, got, picks[i].node, picks[i].scores)
		}
	}
	after := ext.requests(t)
	for _, verb := range []string{"filter/200", "prioritize/200"} {
		if after[verb]-before[verb] < len(pods) {
			t.Errorf("neighborly_extender_http_requests_total{%s} moved by %d for %d pods", verb, after[verb]-before[verb], len(pods))
		}
	}

	// With ignorable: false a hung extender blocks scheduling: the pod gets
	// FailedScheduling naming the extender, and is bound once it answers.
	ext.proc.signal(t, syscall.SIGSTOP)
	createPod(t, cp, plainPod("blocked"))
	msg := waitEvent(t, cp, "e2e", "blocked", "FailedScheduling", 30*time.Second)
	if !strings.Contains(msg, fmt.Sprintf("127.0.0.1:%d", ext.httpPort)) {
		t.Errorf("FailedScheduling does not name the extender: %q", msg)
	}
	if pod, err := cp.client.CoreV1().Pods("e2e").Get(context.Background(), "blocked", metav1.GetOptions{}); err != nil || pod.Spec.NodeName != "" {
		t.Fatalf("e2e/blocked bound to %q (err %v) while the non-ignorable extender hung", pod.Spec.NodeName, err)
	}
	t.Logf("e2e/blocked not scheduled while the extender hung: %s", msg)
	ext.proc.signal(t, syscall.SIGCONT)
	waitScheduled(t, cp, "e2e", "blocked", 60*time.Second)
	sched.stop(t) // releases its lease

	// 2. The chart's defaults (ignorable: true) for the faults. Processes
	// started in a subtest belong to the whole test (outer), not the subtest.
	outer := t
	startScheduler(t, p, schedulerConfig(t, p, cp, certs, ext))

	t.Run("extender down: pods still schedule (ignorable)", func(t *testing.T) {
		ext.proc.stop(t)
		createPod(t, cp, plainPod("while-down"))
		node := waitScheduled(t, cp, "e2e", "while-down", 30*time.Second)
		t.Logf("e2e/while-down bound to %s without the extender", node)
	})

	t.Run("extender restarted: consulted again", func(t *testing.T) {
		ext = startExtender(outer, p, certs, ext.httpPort, ext.grpcPort) // same ports: the scheduler's URL
		ext.waitForFleet(t, len(nodes))                                  // the agent reconnects by itself
		before := ext.requests(t)
		createPod(t, cp, plainPod("after-restart"))
		waitScheduled(t, cp, "e2e", "after-restart", 30*time.Second)
		after := ext.requests(t)
		if after["filter/200"] <= before["filter/200"] {
			t.Errorf("the restarted extender was not consulted: filter/200 %d -> %d", before["filter/200"], after["filter/200"])
		}
	})

	t.Run("extender slower than httpTimeout: pods still schedule", func(t *testing.T) {
		// A stopped process still has its listening socket: connections are
		// accepted by the kernel and then nothing answers, so every call
		// runs into the 300ms httpTimeout.
		ext.proc.signal(t, syscall.SIGSTOP)
		start := time.Now()
		createPod(t, cp, plainPod("while-slow"))
		waitScheduled(t, cp, "e2e", "while-slow", 30*time.Second)
		took := time.Since(start)
		ext.proc.signal(t, syscall.SIGCONT)
		t.Logf("e2e/while-slow scheduled in %v with the extender hung", took.Round(time.Millisecond))
		if took < 300*time.Millisecond {
			t.Errorf("scheduled in %v: faster than httpTimeout, so the hung extender was never called", took)
		}
		ext.waitForFleet(t, len(nodes))
		before := ext.requests(t)
		createPod(t, cp, plainPod("after-slow"))
		waitScheduled(t, cp, "e2e", "after-slow", 30*time.Second)
		if after := ext.requests(t); after["filter/200"] <= before["filter/200"] {
			t.Errorf("the resumed extender was not consulted again")
		}
	})
}
