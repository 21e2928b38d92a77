package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"neighborly.dev/scheduler/internal/subprocess"
)

// process is one subprocess of the test (extender, agent, kube-scheduler)
// with its stdout and stderr in one log file; the log's tail is printed when
// the test fails.
type process struct{ *subprocess.Process }

func startProcess(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(logDir(t), fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))
	sp, err := subprocess.Start(name, logPath, bin, args...)
	if err != nil {
		t.Fatalf("%v (build it first: make build, make e2e)", err)
	}
	p := &process{sp}
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("--- %s log (%s), last lines:\n%s", name, logPath, subprocess.Tail(logPath, 40))
		}
	})
	return p
}

// stop sends SIGTERM (SIGCONT first, in case it was paused) and waits up to
// 10 s before SIGKILL. Idempotent.
func (p *process) stop(t *testing.T) {
	if p.Stop(10 * time.Second) {
		t.Logf("%s ignored SIGTERM for 10 s; killed it", p.Name)
	}
}

// signal sends s; for SIGSTOP it returns only once every thread of the
// process is stopped (state T in /proc), so that nothing it was doing when
// the signal came can still answer a request afterwards.
func (p *process) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(s); err != nil {
		t.Fatalf("%s: signal %v: %v", p.Name, s, err)
	}
	if s != syscall.SIGSTOP {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for !allThreadsStopped(p.Cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not every thread stopped 10 s after SIGSTOP", p.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allThreadsStopped(pid int) bool {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false
	}
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		// "pid (comm) S ...": the state follows the last ')'.
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		if fields := strings.Fields(rest); len(fields) == 0 || fields[0] != "T" {
			return false
		}
	}
	return true
}

// waitForLog returns the first submatch of re in the process's log, failing
// the test if the process exits first or timeout passes.
func (p *process) waitForLog(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	m, err := p.WaitForLog(re, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// logDir keeps subprocess logs: $E2E_ARTIFACTS if set (CI), else a temp dir.
func logDir(t *testing.T) string {
	if dir := os.Getenv("E2E_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// freePort returns a loopback port that was free a moment ago; used where a
// process must come back on the same address after a restart.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
