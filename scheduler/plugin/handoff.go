package plugin

import (
	"context"
	"net"
	"sync"
	"time"
)

// writeSignal counts the writes on the plugin's connection to the extender,
// so that Reserve can hand its processor to gRPC-Go's writer goroutine and
// have it back as soon as the booking is on the wire (docs/placement.md,
// "Bookings"). A goroutine waiting in waitPast is readied by the writer's
// goroutine, which puts it next in that processor's queue: the cycle goes on
// right after the write, ahead of whatever else the processor holds.
type writeSignal struct {
	mu   sync.Mutex
	gen  uint64
	wake chan struct{} // closed at the next write; nil while nobody waits
}

func newWriteSignal() *writeSignal { return &writeSignal{} }

// generation is the number of writes so far.
func (s *writeSignal) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

func (s *writeSignal) wrote() {
	s.mu.Lock()
	s.gen++
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
	s.mu.Unlock()
}

// waitPast waits until a write after generation g has completed, at most
// limit; it says whether one did.
func (s *writeSignal) waitPast(g uint64, limit time.Duration) bool {
	s.mu.Lock()
	if s.gen > g {
		s.mu.Unlock()
		return true
	}
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	wake := s.wake
	s.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-wake:
		return true
	case <-t.C:
		return false
	}
}

// dialer dials TCP as gRPC's default dialer does and counts the
// connection's writes in s.
func (s *writeSignal) dialer() func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &signallingConn{Conn: c, s: s}, nil
	}
}

// signallingConn tells its writeSignal after every write.
type signallingConn struct {
	net.Conn
	s *writeSignal
}

func (c *signallingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.s.wrote()
	return n, err
}
