#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The real binaries' /metrics against the conventions (docs/metrics.md).

Starts the real neighborly-extender twice on loopback (metrics.perNodeSeries
true, and false), the real agent simulating test/testdata/scenarios/two-nodes.yaml
into both, and the real agent measuring a captured fixture host (pods, resctrl)
into the first; sends /filter and /prioritize; scrapes every /metrics, and:

  * pipes each page through `promtool check metrics` (format and lint: HELP,
    _total on counters, base units, histogram naming), failing on any output;
  * checks the names against the project's own rules: `utilization`, no
    millicores or milliseconds, no rate exported as a gauge (*_per_second)
    but the peak-bandwidth capacity;
  * checks that every metric the Grafana dashboard, the alert rules (deploy/
    and the chart's copy) and the PrometheusRule use is exported, and that
    every exported family is listed in docs/metrics.md;
  * checks the perNodeSeries switch: off leaves no neighborly_node_* series on
    the extender and keeps the neighborly_fleet_* aggregates.

Run by ctest (metrics_conventions) and, for the dashboard and alert names, by
scripts/chart_test.py, which imports scrape() from here. Exit 77 (ctest: skipped)
only when promtool is missing.

Usage: metrics_conventions.py --build build/default
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "test", "testdata", "scenarios", "two-nodes.yaml")
FIXTURE_HOST = os.path.join(ROOT, "test", "testdata", "hosts", "intel-mbm-v2-systemd-containerd")
SKIP = 77

# Files that name metrics, and whether each must use only exported names.
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "neighborly-dashboard.json")
RULE_FILES = [
    os.path.join(ROOT, "deploy", "alerts", "neighborly-rules.yaml"),
    os.path.join(ROOT, "deploy", "alerts", "neighborly-prometheusrule.yaml"),
    os.path.join(ROOT, "charts", "neighborly", "files", "neighborly-rules.yaml"),
]
METRICS_DOC = os.path.join(ROOT, "docs", "metrics.md")

# Gauges that are rates by name but capacities in fact.
RATE_GAUGES_ALLOWED = {"neighborly_node_peak_membw_bytes_per_second"}

NAME = re.compile(r"\b(?:neighborly|process)_[a-z0-9_]+")


class Process:
    """A child process whose stderr and stdout lines are collected."""

    def __init__(self, args):
        self.args = args
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace")
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, pattern, timeout=60):
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    m = regex.search(line)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise RuntimeError(f"{os.path.basename(self.args[0])} never printed "
                                       f"/{pattern}/:\n" + "\n".join(self.lines[-30:]))
                self.cond.wait(min(left, 0.2))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)


def http(method, url, body=None):
    data = body.encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


def wait_for_nodes(http_address, names, timeout=60):
    deadline = time.monotonic() + timeout
    seen = set()
    while time.monotonic() < deadline:
        try:
            seen = {n["name"] for n in json.loads(http("GET", f"http://{http_address}/v1/nodes"))}
        except OSError:
            pass
        if names <= seen:
            return
        time.sleep(0.1)
    raise RuntimeError(f"nodes {sorted(names - seen)} never reached the extender at {http_address}")


