package plugin

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// hungPlacement never answers Reserve until released (a replica that hangs).
type hungPlacement struct {
	fakePlacement
	release chan struct{}
}

func (h *hungPlacement) Reserve(ctx context.Context, r *placementv1.ReserveRequest) (*placementv1.ReserveResponse, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return h.fakePlacement.Reserve(ctx, r)
}

// serveOn starts a placement server on ip:port (port 0: any); returns the port.
func serveOn(t *testing.T, srv placementv1.PlacementServer, ip string, port int) int {
	t.Helper()
	lis, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Skipf("cannot listen on %s (loopback aliases 127.0.0.0/8 are needed): %v", ip, err)
	}
	s := grpc.NewServer()
	placementv1.RegisterPlacementServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().(*net.TCPAddr).Port
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fakePlacement) has(list *[]string, entry string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(*list, entry)
}

// Three replicas behind one name on 127.0.0.11-13 (one port, as a headless
// Service's pods have), the scheduler's own replica on the ClusterIP-like
// Address: Reserve and Unreserve reach all of them, and a hung one delays
// neither the cycle nor the others.
func TestReserveAndUnreserveReachEveryReplicaBehindThePeersName(t *testing.T) {
	primary := &fakePlacement{}
	address := serve(t, primary, nil)
	replicas := []*fakePlacement{{}, {}}
	hung := &hungPlacement{release: make(chan struct{})}
	port := serveOn(t, replicas[0], "127.0.0.11", 0)
	serveOn(t, replicas[1], "127.0.0.12", port)
	serveOn(t, hung, "127.0.0.13", port)
	ips := []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"}
	lookup := func(_ context.Context, host string) ([]string, error) {
		if host != "replicas.test" {
			return nil, fmt.Errorf("no such host %s", host)
		}
		return ips, nil
	}
	a := Args{Address: address, Insecure: true, PeersAddress: net.JoinHostPort("replicas.test", strconv.Itoa(port))}
	a.SetDefaults()
	a.ReserveTimeout.Duration = 5 * time.Second // the hung replica must not be cut off by the deadline
	if errs := a.Validate(nil); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, err := newPluginWithLookup(a, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(hung.release)
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		// The framework closes its plugins when the scheduler stops, and
		// scheduler/perf closes them after each workload: a second Close
		// (which panicked on the peers' channel) does nothing.
		if err := p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}()
	if got, want := p.peers.addresses(), []string{
		"127.0.0.11:" + strconv.Itoa(port), "127.0.0.12:" + strconv.Itoa(port), "127.0.0.13:" + strconv.Itoa(port),
	}; !slices.Equal(got, want) {
		t.Fatalf("peers %v, want %v", got, want)
	}

	pod := testPod()
	// Returns once the primary answered, although one replica hangs.
	if st := p.Reserve(context.Background(), nil, pod, "node-2"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	if !primary.has(&primary.reserved, "uid-1@node-2") {
		t.Fatalf("primary did not book: %v", primary.reserved)
	}
	for i, r := range replicas {
		eventually(t, fmt.Sprintf("replica %d's booking", i+1), func() bool { return r.has(&r.reserved, "uid-1@node-2") })
	}
	if hung.has(&hung.reserved, "uid-1@node-2") {
		t.Fatal("the hung replica answered before it was released")
	}
	p.Unreserve(context.Background(), nil, pod, "node-2")
	for i, r := range replicas {
		eventually(t, fmt.Sprintf("replica %d's release", i+1), func() bool { return r.has(&r.released, "uid-1@node-2") })
	}
	eventually(t, "the hung replica's release", func() bool { return hung.has(&hung.released, "uid-1@node-2") })
}

func TestPeersFollowTheNameAndKeepReplicasWhenItFailsToResolve(t *testing.T) {
	a := Args{Address: "127.0.0.1:1", Insecure: true, PeersAddress: "replicas.test:9091"}
	a.SetDefaults()
	answer := []string{"10.0.0.1", "10.0.0.2"}
	var fail bool
	lookup := func(context.Context, string) ([]string, error) {
		if fail {
			return nil, fmt.Errorf("dns down")
		}
		return answer, nil
	}
	ps, err := newPeers(a, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.close()
	if got := ps.addresses(); !slices.Equal(got, []string{"10.0.0.1:9091", "10.0.0.2:9091"}) {
		t.Fatalf("got %v", got)
	}
	answer = []string{"10.0.0.2", "10.0.0.3"}
	ps.resolve()
	if got := ps.addresses(); !slices.Equal(got, []string{"10.0.0.2:9091", "10.0.0.3:9091"}) {
		t.Fatalf("after a change: %v", got)
	}
	fail = true
	ps.resolve()
	if got := ps.addresses(); !slices.Equal(got, []string{"10.0.0.2:9091", "10.0.0.3:9091"}) {
		t.Fatalf("a failed lookup must keep the replicas: %v", got)
	}
}

func TestPeersAddressMustBeHostPort(t *testing.T) {
	a := Args{Address: "extender:9091", Insecure: true, PeersAddress: "no-port"}
	a.SetDefaults()
	errs := a.Validate(nil)
	if len(errs) != 1 || errs[0].Field != "peersAddress" {
		t.Fatalf("want one peersAddress error, got %v", errs)
	}
}
