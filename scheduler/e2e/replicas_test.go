package e2e

import (
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serviceProxy stands in for the extender's ClusterIP Service: every new
// connection goes to the first backend that accepts it, in order, as
// kube-proxy (sessionAffinity: ClientIP) keeps the scheduler on one replica
// and moves it to another once the dead one's endpoint is gone. TLS passes
// through untouched (the scheduler's client certificate reaches the replica).
type serviceProxy struct {
	lis      net.Listener
	port     int
	backends []string

	mu     sync.Mutex
	routed map[string]int // connections by backend
}

func startServiceProxy(t *testing.T, backends ...string) *serviceProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &serviceProxy{lis: lis, port: lis.Addr().(*net.TCPAddr).Port, backends: backends, routed: map[string]int{}}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go s.forward(c)
		}
	}()
	return s
}

func (s *serviceProxy) forward(c net.Conn) {
	defer c.Close()
	for _, b := range s.backends {
		up, err := net.DialTimeout("tcp", b, time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		s.mu.Lock()
		s.routed[b]++
		s.mu.Unlock()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		return
	}
}

func (s *serviceProxy) connections(backend string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.routed[backend]
}

// The chart's default of two extender replicas behind the stock
// kube-scheduler (its own configuration, ignorable: true): the agents stream
// to both, both know every node, and when the replica the scheduler talks to
// is killed mid-burst, pods keep being scheduled and Neighborly is consulted
// on the survivor.
func TestTwoReplicasSurviveLosingTheOneTheSchedulerUses(t *testing.T) {
	p := getPaths(t)
	cp := startControlPlane(t)
	certs := newPKI(t)

	a := startExtender(t, p, certs, freePort(t), freePort(t))
	b := startExtender(t, p, certs, freePort(t), freePort(t))
	nodes := readScenario(t, p)
	startProcess(t, "agent", p.agent, "--simulate", p.scenario,
		"--extender", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", a.grpcPort, b.grpcPort),
		"--interval", "1s", "--insecure-plaintext", "--log-level", "warn")
	a.waitForFleet(t, len(nodes))
	b.waitForFleet(t, len(nodes))
	createCluster(t, cp, nodes)
	createNamespaces(t, cp, "neighborly", "analytics", "content", "e2e")

	addrA, addrB := fmt.Sprintf("127.0.0.1:%d", a.httpPort), fmt.Sprintf("127.0.0.1:%d", b.httpPort)
	svc := startServiceProxy(t, addrA, addrB)
	startScheduler(t, p, schedulerConfig(t, p, cp, certs, &extender{httpPort: svc.port}))

	schedule := func(prefix string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			createPod(t, cp, plainPod(fmt.Sprintf("%s-%d", prefix, i)))
		}
		for i := 0; i < n; i++ {
			node := waitScheduled(t, cp, "e2e", fmt.Sprintf("%s-%d", prefix, i), 60*time.Second)
			t.Logf("e2e/%s-%d bound to %s", prefix, i, node)
		}
	}

	beforeA := a.requests(t)
	schedule("before", 3)
	if moved := a.requests(t)["filter/200"] - beforeA["filter/200"]; moved < 3 {
		t.Fatalf("replica A (the scheduler's) answered %d filters for 3 pods", moved)
	}

	// A burst, and the scheduler's replica killed in the middle of it.
	midB := b.requests(t)
	for i := 0; i < 6; i++ {
		createPod(t, cp, plainPod(fmt.Sprintf("during-%d", i)))
		if i == 2 {
			a.proc.signal(t, syscall.SIGKILL)
		}
	}
	for i := 0; i < 6; i++ {
		node := waitScheduled(t, cp, "e2e", fmt.Sprintf("during-%d", i), 60*time.Second)
		t.Logf("e2e/during-%d bound to %s", i, node)
	}
	schedule("after", 3)
	afterB := b.requests(t)
	for _, verb := range []string{"filter/200", "prioritize/200"} {
		if moved := afterB[verb] - midB[verb]; moved < 3 {
			t.Errorf("the surviving replica's %s moved by %d for the pods after the kill", verb, moved)
		}
	}
	if svc.connections(addrB) == 0 {
		t.Errorf("no connection ever reached the surviving replica")
	}
	t.Logf("connections: A %d, B %d; survivor's filter/200 %d -> %d", svc.connections(addrA),
		svc.connections(addrB), midB["filter/200"], afterB["filter/200"])
}
