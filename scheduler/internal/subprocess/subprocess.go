// Package subprocess runs the binaries the e2e test and the scheduler_perf
// harness drive (extender, agent, kube-scheduler), each with its stdout and
// stderr in one log file, killed if the Go process dies.
package subprocess

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Process is one started binary.
type Process struct {
	Name    string
	LogPath string
	Cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// Start runs bin with args, writing its output to logPath.
func Start(name, logPath, bin string, args ...string) (*Process, error) {
	if _, err := exec.LookPath(bin); err != nil { // a path, or a name on PATH
		return nil, fmt.Errorf("%s: binary %s: %w", name, bin, err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the caller
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited says whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGCONT (in case it was paused) and SIGTERM, and waits up to
// grace before SIGKILL; it says whether it had to kill. Idempotent.
func (p *Process) Stop(grace time.Duration) (killed bool) {
	if p.Exited() {
		return false
	}
	_ = p.Cmd.Process.Signal(syscall.SIGCONT)
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.done
		return true
	}
}

// WaitForLog returns the submatches of re's first match in the log, or an
// error (with the log's last lines) when the process exits first or timeout
// passes.
func (p *Process) WaitForLog(re *regexp.Regexp, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		data, _ := os.ReadFile(p.LogPath)
		if m := re.FindStringSubmatch(string(data)); m != nil {
			return m, nil
		}
		if p.Exited() {
			return nil, fmt.Errorf("%s exited (%v) before logging %q:\n%s", p.Name, p.err, re, Tail(p.LogPath, 40))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not log %q within %v:\n%s", p.Name, re, timeout, Tail(p.LogPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Tail is the last lines of a file, or the error reading it.
func Tail(path string, lines int) string {
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
