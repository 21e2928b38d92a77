package plugin

import (
	"context"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/klog/v2"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// peers sends every Reserve and Unreserve to each extender replica behind
// Args.PeersAddress as well (a headless Service: one address per replica),
// so that when the replica the scheduler talks to dies, the one that takes
// over already holds the bookings of the pods in flight and a burst does not
// herd onto the nodes it could not see booked. The calls run beside the
// primary one, each with its own deadline, and the cycle never waits for
// them: a slow or dead replica costs nothing but its own booking (each has
// the reserveTimeout deadline, at least 1 s; connections open at resolution). Every
// address is verified by the Service's name (or Args.ServerName). The
// replica behind Address is among the peers too, so it gets the call twice;
// both are idempotent (the same UID on the same node is booked once).
type peers struct {
	host, port string
	creds      credentials.TransportCredentials
	timeout    time.Duration
	lookup     func(ctx context.Context, host string) ([]string, error)

	mu    sync.Mutex
	conns map[string]*peerConn // by "ip:port"
	done  chan struct{}
	wg    sync.WaitGroup
}

// peerMinTimeout: the shortest deadline of a call to a peer.
const peerMinTimeout = time.Second

type peerConn struct {
	conn   *grpc.ClientConn
	client placementv1.PlacementClient
}

// newPeers resolves a.PeersAddress once now (a failure is logged and retried
// at the next interval) and then every a.PeersResolveInterval.
func newPeers(a Args, lookup func(context.Context, string) ([]string, error)) (*peers, error) {
	host, port, err := net.SplitHostPort(a.PeersAddress)
	if err != nil {
		return nil, err
	}
	serverName := a.ServerName
	if serverName == "" {
		serverName = host
	}
	creds, err := transportCredentials(a, serverName)
	if err != nil {
		return nil, err
	}
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	// Off the cycle's path, a peer's call may take longer than the primary's:
	// a booking that arrives late still beats none.
	timeout := max(a.ReserveTimeout.Duration, peerMinTimeout)
	ps := &peers{host: host, port: port, creds: creds, timeout: timeout, lookup: lookup,
		conns: map[string]*peerConn{}, done: make(chan struct{})}
	ps.resolve()
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		t := time.NewTicker(a.PeersResolveInterval.Duration)
		defer t.Stop()
		for {
			select {
			case <-ps.done:
				return
			case <-t.C:
				ps.resolve()
			}
		}
	}()
	return ps, nil
}

// resolve opens a connection to every new address and closes those of
// addresses gone; a failed lookup keeps the replicas known.
func (ps *peers) resolve() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := ps.lookup(ctx, ps.host)
	if err != nil {
		klog.InfoS("Neighborly peers: cannot resolve; keeping the known replicas", "host", ps.host, "err", err)
		return
	}
	want := map[string]bool{}
	for _, ip := range ips {
		want[net.JoinHostPort(ip, ps.port)] = true
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var added, removed []string
	for addr := range want {
		if _, ok := ps.conns[addr]; ok {
			continue
		}
		conn, client, err := dialTarget(addr, ps.creds)
		if err != nil {
			klog.InfoS("Neighborly peers: cannot dial", "address", addr, "err", err)
			continue
		}
		// Connected now, not at the first Reserve: the handshake must not eat
		// that call's deadline.
		conn.Connect()
		ps.conns[addr] = &peerConn{conn: conn, client: client}
		added = append(added, addr)
	}
	for addr, c := range ps.conns {
		if !want[addr] {
			_ = c.conn.Close()
			delete(ps.conns, addr)
			removed = append(removed, addr)
		}
	}
	if len(added) > 0 || len(removed) > 0 {
		sort.Strings(added)
		sort.Strings(removed)
		klog.InfoS("Neighborly peers changed", "host", ps.host, "replicas", len(ps.conns),
			"added", strings.Join(added, ","), "removed", strings.Join(removed, ","))
	}
}

// addresses: the replicas known now, sorted (tests).
func (ps *peers) addresses() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]string, 0, len(ps.conns))
	for addr := range ps.conns {
		out = append(out, addr)
	}
	sort.Strings(out)
	return out
}

// each calls fn on every replica in its own goroutine with its own deadline,
// and returns at once.
func (ps *peers) each(method string, fn func(context.Context, placementv1.PlacementClient) error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for addr, c := range ps.conns {
		client := c.client
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), ps.timeout)
			defer cancel()
			start := time.Now()
			err := fn(ctx, client)
			observe(method, start, err)
			result := "ok"
			if err != nil {
				result = reasonOf(err)
				klog.V(4).InfoS("Neighborly peer call failed", "method", method, "address", addr, "err", err)
			}
			peerCalls.WithLabelValues(method, result).Inc()
		}()
	}
}

func (ps *peers) reserve(req *placementv1.ReserveRequest) {
	ps.each("PeerReserve", func(ctx context.Context, c placementv1.PlacementClient) error {
		_, err := c.Reserve(ctx, req)
		return err
	})
}

func (ps *peers) unreserve(req *placementv1.UnreserveRequest) {
	ps.each("PeerUnreserve", func(ctx context.Context, c placementv1.PlacementClient) error {
		_, err := c.Unreserve(ctx, req)
		return err
	})
}

// close stops resolving, waits for the calls in flight (each bounded by its
// deadline) and closes the connections.
func (ps *peers) close() {
	close(ps.done)
	ps.wg.Wait()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for addr, c := range ps.conns {
		_ = c.conn.Close()
		delete(ps.conns, addr)
	}
}