def scrape(build):
    """Runs the binaries and returns {page name: /metrics text}: extender
    (per-node series on), extender-fleet-only (off), agent-simulated,
    agent-host (the fixture host)."""
    extender_bin = os.path.join(build, "extender", "neighborly-extender")
    agent_bin = os.path.join(build, "node-agent", "neighborly-agent")
    for b in (extender_bin, agent_bin):
        if not os.access(b, os.X_OK):
            raise RuntimeError(f"{b} is not built (make build, or --build DIR)")
    procs = []
    tmp = tempfile.mkdtemp(prefix="neighborly-metrics-")
    try:
        extenders = []
        for per_node in ("true", "false"):
            config = os.path.join(tmp, f"extender-{per_node}.yaml")
            with open(config, "w", encoding="utf-8") as f:
                f.write(f"metrics:\n  perNodeSeries: {per_node}\n")
            p = Process([extender_bin, "--config", config, "--http-address", "127.0.0.1:0",
                         "--grpc-address", "127.0.0.1:0", "--grpc-insecure-plaintext",
                         "--log-level", "warn"])
            procs.append(p)
            m = p.wait_for(r"listening http=(\S+) grpc=(\S+)")
            extenders.append((m.group(1), m.group(2)))
        (http_on, grpc_on), (http_off, grpc_off) = extenders

        simulated = Process([agent_bin, "--simulate", SCENARIO, "--extender",
                             f"{grpc_on},{grpc_off}", "--interval", "200ms",
                             "--metrics-address", "127.0.0.1:0", "--insecure-plaintext"])
        procs.append(simulated)
        host_root = os.path.join(tmp, "host")
        shutil.copytree(FIXTURE_HOST, host_root, symlinks=True)
        host = Process([agent_bin, "--host-root", host_root, "--node-name", "fixture-node",
                        "--extender", grpc_on, "--interval", "200ms", "--metrics-address",
                        "127.0.0.1:0", "--insecure-plaintext", "--peak-membw-bytes-per-second",
                        "80G"])
        procs.append(host)

        wait_for_nodes(http_on, {"small-1", "small-2", "fixture-node"})
        wait_for_nodes(http_off, {"small-1", "small-2"})
        request = json.dumps({"Pod": {"metadata": {"name": "p", "namespace": "default",
                                                   "uid": "u-metrics"}},
                              "NodeNames": ["small-1", "small-2", "fixture-node"]})
        for address in (http_on, http_off):
            http("POST", f"http://{address}/filter", request)
            http("POST", f"http://{address}/prioritize", request)
        # The host agent's counters need two windows; its server starts with the first.
        sim_metrics = simulated.wait_for(r"metrics on http://(\S+?)/metrics").group(1)
        host_metrics = host.wait_for(r"metrics on http://(\S+?)/metrics").group(1)
        time.sleep(0.5)
        return {
            "extender": http("GET", f"http://{http_on}/metrics"),
            "extender-fleet-only": http("GET", f"http://{http_off}/metrics"),
            "agent-simulated": http("GET", f"http://{sim_metrics}/metrics"),
            "agent-host": http("GET", f"http://{host_metrics}/metrics"),
        }
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def families(text):
    """{family name: type} from the # TYPE lines."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def exported_names(pages):
    """Every family and every series name (histograms' _bucket, _sum, _count)."""
    names = set()
    for text in pages.values():
        for name, kind in families(text).items():
            names.add(name)
            if kind == "histogram":
                names |= {name + s for s in ("_bucket", "_sum", "_count")}
    return names


def used_names(text):
    return set(NAME.findall(text))


def dashboard_expressions():
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    return "\n".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))


def names_used_by_dashboard_and_rules():
    """{file: names} of the metric names the dashboard's queries and the rule
    files' expressions use."""
    out = {DASHBOARD: used_names(dashboard_expressions())}
    for path in RULE_FILES:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        groups = doc["spec"]["groups"] if doc.get("kind") == "PrometheusRule" else doc["groups"]
        out[path] = used_names("\n".join(r["expr"] for g in groups for r in g["rules"]))
    return out


def unexported_uses(pages):
    """Problems: names the dashboard or the rules use that no page exports."""
    exported = exported_names(pages)
    problems = []
    for path, names in names_used_by_dashboard_and_rules().items():
        if not names:
            problems.append(f"{os.path.relpath(path, ROOT)}: no metric names found")
        for name in sorted(names - exported):
            problems.append(f"{os.path.relpath(path, ROOT)} uses {name}, which no /metrics exports")
    return problems


def promtool_problems(pages):
    promtool = shutil.which("promtool")
    problems = []
    for page, text in pages.items():
        out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                             text=True)
        if out.returncode != 0 or out.stdout.strip() or out.stderr.strip():
            problems.append(f"promtool check metrics ({page}): rc {out.returncode}\n"
                            f"{out.stdout}{out.stderr}")
    return problems


