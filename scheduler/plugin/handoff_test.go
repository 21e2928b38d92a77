package plugin

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func TestWriteSignalWakesAWaiterAtTheNextWrite(t *testing.T) {
	s := newWriteSignal()
	g := s.generation()
	go func() {
		time.Sleep(20 * time.Millisecond)
		s.wrote()
	}()
	start := time.Now()
	if !s.waitPast(g, 10*time.Second) {
		t.Fatal("waitPast timed out though a write came")
	}
	if d := time.Since(start); d < 15*time.Millisecond || d > 5*time.Second {
		t.Errorf("waitPast returned after %v; the write came after 20 ms", d)
	}
	if s.generation() != g+1 {
		t.Errorf("generation %d after one write from %d", s.generation(), g)
	}
	// A write already past g: no wait at all.
	start = time.Now()
	if !s.waitPast(g, 10*time.Second) || time.Since(start) > time.Second {
		t.Errorf("waitPast for a generation already written waited %v", time.Since(start))
	}
}

func TestWriteSignalWaitIsBounded(t *testing.T) {
	s := newWriteSignal()
	start := time.Now()
	if s.waitPast(s.generation(), 30*time.Millisecond) {
		t.Fatal("waitPast reported a write that never came")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("waitPast gave up after %v, before its 30 ms", d)
	}
	// The waiter's channel is not left for the next write to trip on.
	s.wrote()
	if !s.waitPast(0, time.Millisecond) {
		t.Error("a write after a timed-out wait was not counted")
	}
}

func TestSignallingDialerCountsTheConnectionsWrites(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()
	s := newWriteSignal()
	c, err := s.dialer()(context.Background(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"book", "ing"} {
		if _, err := c.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if b := <-got; b != "booking" {
		t.Errorf("the server read %q", b)
	}
	if s.generation() != 2 {
		t.Errorf("%d writes counted, want 2", s.generation())
	}
}

// Reserve on the stream returns once its booking is written on the
// connection (it waits for gRPC-Go's writer rather than yielding), and
// without waiting for the extender's ack.
func TestStreamedReserveReturnsAfterItsBookingIsWritten(t *testing.T) {
	f := newStreaming()
	f.ackDelay = 200 * time.Millisecond
	p := streamedPlugin(t, f, Args{})
	if p.verdicts.wrote == nil {
		t.Fatal("the plugin's stream has no write signal")
	}
	before := p.verdicts.wrote.generation()
	start := time.Now()
	if st := p.Reserve(context.Background(), framework.NewCycleState(), shapeReplica("uid-2"), "n1"); st != nil {
		t.Fatal(st)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Reserve took %v: it waited for the ack", d)
	}
	if after := p.verdicts.wrote.generation(); after <= before {
		t.Errorf("Reserve returned before its booking was written (writes %d, before it %d)", after, before)
	}
}
