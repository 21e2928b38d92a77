package perf

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a subprocess of the benchmark (extender, agent) with its stdout
// and stderr in one log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

func startProcess(name, logPath, bin string, args ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to 10 s before SIGKILL. Idempotent.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// cpuSeconds is the user + system CPU time the process has used so far
// (/proc/PID/stat), or -1 when it cannot be read.
func (p *process) cpuSeconds() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	return cpuSecondsFromStat(string(data))
}

// cpuSecondsFromStat reads utime + stime (fields 14 and 15) of a
// /proc/PID/stat line; the command name (field 2) may hold spaces, so fields
// are counted from the last ')'. Clock ticks are USER_HZ, 100 on Linux.
func cpuSecondsFromStat(stat string) float64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(stat[i+1:]) // fields[0] is field 3 (state)
	if len(fields) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (utime + stime) / 100
}

// waitForLog returns the submatches of re's first match in the log, or an
// error when the process exits first or timeout passes.
func (p *process) waitForLog(re *regexp.Regexp, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		data, _ := os.ReadFile(p.logPath)
		if m := re.FindStringSubmatch(string(data)); m != nil {
			return m, nil
		}
		if p.exited() {
			return nil, fmt.Errorf("%s exited (%v) before logging %q:\n%s", p.name, p.err, re, tail(p.logPath, 20))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not log %q within %v:\n%s", p.name, re, timeout, tail(p.logPath, 20))
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
