package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is one subprocess of the test (extender, agent, kube-scheduler)
// with its stdout and stderr in one log file; the log's tail is printed when
// the test fails.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

func startProcess(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: binary %s: %v (build it first: make build, make e2e)", name, bin, err)
	}
	logPath := filepath.Join(logDir(t), fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("--- %s log (%s), last lines:\n%s", name, logPath, tail(logPath, 40))
		}
	})
	return p
}

// stop sends SIGTERM (SIGCONT first, in case it was paused) and waits up to
// 10 s before SIGKILL. Idempotent.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Logf("%s ignored SIGTERM for 10 s; killing it", p.name)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// signal sends s; for SIGSTOP it returns only once every thread of the
// process is stopped (state T in /proc), so that nothing it was doing when
// the signal came can still answer a request afterwards.
func (p *process) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		t.Fatalf("%s: signal %v: %v", p.name, s, err)
	}
	if s != syscall.SIGSTOP {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for !allThreadsStopped(p.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not every thread stopped 10 s after SIGSTOP", p.name)
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
	deadline := time.Now().Add(timeout)
	for {
		data, _ := os.ReadFile(p.logPath)
		if m := re.FindStringSubmatch(string(data)); m != nil {
			return m
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before logging %q:\n%s", p.name, p.err, re, tail(p.logPath, 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %v:\n%s", p.name, re, timeout, tail(p.logPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
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