def naming_problems(pages):
    problems = []
    for page, text in pages.items():
        for name, kind in families(text).items():
            if "utilisation" in name:
                problems.append(f"{page}: {name}: spelled utilization in metric names")
            if re.search(r"(milli|micro|nano)(seconds|cores|bytes)|(kilo|mega|giga)bytes|percent",
                         name):
                problems.append(f"{page}: {name}: not in a base unit")
            if name.endswith("_per_second") and name not in RATE_GAUGES_ALLOWED:
                problems.append(f"{page}: {name}: a rate as a gauge; export a counter of the "
                                f"quantity (rate() derives the rate and survives scrape gaps)")
            if kind == "counter" and not name.endswith("_total"):
                problems.append(f"{page}: counter {name} does not end in _total")
    return problems


def documentation_problems(pages):
    with open(METRICS_DOC, encoding="utf-8") as f:
        documented = used_names(f.read())
    problems = []
    for page, text in pages.items():
        for name in sorted(families(text)):
            if name not in documented:
                problems.append(f"{page}: {name} is exported but not listed in docs/metrics.md")
    return problems


def switch_problems(pages):
    problems = []
    on, off = families(pages["extender"]), families(pages["extender-fleet-only"])
    per_node_on = {n for n in on if n.startswith("neighborly_node_")}
    per_node_off = {n for n in off if n.startswith("neighborly_node_")}
    if len(per_node_on) < 7:
        problems.append(f"perNodeSeries true: only {sorted(per_node_on)} per-node families")
    if per_node_off:
        problems.append(f"perNodeSeries false still exports {sorted(per_node_off)}")
    fleet_on = {n for n in on if n.startswith("neighborly_fleet_")}
    fleet_off = {n for n in off if n.startswith("neighborly_fleet_")}
    if not fleet_on or fleet_on != fleet_off:
        problems.append(f"fleet aggregates differ: on {sorted(fleet_on)}, off {sorted(fleet_off)}")
    m = re.search(r'^neighborly_fleet_nodes\{telemetry="fresh"\} (\S+)$',
                  pages["extender-fleet-only"], re.M)
    if not m or float(m.group(1)) != 2:
        problems.append("perNodeSeries false: neighborly_fleet_nodes{telemetry=\"fresh\"} is not 2 "
                        "(the two simulated nodes)")
    return problems


def coverage_problems(pages):
    """The pages checked hold what they should, so the checks above saw it."""
    expected = {
        "extender": {"neighborly_extender_http_request_duration_seconds",
                     "neighborly_extender_http_requests_total", "neighborly_decisions_total",
                     "neighborly_node_membw_utilization_ratio", "neighborly_fleet_nodes",
                     "neighborly_extender_build_info", "process_resident_memory_bytes"},
        "agent-simulated": {"neighborly_agent_stream_connected", "neighborly_agent_acks_total",
                            "neighborly_agent_build_info", "process_cpu_seconds_total"},
        "agent-host": {"neighborly_agent_windows_total", "neighborly_agent_sample_duration_seconds",
                       "neighborly_agent_capability_available", "neighborly_pod_cpu_seconds_total",
                       "neighborly_agent_build_info"},
    }
    problems = []
    for page, names in expected.items():
        missing = sorted(names - set(families(pages[page])))
        if missing:
            problems.append(f"{page}: expected families missing: {missing}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "default"),
                        help="the CMake build directory holding the binaries")
    parser.add_argument("--save", help="write each scraped page to DIR/<page>.prom")
    args = parser.parse_args()
    if not shutil.which("promtool"):
        print("metrics_conventions: SKIPPED: promtool is not installed (Debian package "
              "prometheus; scripts/setup.sh installs it)")
        return SKIP
    pages = scrape(args.build)
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for page, text in pages.items():
            with open(os.path.join(args.save, f"{page}.prom"), "w", encoding="utf-8") as f:
                f.write(text)
    problems = (promtool_problems(pages) + naming_problems(pages) + unexported_uses(pages)
                + documentation_problems(pages) + switch_problems(pages) + coverage_problems(pages))
    for page, text in pages.items():
        print(f"metrics_conventions: {page}: {len(families(text))} families, "
              f"{sum(1 for line in text.splitlines() if line and not line.startswith('#'))} series")
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        return 1
    print("metrics_conventions: ok (promtool, naming, dashboard and alerts, docs, perNodeSeries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
