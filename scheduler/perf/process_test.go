package perf

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"neighborly.dev/scheduler/internal/subprocess"
)

// process is a subprocess of the benchmark (extender, agent) with its stdout
// and stderr in one log file.
type process struct{ *subprocess.Process }

func startProcess(name, logPath, bin string, args ...string) (*process, error) {
	sp, err := subprocess.Start(name, logPath, bin, args...)
	if err != nil {
		return nil, err
	}
	return &process{sp}, nil
}

func (p *process) exited() bool { return p.Exited() }

// stop sends SIGTERM and waits up to 10 s before SIGKILL. Idempotent.
func (p *process) stop() { p.Stop(10 * time.Second) }

// cpuSeconds is the user + system CPU time the process has used so far
// (/proc/PID/stat), or -1 when it cannot be read.
func (p *process) cpuSeconds() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Cmd.Process.Pid))
	if err != nil {
		return -1
	}
	return cpuSecondsFromStat(string(data))
}

// selfCPUSeconds is cpuSeconds of this process (scheduler_perf's: kube-scheduler,
// the API server and the harness), or -1.
func selfCPUSeconds() float64 {
	data, err := os.ReadFile("/proc/self/stat")
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

func (p *process) waitForLog(re *regexp.Regexp, timeout time.Duration) ([]string, error) {
	return p.WaitForLog(re, timeout)
}

func tail(path string, lines int) string { return subprocess.Tail(path, lines) }
