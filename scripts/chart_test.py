#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of charts/neighborly and deploy/ (run by scripts/chart-test.sh).

Renders the chart with `helm template` for each mode and option, and asserts on
the rendered objects: the scheduler configuration, the agent's privileges and
mounts, the wiring between Services, pods, ConfigMaps and accounts. Checks that
the values schema refuses unknown or bad values, that README.md and
values.schema.json are generated from values.yaml, that the alert rules pass
`promtool check rules`, that every metric the dashboard and the alert rules use
is exported by the real binaries of the build (--build), and that deploy/
agrees with the chart.

Prints one line per check and closes with `chart-test: N passed, N failed`;
exits 1 when any check failed.
"""

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# NEIGHBORLY_CHART_DIR: test another copy of the chart (e.g. an older commit's,
# to see which checks it fails).
CHART = os.environ.get("NEIGHBORLY_CHART_DIR") or os.path.join(ROOT, "charts", "neighborly")
DEPLOY = os.path.join(ROOT, "deploy")
RELEASE = "neighborly"
NAMESPACE = "neighborly"

HELM = "helm"
BUILD = os.path.join(ROOT, "build", "default")  # --build: the binaries the metric checks run
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


class RenderError(Exception):
    pass


def helm(*args):
    return subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)


def render(*sets, release=RELEASE, namespace=NAMESPACE, kube_version=None):
    """Renders the chart; `sets` are `key=value` strings for --set, or
    `json:key=value` for --set-json (Helm's --set makes 0.7 a string);
    `kube_version` the cluster's (helm template's own default otherwise)."""
    args = ["template", release, CHART, "--namespace", namespace]
    if kube_version:
        args += ["--kube-version", kube_version]
    for s in sets:
        if s.startswith("json:"):
            args += ["--set-json", s[len("json:"):]]
        else:
            args += ["--set", s]
    out = helm(*args)
    if out.returncode != 0:
        raise RenderError(f"helm template {' '.join(args[3:])} failed: {out.stderr.strip()}")
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    return Objects(docs)


def render_notes(*sets):
    """NOTES.txt as `helm install` prints it (helm template skips it): the chart
    copied with NOTES.txt turned into a named template rendered into an object."""
    with tempfile.TemporaryDirectory() as tmp:
        chart = os.path.join(tmp, "neighborly")
        shutil.copytree(CHART, chart)
        notes = os.path.join(chart, "templates", "NOTES.txt")
        with open(notes, encoding="utf-8") as f:
            text = f.read()
        os.remove(notes)
        with open(os.path.join(chart, "templates", "_notes_under_test.tpl"), "w", encoding="utf-8") as f:
            f.write('{{- define "notes.under.test" -}}\n' + text + "\n{{- end -}}\n")
        with open(os.path.join(chart, "templates", "notes-under-test.yaml"), "w", encoding="utf-8") as f:
            f.write('kind: Notes\nmetadata: {name: notes}\ntext: {{ include "notes.under.test" . | toJson }}\n')
        args = ["template", RELEASE, chart, "--namespace", NAMESPACE,
                "--show-only", "templates/notes-under-test.yaml"]
        for s in sets:
            args += ["--set", s]
        out = helm(*args)
        expect(out.returncode == 0, f"rendering NOTES.txt: {out.stderr.strip()}")
        return yaml.safe_load(out.stdout)["text"]


class Objects:
    def __init__(self, docs):
        self.docs = docs

    def of(self, kind):
        return [d for d in self.docs if d["kind"] == kind]

    def get(self, kind, name):
        found = [d for d in self.of(kind) if d["metadata"]["name"] == name]
        assert found, f"no {kind} named {name} among {self.names()}"
        assert len(found) == 1, f"{len(found)} objects {kind}/{name}"
        return found[0]

    def has(self, kind, name=None):
        return any(name is None or d["metadata"]["name"] == name for d in self.of(kind))

    def names(self):
        return sorted(f"{d['kind']}/{d['metadata']['name']}" for d in self.docs)


def name(component, release=RELEASE):
    return f"{release}-{component}" if "neighborly" in release else f"{release}-neighborly-{component}"


def container(workload, cname):
    spec = workload["spec"]["template"]["spec"]
    for c in spec["containers"]:
        if c["name"] == cname:
            return c
    raise AssertionError(f"{workload['metadata']['name']} has no container {cname}")


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def eq(actual, expected, what):
    expect(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


def duration_seconds(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", str(text))
    expect(m, f"not a duration: {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def load_yaml_file(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def scheduler_config(objs, release=RELEASE):
    cm = objs.get("ConfigMap", name("scheduler", release))
    expect("scheduler-config.yaml" in cm["data"], "scheduler ConfigMap lacks scheduler-config.yaml")
    return yaml.safe_load(cm["data"]["scheduler-config.yaml"])


def check_extender_entry(entry, url):
    eq(entry["urlPrefix"], url, "extender urlPrefix")
    eq(entry["filterVerb"], "filter", "filterVerb")
    eq(entry["prioritizeVerb"], "prioritize", "prioritizeVerb")
    expect(isinstance(entry["weight"], int) and entry["weight"] > 0,
           f"weight must be a positive integer with prioritizeVerb, got {entry['weight']!r}")
    expect(entry["nodeCacheCapable"] is True, "nodeCacheCapable must be true")
    expect(entry["ignorable"] is True, "ignorable must be true: an extender outage must not block scheduling")
    expect(duration_seconds(entry["httpTimeout"]) < 1, f"httpTimeout {entry['httpTimeout']} is not well under 1s")
    expect("bindVerb" not in entry or not entry["bindVerb"], "bindVerb must not be set")
    known = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
             "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
             "ignorable"}
    unknown = set(entry) - known
    expect(not unknown, f"fields unknown to kube-scheduler's strict decoder: {sorted(unknown)}")


def chart_app_version():
    with open(os.path.join(CHART, "Chart.yaml"), encoding="utf-8") as f:
        return str(yaml.safe_load(f)["appVersion"])


def pod_labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def workloads(objs):
    return objs.of("Deployment") + objs.of("DaemonSet")


# ---------------------------------------------------------------------------
# Chart meta

@check
def lint_strict():
    for sets in ([], ["mode=extender-only"], ["agent.privileged=true", "metrics.prometheusRule.enabled=true",
                                             "metrics.serviceMonitor.enabled=true"]):
        args = ["lint", "--strict", CHART]
        for s in sets:
            args += ["--set", s]
        out = helm(*args)
        expect(out.returncode == 0, f"helm lint --strict {' '.join(sets)}:\n{out.stdout}{out.stderr}")


@check
def readme_and_schema_generated_from_values():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "chart-docs.py"), "--check"],
                         capture_output=True, text=True)
    expect(out.returncode == 0, out.stderr.strip())


@check
def schema_closes_every_object():
    with open(os.path.join(CHART, "values.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    open_objects = []

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                if node.get("additionalProperties") is not False:
                    open_objects.append(path or "(root)")
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(schema, "")
    expect(not open_objects, f"objects with properties but without additionalProperties: false: {open_objects}")


# ---------------------------------------------------------------------------
# Schema refusals

REFUSALS = [
    (["bogus=1"], "Additional property bogus is not allowed"),
    (["extender.bogus=1"], "Additional property bogus is not allowed"),
    (["agent.resources.requests.cpu=1", "agent.resources.bogus.cpu=1"], "bogus"),
    (["extender.config.model.bogusThreshold=1"], "bogusThreshold"),
    (["mode=tertiary-scheduler"], "mode"),
    (["agent.rdtBackend=msr"], "rdtBackend"),
    (["json:extender.config.model.membwHeadroom=1.5"], "membwHeadroom: Must be less than or equal to 1"),
    (["schedulerExtender.weight=0"], "weight"),
    (["schedulerExtender.httpTimeout=soon"], "httpTimeout"),
    (["extender.replicaCount=two"], "replicaCount"),
    (["scheduler.leaderElection.enabled=false"], "leaderElection"),
    (['json:agent.peakMembw.nodeTypes=[{"name":"Big Box","nodeSelector":{"a":"b"}}]'], "name"),
    (['json:agent.peakMembw.nodeTypes=[{"name":"big","nodeSelector":{}}]'], "nodeSelector"),
]


@check
def schema_refuses_bad_values():
    # Control: a valid override renders, so the refusals below are the schema's.
    render("extender.replicaCount=3", "agent.rdtBackend=none", "json:extender.config.model.membwHeadroom=0.9")
    for sets, fragment in REFUSALS:
        try:
            render(*sets)
        except RenderError as e:
            expect(fragment in str(e), f"--set {' '.join(sets)} failed without naming {fragment!r}: {e}")
            continue
        raise AssertionError(f"--set {' '.join(sets)} was accepted; the chart must refuse it")


# ---------------------------------------------------------------------------
# Default mode: second scheduler

@check
def second_scheduler_config():
    objs = render()
    cfg = scheduler_config(objs)
    eq(cfg["apiVersion"], "kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration apiVersion")
    eq(cfg["kind"], "KubeSchedulerConfiguration", "kind")
    eq([p["schedulerName"] for p in cfg["profiles"]], ["neighborly-scheduler"], "profiles")
    le = cfg["leaderElection"]
    expect(le["leaderElect"] is True, "leader election must be on with 2 replicas")
    eq(le["resourceName"], "neighborly-scheduler", "lease name")
    eq(le["resourceNamespace"], NAMESPACE, "lease namespace")
    eq(len(cfg["extenders"]), 1, "number of extenders")
    url = f"https://{name('extender')}.{NAMESPACE}.svc:8888"
    check_extender_entry(cfg["extenders"][0], url)
    entry = cfg["extenders"][0]
    expect(entry["enableHTTPS"] is True, "the scheduler must call the extender over HTTPS")
    eq(entry["tlsConfig"], {"caFile": "/etc/neighborly-tls/ca.crt", "certFile": "/etc/neighborly-tls/tls.crt",
                            "keyFile": "/etc/neighborly-tls/tls.key"}, "tlsConfig")
    svc = objs.get("Service", name("extender"))
    eq({p["name"]: p["port"] for p in svc["spec"]["ports"]}, {"http": 8888, "grpc": 9090, "operator": 8889,
                                                              "placement": 9091},
       "extender Service ports")


@check
def second_scheduler_deployment_reads_its_config():
    objs = render()
    dep = objs.get("Deployment", name("scheduler"))
    eq(dep["spec"]["replicas"], 2, "scheduler replicas")
    c = container(dep, "kube-scheduler")
    # helm template's default cluster is Kubernetes 1.32 (Helm 3.17).
    eq(c["image"], "registry.k8s.io/kube-scheduler:v1.32.5", "scheduler image")
    cfg_flags = [a for a in c["command"] if a.startswith("--config=")]
    eq(len(cfg_flags), 1, "--config flags")
    path = cfg_flags[0].split("=", 1)[1]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    mount_dir, key = os.path.split(path)
    expect(mount_dir in mounts, f"{path} is not under a mounted volume ({mounts})")
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    eq(volumes[mounts[mount_dir]]["configMap"]["name"], name("scheduler"), "config volume ConfigMap")
    expect(key in objs.get("ConfigMap", name("scheduler"))["data"], f"ConfigMap lacks key {key}")
    eq(c["livenessProbe"]["httpGet"]["path"], "/healthz", "scheduler liveness path")
    eq(c["livenessProbe"]["httpGet"]["scheme"], "HTTPS", "scheduler liveness scheme")
    eq(dep["spec"]["template"]["spec"]["serviceAccountName"], name("scheduler"), "scheduler service account")


@check
def second_scheduler_rbac():
    objs = render()
    sa = name("scheduler")
    bound = {}
    for b in objs.of("ClusterRoleBinding"):
        subjects = [(s["kind"], s["name"], s.get("namespace")) for s in b["subjects"]]
        expect(("ServiceAccount", sa, NAMESPACE) in subjects, f"{b['metadata']['name']} does not bind {sa}")
        bound[b["roleRef"]["name"]] = b
    for role in ("system:kube-scheduler", "system:volume-scheduler", sa):
        expect(role in bound, f"the scheduler's account is not bound to ClusterRole {role}")
    role = objs.get("Role", f"{sa}-leader-election")
    lease_rules = [r for r in role["rules"] if "leases" in r["resources"]]
    expect(any("create" in r["verbs"] for r in lease_rules), "leader election cannot create its Lease")
    expect(any("update" in r["verbs"] and r.get("resourceNames") == ["neighborly-scheduler"]
               for r in lease_rules), "leader election cannot update the Lease neighborly-scheduler")
    rb = objs.get("RoleBinding", f"{sa}-leader-election")
    eq(rb["roleRef"]["name"], role["metadata"]["name"], "leader-election RoleBinding roleRef")
    auth = objs.get("RoleBinding", f"{sa}-auth-reader")
    eq(auth["metadata"]["namespace"], "kube-system", "auth reader namespace")
    eq(auth["roleRef"]["name"], "extension-apiserver-authentication-reader", "auth reader role")


@check
def deploy_scheduler_config_matches_chart():
    cfg = scheduler_config(render())
    deployed = load_yaml_file(os.path.join(DEPLOY, "scheduler", "scheduler-config.yaml"))
    eq(len(deployed), 1, "documents in deploy/scheduler/scheduler-config.yaml")
    eq(deployed[0], cfg, "deploy/scheduler/scheduler-config.yaml vs the chart's rendering")


# ---------------------------------------------------------------------------
# Agent

@check
def agent_daemonset_least_privilege():
    objs = render()
    ds = objs.get("DaemonSet", name("agent"))
    spec = ds["spec"]["template"]["spec"]
    expect(spec.get("hostPID") is True, "agent needs hostPID for resctrl tasks")
    expect(not spec.get("hostNetwork"), "agent must not use host network")
    expect(spec.get("automountServiceAccountToken") is False, "agent must not mount an API token")
    eq(spec["tolerations"], [{"operator": "Exists"}], "agent tolerations (run on every node)")
    c = container(ds, "agent")
    sc = c["securityContext"]
    expect(sc.get("privileged") is False, "agent must not be privileged by default")
    expect(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation must be false")
    eq(sc["capabilities"]["drop"], ["ALL"], "dropped capabilities")
    eq(sc["capabilities"]["add"], ["PERFMON"], "added capabilities")
    eq(sc["seccompProfile"]["type"], "RuntimeDefault", "seccomp profile")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    host = mounts["/host"]
    expect(host.get("readOnly") is True, "the host must be mounted read-only at /host")
    eq(volumes[host["name"]]["hostPath"]["path"], "/", "/host volume")
    resctrl = mounts["/host/sys/fs/resctrl"]
    expect(not resctrl.get("readOnly"), "resctrl must be writable")
    eq(volumes[resctrl["name"]]["hostPath"]["path"], "/sys/fs/resctrl", "resctrl volume")
    writable = [p for p, m in mounts.items() if not m.get("readOnly")
                and "hostPath" in volumes[m["name"]]]
    eq(writable, ["/host/sys/fs/resctrl"], "writable host paths")
    for r in ("requests", "limits"):
        expect(set(c["resources"].get(r, {})) >= {"cpu", "memory"}, f"agent {r} lack cpu or memory")


@check
def agent_flags_and_probes():
    objs = render()
    ds = objs.get("DaemonSet", name("agent"))
    c = container(ds, "agent")
    eq(c["command"], ["neighborly-agent"], "agent command")
    headless = objs.get("Service", name("extender-agents"))
    eq(headless["spec"]["clusterIP"], "None", "agents' Service must be headless")
    expect(headless["spec"].get("publishNotReadyAddresses") is True,
           "agents must reach extender replicas before they are ready")
    expected = [
        "--node-name=$(NODE_NAME)",
        f"--extender={name('extender-agents')}.{NAMESPACE}.svc:9090",
        "--interval=1s",
        "--host-root=/host",
        "--metrics-address=0.0.0.0:9101",
        "--rdt-backend=resctrl",
        "--peak-membw-measure=cached",
        "--peak-membw-cache=/var/lib/neighborly/peak-membw.json",
        "--tls-ca=/etc/neighborly-tls/ca.crt",
        "--tls-cert=/etc/neighborly-tls/tls.crt",
        "--tls-key=/etc/neighborly-tls/tls.key",
        f"--tls-server-name={name('extender-agents')}.{NAMESPACE}.svc",
        "--identity-token-file=/var/run/secrets/neighborly/token",
    ]
    eq(c["args"], expected, "agent args")
    env = {e["name"]: e for e in c["env"]}
    eq(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName", "NODE_NAME source")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    eq(ports, {"metrics": 9101}, "agent ports")
    for probe in ("livenessProbe", "readinessProbe"):
        eq(c[probe]["httpGet"], {"path": "/healthz", "port": "metrics"}, f"agent {probe}")


@check
def agent_peak_membw_calibration():
    ds = render().get("DaemonSet", name("agent"))
    spec = ds["spec"]["template"]["spec"]
    init = {c["name"]: c for c in spec["initContainers"]}["calibrate"]
    eq(init["args"], ["--calibrate", "--host-root=/host",
                      "--peak-membw-cache=/var/lib/neighborly/peak-membw.json",
                      "--peak-membw-measure-seconds=2s", "--peak-membw-measure-max-bytes=1Gi"],
       "calibrate args")
    expect("cpu" not in init["resources"]["limits"], "a CPU quota would throttle the measurement")
    eq(init["securityContext"]["capabilities"], {"drop": ["ALL"]}, "calibrate capabilities")
    volumes = {v["name"]: v for v in spec["volumes"]}
    for c, read_only in ((init, False), (container(ds, "agent"), True)):
        m = {m["mountPath"]: m for m in c["volumeMounts"]}["/host/var/lib/neighborly"]
        eq(bool(m.get("readOnly")), read_only, f"{c['name']} cache mount read-only")
        eq(volumes[m["name"]]["hostPath"], {"path": "/var/lib/neighborly", "type": "DirectoryOrCreate"},
           "cache volume")
    off = render("agent.peakMembw.calibration.enabled=false").get("DaemonSet", name("agent"))
    expect("initContainers" not in off["spec"]["template"]["spec"], "calibration off: no init container")
    expect("--peak-membw-measure=off" in container(off, "agent")["args"], "calibration off: agent flag")


@check
def agent_peak_membw_node_types():
    types = ('json:agent.peakMembw.nodeTypes=[{"name":"spr","nodeSelector":{"type":"spr"},'
             '"bytesPerSecond":"230G"},{"name":"genoa","nodeSelector":{"cpu":"genoa","pool":"b"}}]')
    objs = render(types, "agent.peakMembw.bytesPerSecond=60G", "agent.nodeSelector.os=linux")
    base, spr, genoa = (objs.get("DaemonSet", n) for n in (name("agent"), name("agent-spr"),
                                                         name("agent-genoa")))
    rdt = "feature.node.kubernetes.io/cpu-rdt.RDTMON"  # the resctrl split (its own check)
    def terms(ds):
        a = ds["spec"]["template"]["spec"].get("affinity", {})
        out = [sorted((e["key"], e["values"][0]) for e in t["matchExpressions"] if e["key"] != rdt)
               for t in a.get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {})
               .get("nodeSelectorTerms", [])]
        return [t for t in out if t]
    # Base: not spr AND not genoa = (type!=spr AND cpu!=genoa) OR (type!=spr AND pool!=b).
    eq(terms(base), [[("cpu", "genoa"), ("type", "spr")], [("pool", "b"), ("type", "spr")]],
       "main DaemonSet keeps off every node type")
    eq(terms(spr), [], "the first type excludes nothing")
    eq(terms(genoa), [[("type", "spr")]], "a later type keeps off the earlier ones")
    eq(genoa["spec"]["template"]["spec"]["nodeSelector"], {"cpu": "genoa", "pool": "b", "os": "linux"},
       "node type selector with agent.nodeSelector")
    eq(spr["spec"]["selector"]["matchLabels"]["neighborly.io/node-type"], "spr", "own selector label")
    # Each node type is split like the main DaemonSet: nodes without RDT get a -nordt one.
    spr_nordt = objs.get("DaemonSet", name("agent-spr-nordt"))
    eq(terms(spr_nordt), [], "the -nordt twin keeps the type's (empty) exclusions")
    expect("--rdt-backend=none" in container(spr_nordt, "agent")["args"], "spr -nordt: no RDT backend")
    expect("--peak-membw-bytes-per-second=230G" in container(spr_nordt, "agent")["args"],
           "spr -nordt passes the type's figure")
    for ds, flag in ((base, "60G"), (spr, "230G")):
        expect(f"--peak-membw-bytes-per-second={flag}" in container(ds, "agent")["args"],
               f"{ds['metadata']['name']} passes its figure")
    expect(not any(a.startswith("--peak-membw-bytes") for a in container(genoa, "agent")["args"]),
           "a type without a figure calibrates")
    many = [{"name": f"t{i}", "nodeSelector": {"a": str(i), "b": str(i)}} for i in range(7)]
    try:
        render("json:agent.peakMembw.nodeTypes=" + json.dumps(many))
        raise AssertionError("128 affinity terms rendered")
    except RenderError as e:
        expect("at most 64" in str(e), f"too many terms: {e}")


@check
def agent_options():
    objs = render("agent.privileged=true")
    sc = container(objs.get("DaemonSet", name("agent")), "agent")["securityContext"]
    eq(sc, {"privileged": True}, "privileged securityContext")
    objs = render("agent.extraCapabilities={SYS_PTRACE}", "agent.rdtBackend=none",
                  "agent.resctrlNodes=none", "agent.interval=5s")
    c = container(objs.get("DaemonSet", name("agent")), "agent")
    eq(c["securityContext"]["capabilities"]["add"], ["PERFMON", "SYS_PTRACE"], "capabilities")
    expect("--rdt-backend=none" in c["args"] and "--interval=5s" in c["args"], f"args {c['args']}")
    expect(all(m["mountPath"] != "/host/sys/fs/resctrl" for m in c["volumeMounts"]),
           "resctrl mounted although resctrlNodes=none")
    objs = render("agent.enabled=false")
    expect(not objs.of("DaemonSet"), "agent.enabled=false still renders the DaemonSet")
    expect(not objs.has("ServiceAccount", name("agent")), "agent.enabled=false still renders its account")


@check
def allocation_off_by_default_and_wired():
    objs = render()
    c = container(objs.get("DaemonSet", name("agent")), "agent")
    expect("--resctrl-allocation" not in c["args"], f"allocation on by default: {c['args']}")
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    expect("allocation" not in config, f"extender config has allocation by default: {config}")
    objs = render("allocation.enabled=true", "json:allocation.batch.l3WaysFraction=0.25",
                  "allocation.batch.mbaPercent=30")
    c = container(objs.get("DaemonSet", name("agent")), "agent")
    expect("--resctrl-allocation" in c["args"], f"allocation.enabled=true: agent args {c['args']}")
    nordt = container(objs.get("DaemonSet", name("agent-nordt")), "agent")
    expect("--resctrl-allocation" not in nordt["args"], "the agent without resctrl allocates")
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    eq(config.get("allocation"),
       {"enabled": True, "batch": {"l3WaysFraction": 0.25, "mbaPercent": 30, "mbaMBps": 0}},
       "extender allocation config")
    for bad in ("json:allocation.batch.l3WaysFraction=1.5", "allocation.batch.mbaPercent=101"):
        out = helm("template", RELEASE, CHART, "--set-json" if bad.startswith("json:") else "--set",
                   bad.removeprefix("json:"))
        expect(out.returncode != 0, f"schema accepted {bad}")


# ---------------------------------------------------------------------------
# Extender

@check
def extender_deployment():
    objs = render()
    dep = objs.get("Deployment", name("extender"))
    eq(dep["spec"]["replicas"], 2, "extender replicas")
    c = container(dep, "extender")
    eq(c["command"], ["neighborly-extender"], "extender command")
    for flag in ("--config=/etc/neighborly/extender.yaml", "--http-address=0.0.0.0:8888",
                 "--grpc-address=0.0.0.0:9090", "--operator-address=0.0.0.0:8889", "--log-level=info"):
        expect(flag in c["args"], f"extender args lack {flag}: {c['args']}")
    # The probes use the operator port (no client certificate): checked in
    # chart_test_operator.py against what each port serves.
    for sets, scheme in (([], "HTTPS"), (["tls.scheduler=false"], "HTTP")):
        probe_c = container(render(*sets).get("Deployment", name("extender")), "extender")
        eq(probe_c["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "operator", "scheme": scheme},
           f"extender liveness with {sets}")
        eq(probe_c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "operator", "scheme": scheme},
           f"extender readiness with {sets}")
    for r in ("requests", "limits"):
        expect(set(c["resources"].get(r, {})) >= {"cpu", "memory"}, f"extender {r} lack cpu or memory")
    expect(c["securityContext"]["readOnlyRootFilesystem"] is True, "extender root filesystem must be read-only")
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    eq(volumes[mounts["/etc/neighborly"]]["configMap"]["name"], name("extender"), "config volume")
    expect("emptyDir" in volumes[mounts["/var/lib/neighborly"]], "state volume defaults to emptyDir")
    cm = objs.get("ConfigMap", name("extender"))
    config = yaml.safe_load(cm["data"]["extender.yaml"])
    expect(config["state"]["file"].startswith("/var/lib/neighborly/"), "state file is not on the state volume")
    eq(config["model"]["membwHeadroom"], 0.8, "default membwHeadroom")
    eq(config["model"]["labelRules"], [{"key": "workload-type", "values": ["batch", "etl"], "class": "batch"}],
       "default label rules")
    objs = render("extender.state.existingClaim=neighborly-state", "json:extender.config.model.membwHeadroom=0.7")
    dep = objs.get("Deployment", name("extender"))
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    eq(vols["state"]["persistentVolumeClaim"]["claimName"], "neighborly-state", "state claim")
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    eq(config["model"]["membwHeadroom"], 0.7, "overridden membwHeadroom")


@check
def deploy_extender_config_matches_chart():
    rendered = yaml.safe_load(render().get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    deployed = load_yaml_file(os.path.join(DEPLOY, "extender", "extender.yaml"))
    eq(deployed, [rendered], "deploy/extender/extender.yaml vs the chart's rendering")
    with open(os.path.join(CHART, "values.yaml"), encoding="utf-8") as f:
        values = yaml.safe_load(f)["extender"]["config"]
    # The chart adds the transport security keys (from `tls`, `extender.identity`
    # and `extender.operatorTokens`) and metrics.perNodeSeries (from `metrics`).
    eq({k: v for k, v in rendered.items() if k not in ("grpc", "http", "operator", "metrics")},
       {k: v for k, v in values.items() if k != "grpc"}, "extender.yaml vs extender.config")
    eq(rendered["metrics"], {"perNodeSeries": True}, "metrics.perNodeSeries by default")
    # grpc.maxStreams is the operator's; the chart's TLS keys stay beside it.
    eq(rendered["grpc"]["maxStreams"], values["grpc"]["maxStreams"], "grpc.maxStreams by default")
    raised = yaml.safe_load(render("extender.config.grpc.maxStreams=120000").get(
        "ConfigMap", name("extender"))["data"]["extender.yaml"])["grpc"]
    eq(raised["maxStreams"], 120000, "extender.config.grpc.maxStreams reaches the extender")
    expect(raised["tls"]["requireClientCert"], "the chart's TLS keys kept beside grpc.maxStreams")
    off = render("metrics.perNodeSeries=false").get("ConfigMap", name("extender"))
    eq(yaml.safe_load(off["data"]["extender.yaml"])["metrics"], {"perNodeSeries": False},
       "metrics.perNodeSeries=false reaches the extender's config")


@check
def extender_disruption_budget():
    objs = render()
    pdb = objs.get("PodDisruptionBudget", name("extender"))
    dep = objs.get("Deployment", name("extender"))
    expect(pdb_labels_match(pdb, dep), "PodDisruptionBudget does not select the extender pods")
    eq(pdb["spec"]["maxUnavailable"], 1, "PDB maxUnavailable")
    expect(not render("extender.podDisruptionBudget.enabled=false").of("PodDisruptionBudget"),
           "PDB rendered although disabled")


def pdb_labels_match(pdb, dep):
    return pod_labels_match(pdb["spec"]["selector"]["matchLabels"], dep["spec"]["template"]["metadata"]["labels"])


@check
def wiring_is_consistent():
    for sets in ([], ["mode=extender-only"]):
        objs = render(*sets)
        pod_labels = [w["spec"]["template"]["metadata"]["labels"] for w in workloads(objs)]
        for w in workloads(objs):
            sel = w["spec"]["selector"]["matchLabels"]
            expect(pod_labels_match(sel, w["spec"]["template"]["metadata"]["labels"]),
                   f"{w['metadata']['name']}: selector does not match its pod labels")
            matching = [l for l in pod_labels if pod_labels_match(sel, l)]
            eq(len(matching), 1, f"{w['metadata']['name']}: workloads its selector matches")
            spec = w["spec"]["template"]["spec"]
            expect(objs.has("ServiceAccount", spec["serviceAccountName"]),
                   f"{w['metadata']['name']}: account {spec['serviceAccountName']} not rendered")
            for v in spec.get("volumes", []):
                if "configMap" in v:
                    expect(objs.has("ConfigMap", v["configMap"]["name"]),
                           f"{w['metadata']['name']}: ConfigMap {v['configMap']['name']} not rendered")
            for c in spec["containers"]:
                ports = {p["name"] for p in c.get("ports", [])}
                for probe in ("livenessProbe", "readinessProbe"):
                    port = (c[probe].get("httpGet") or c[probe]["tcpSocket"])["port"]
                    expect(port in ports or isinstance(port, int),
                           f"{w['metadata']['name']}: {probe} names unknown port {port}")
        for svc in objs.of("Service"):
            sel = svc["spec"]["selector"]
            targets = [w for w in workloads(objs)
                       if pod_labels_match(sel, w["spec"]["template"]["metadata"]["labels"])]
            eq(len(targets), 1, f"Service {svc['metadata']['name']}: workloads selected")
            cports = {p["name"] for c in targets[0]["spec"]["template"]["spec"]["containers"]
                      for p in c.get("ports", [])}
            for p in svc["spec"]["ports"]:
                expect(p["targetPort"] in cports, f"Service {svc['metadata']['name']}: no container port {p['targetPort']}")
        for d in objs.docs:
            labels = d["metadata"].get("labels", {})
            eq(labels.get("app.kubernetes.io/instance"), RELEASE, f"{d['kind']}/{d['metadata']['name']} instance label")


@check
def helm_test_hook_checks_healthz():
    objs = render()
    pods = objs.of("Pod")
    eq(len(pods), 1, "test pods")
    pod = pods[0]
    eq(pod["metadata"]["annotations"]["helm.sh/hook"], "test", "hook annotation")
    cmd = pod["spec"]["containers"][0]["command"]
    # The operator port, as Prometheus and the probes reach it: the CA, no client certificate.
    eq(cmd[-1], f"https://{name('extender')}.{NAMESPACE}.svc:8889/readyz", "test URL")
    expect("--fail" in cmd, "the test must fail on an HTTP error")
    eq(cmd[cmd.index("--cacert") + 1], "/etc/neighborly-tls/ca.crt", "test --cacert")
    expect("--cert" not in cmd, "the operator port needs no client certificate")
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    eq(vols["tls"]["secret"]["secretName"], name("tls-extender"), "test pod's CA")
    eq(vols["tls"]["secret"]["items"], [{"key": "ca.crt", "path": "ca.crt"}], "only the CA is mounted")
    cmd = render("tls.scheduler=false").of("Pod")[0]["spec"]["containers"][0]["command"]
    eq(cmd[-1], f"http://{name('extender')}.{NAMESPACE}.svc:8889/readyz", "plain HTTP test URL")


@check
def names_follow_release():
    objs = render(release="prod", namespace="sched")
    expect(objs.has("Deployment", "prod-neighborly-extender"), f"names: {objs.names()}")
    cfg = scheduler_config(objs, release="prod")
    eq(cfg["extenders"][0]["urlPrefix"], "https://prod-neighborly-extender.sched.svc:8888", "urlPrefix")
    objs = render("fullnameOverride=nb")
    expect(objs.has("DaemonSet", "nb-agent"), f"names: {objs.names()}")


# ---------------------------------------------------------------------------
# Extender-only mode

@check
def extender_only_mode():
    objs = render("mode=extender-only")
    expect(not objs.has("Deployment", name("scheduler")), "extender-only renders a scheduler Deployment")
    for kind in ("ClusterRoleBinding", "ClusterRole", "Role", "RoleBinding"):
        expect(not objs.of(kind), f"extender-only renders {kind} objects")
    expect(not objs.has("ConfigMap", name("scheduler")), "extender-only renders the scheduler config")
    expect(objs.has("Deployment", name("extender")) and objs.has("DaemonSet", name("agent")),
           "extender-only must still render the extender and the agents")
    cm = objs.get("ConfigMap", name("scheduler-snippet"))
    snippet = yaml.safe_load(cm["data"]["extenders.yaml"])
    eq(list(snippet), ["extenders"], "snippet keys")
    eq(len(snippet["extenders"]), 1, "snippet extenders")
    check_extender_entry(snippet["extenders"][0], f"https://{name('extender')}.{NAMESPACE}.svc:8888")
    eq(snippet["extenders"][0]["tlsConfig"]["caFile"], "/etc/kubernetes/neighborly/ca.crt",
       "the primary scheduler's CA path")
    deployed = load_yaml_file(os.path.join(DEPLOY, "scheduler", "primary-scheduler-extender-snippet.yaml"))[0]
    eq(deployed["kind"], "KubeSchedulerConfiguration", "deploy snippet kind")
    eq(deployed["extenders"], snippet["extenders"], "deploy snippet vs the chart's rendering")
    objs = render("mode=extender-only", "schedulerExtender.urlPrefix=http://10.96.0.50:8888")
    snippet = yaml.safe_load(objs.get("ConfigMap", name("scheduler-snippet"))["data"]["extenders.yaml"])
    eq(snippet["extenders"][0]["urlPrefix"], "http://10.96.0.50:8888", "overridden urlPrefix")
    objs = render()
    expect(not objs.has("ConfigMap", name("scheduler-snippet")), "second-scheduler mode renders the snippet")


# ---------------------------------------------------------------------------
# Transport security (docs/security.md)

def secret_file(objs, secret, key, tmp):
    data = objs.get("Secret", secret)["data"][key]
    path = os.path.join(tmp, f"{secret}-{key}")
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
    return path


def openssl(*args):
    return subprocess.run(["openssl", *args], check=True, capture_output=True, text=True).stdout


def mounts_of(workload, cname):
    c = container(workload, cname)
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    return {m["mountPath"]: volumes[m["name"]] for m in c.get("volumeMounts", [])}


def under_secret(mounts, path, secret, what):
    directory, key = os.path.split(path)
    expect(directory in mounts, f"{what}: {path} is not under a mounted volume")
    eq(mounts[directory].get("secret", {}).get("secretName"), secret, f"{what}: Secret mounted at {directory}")
    expect(key in ("ca.crt", "tls.crt", "tls.key"), f"{what}: {key} is not a kubernetes.io/tls key")


@check
def generated_certificates_chain_and_name_the_services():
    objs = render()
    with tempfile.TemporaryDirectory() as tmp:
        ca = secret_file(objs, name("tls-ca"), "tls.crt", tmp)
        for component in ("extender", "agent", "scheduler"):
            secret = objs.get("Secret", name(f"tls-{component}"))
            eq(secret["type"], "kubernetes.io/tls", f"{component} Secret type")
            eq(sorted(secret["data"]), ["ca.crt", "tls.crt", "tls.key"], f"{component} Secret keys")
            cert = secret_file(objs, name(f"tls-{component}"), "tls.crt", tmp)
            expect("OK" in openssl("verify", "-CAfile", ca, cert), f"{component} certificate does not chain to the CA")
            key_pub = openssl("pkey", "-in", secret_file(objs, name(f"tls-{component}"), "tls.key", tmp), "-pubout")
            eq(openssl("x509", "-in", cert, "-noout", "-pubkey"), key_pub, f"{component} key matches its certificate")
        sans = openssl("x509", "-in", secret_file(objs, name("tls-extender"), "tls.crt", tmp), "-noout", "-ext",
                       "subjectAltName")
        for dns in (f"{name('extender')}.{NAMESPACE}.svc", f"{name('extender-agents')}.{NAMESPACE}.svc"):
            expect(f"DNS:{dns}" in sans, f"extender certificate lacks {dns}: {sans}")
    keep = objs.get("Secret", name("tls-ca"))["metadata"]["annotations"].get("helm.sh/resource-policy")
    eq(keep, "keep", "the CA Secret survives uninstall")


@check
def tls_files_are_wired_to_each_component():
    objs = render()
    ext = objs.get("Deployment", name("extender"))
    ext_mounts = mounts_of(ext, "extender")
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    grpc_tls = config["grpc"]["tls"]
    expect(grpc_tls["requireClientCert"] is True, "telemetry must require client certificates")
    for key in ("caFile", "certFile", "keyFile"):
        under_secret(ext_mounts, grpc_tls[key], name("tls-extender"), f"extender grpc.tls.{key}")
    for key in ("certFile", "keyFile", "clientCaFile"):
        under_secret(ext_mounts, config["http"]["tls"][key], name("tls-extender"), f"extender http.tls.{key}")
    expect("insecurePlaintext" not in config["grpc"], "TLS and plaintext at once")
    agent = objs.get("DaemonSet", name("agent"))
    args = dict(a[2:].split("=", 1) for a in container(agent, "agent")["args"] if "=" in a)
    agent_mounts = mounts_of(agent, "agent")
    for flag in ("tls-ca", "tls-cert", "tls-key"):
        under_secret(agent_mounts, args[flag], name("tls-agent"), f"agent --{flag}")
    token_dir, token_file = os.path.split(args["identity-token-file"])
    projected = agent_mounts[token_dir]["projected"]["sources"]
    eq(projected, [{"serviceAccountToken": {"audience": "neighborly", "expirationSeconds": 3600,
                                            "path": token_file}}], "agent identity token volume")
    sched = objs.get("Deployment", name("scheduler"))
    entry = scheduler_config(objs)["extenders"][0]
    for key in ("caFile", "certFile", "keyFile"):
        under_secret(mounts_of(sched, "kube-scheduler"), entry["tlsConfig"][key], name("tls-scheduler"),
                     f"scheduler tlsConfig.{key}")


@check
def tls_options():
    # Plaintext only when asked for, on both sides.
    objs = render("tls.telemetry=false")
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    eq(config["grpc"], {"insecurePlaintext": True, "maxStreams": 50000},
       "extender grpc with tls.telemetry=false")
    args = container(objs.get("DaemonSet", name("agent")), "agent")["args"]
    expect("--insecure-plaintext" in args and not any(a.startswith("--tls-") for a in args),
           f"agent args with tls.telemetry=false: {args}")
    # Everything off: plain HTTP for the scheduler, no Secrets at all.
    objs = render("tls.telemetry=false", "tls.scheduler=false")
    tls_secrets = [s for s in objs.of("Secret") if s["type"] == "kubernetes.io/tls"]
    expect(not tls_secrets, "no TLS, yet TLS Secrets are rendered")
    entry = scheduler_config(objs)["extenders"][0]
    expect(entry["enableHTTPS"] is False and "tlsConfig" not in entry, f"plain HTTP entry: {entry}")
    # HTTPS without client certificates.
    objs = render("tls.requireSchedulerClientCert=false")
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    expect("clientCaFile" not in config["http"]["tls"], "client CA configured although not required")
    eq(scheduler_config(objs)["extenders"][0]["tlsConfig"], {"caFile": "/etc/neighborly-tls/ca.crt"},
       "tlsConfig without a client certificate")
    # User-supplied Secrets replace the generated ones.
    objs = render("tls.existingSecrets.extender=my-ext", "tls.existingSecrets.agent=my-agent",
                  "tls.existingSecrets.scheduler=my-sched")
    expect(not [s for s in objs.of("Secret") if s["type"] == "kubernetes.io/tls"],
           "existing Secrets given, yet TLS Secrets are generated")
    for kind, workload, cname, secret in (("Deployment", "extender", "extender", "my-ext"),
                                          ("DaemonSet", "agent", "agent", "my-agent"),
                                          ("Deployment", "scheduler", "kube-scheduler", "my-sched")):
        eq(mounts_of(objs.get(kind, name(workload)), cname)["/etc/neighborly-tls"]["secret"]["secretName"],
           secret, f"{workload} TLS Secret")
    # No identity token when disabled.
    objs = render("agent.identityToken.enabled=false")
    args = container(objs.get("DaemonSet", name("agent")), "agent")["args"]
    expect(not any(a.startswith("--identity-token-file") for a in args), f"agent args: {args}")


@check
def client_roles_per_port():
    """Issue 24: one CA signs every certificate, so each port names the role it
    accepts, and the chart's certificates carry exactly those names."""
    def configs(objs):
        return yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])

    objs = render()
    config = configs(objs)
    eq(config["grpc"]["tls"]["allowedClientNames"], [name("agent")], "telemetry port's role")
    eq(config["http"]["tls"]["allowedClientNames"], [name("scheduler")], "scheduler port's role")
    with tempfile.TemporaryDirectory() as tmp:
        for component in ("agent", "scheduler", "extender"):
            cert = secret_file(objs, name(f"tls-{component}"), "tls.crt", tmp)
            subject = openssl("x509", "-in", cert, "-noout", "-subject", "-nameopt", "RFC2253")
            eq(subject.strip(), f"subject=CN={name(component)}", f"{component} certificate subject")
    # The server's own certificate and the agents' are refused as the scheduler.
    expect(name("extender") not in config["http"]["tls"]["allowedClientNames"], "extender as scheduler")
    # The placement port (plugin mode) takes the scheduler's names too.
    objs = render("mode=second-scheduler", "scheduler.integration=plugin", kube_version="1.36.3")
    eq(configs(objs)["placement"]["tls"]["allowedClientNames"], [name("scheduler")], "placement port's role")
    # cert-manager issues the same common names.
    objs = render("tls.certManager.enabled=true")
    certs = {c["spec"]["secretName"]: c for c in objs.of("Certificate")}
    for component in ("agent", "scheduler"):
        eq(certs[name(f"tls-{component}")]["spec"]["commonName"], name(component),
           f"cert-manager {component} commonName")
    # Names of the operator's own certificates (existingSecrets).
    objs = render("tls.existingSecrets.extender=my-ext", "tls.existingSecrets.agent=my-agent",
                  "tls.existingSecrets.scheduler=my-sched", "tls.clientNames.scheduler={kube-scheduler}",
                  "tls.clientNames.agent={spiffe://corp/agent,agent.corp}")
    config = configs(objs)
    eq(config["http"]["tls"]["allowedClientNames"], ["kube-scheduler"], "scheduler names from values")
    eq(config["grpc"]["tls"]["allowedClientNames"], ["spiffe://corp/agent", "agent.corp"], "agent names")
    # Without a client CA there is no role to check.
    objs = render("tls.requireSchedulerClientCert=false")
    expect("allowedClientNames" not in configs(objs)["http"]["tls"], "names without client certificates")


@check
def node_identity_wiring():
    objs = render()
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    expect("identity" not in config["grpc"], "identity configured without an issuer")
    jwks = '{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","kid":"k"}]}'
    objs = render("extender.identity.issuer=https://kubernetes.default.svc.cluster.local",
                  f"json:extender.identity.jwks={json.dumps(jwks)}")
    config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
    identity = config["grpc"]["identity"]
    eq(identity["issuer"], "https://kubernetes.default.svc.cluster.local", "identity issuer")
    eq(identity["audience"], "neighborly", "identity audience (the agent's projected token)")
    eq(identity["allowedSubjects"], [f"system:serviceaccount:{NAMESPACE}:{name('agent')}"],
       "only the agent's service account")
    expect(objs.has("ServiceAccount", name("agent")), "the agent's ServiceAccount is rendered")
    directory, key = os.path.split(identity["jwksFile"])
    mounts = mounts_of(objs.get("Deployment", name("extender")), "extender")
    cm = mounts[directory]["configMap"]["name"]
    eq(objs.get("ConfigMap", cm)["data"][key], jwks, "JWKS ConfigMap")
    result = helm("template", RELEASE, CHART, "--namespace", NAMESPACE, "--set",
                  "extender.identity.issuer=https://k8s")
    expect(result.returncode != 0 and "extender.identity.jwks is needed" in result.stderr,
           f"an issuer without keys must fail the render: {result.stderr[-300:]}")


# ---------------------------------------------------------------------------
# Monitoring

def promtool_check_rules(path):
    promtool = shutil.which("promtool")
    expect(promtool, "promtool not found (scripts/setup.sh installs Debian's prometheus package)")
    out = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    expect(out.returncode == 0, f"promtool check rules {path}:\n{out.stdout}{out.stderr}")


@check
def alert_rules_are_valid():
    plain = os.path.join(DEPLOY, "alerts", "neighborly-rules.yaml")
    promtool_check_rules(plain)
    with open(plain, encoding="utf-8") as f, \
            open(os.path.join(CHART, "files", "neighborly-rules.yaml"), encoding="utf-8") as g:
        expect(f.read() == g.read(), "charts/neighborly/files/neighborly-rules.yaml differs from "
               "deploy/alerts/neighborly-rules.yaml (copy it)")
    groups = load_yaml_file(plain)[0]["groups"]
    crd = load_yaml_file(os.path.join(DEPLOY, "alerts", "neighborly-prometheusrule.yaml"))[0]
    eq(crd["kind"], "PrometheusRule", "deploy PrometheusRule kind")
    eq(crd["spec"]["groups"], groups, "deploy/alerts/neighborly-prometheusrule.yaml groups")
    names = {r["alert"] for g in groups for r in g["rules"]}
    for needed in ("NeighborlyNodeTelemetryStale", "NeighborlyNoTelemetry", "NeighborlyMemoryBandwidthSaturated",
                   "NeighborlyExtenderErrors", "NeighborlyExtenderSlow", "NeighborlyStateSaveFailing"):
        expect(needed in names, f"alert {needed} missing")


@check
def chart_monitoring_objects():
    objs = render("metrics.prometheusRule.enabled=true", "metrics.serviceMonitor.enabled=true",
                  "metrics.prometheusRule.labels.release=kps")
    rule = objs.get("PrometheusRule", RELEASE)
    eq(rule["metadata"]["labels"]["release"], "kps", "PrometheusRule extra label")
    groups = load_yaml_file(os.path.join(DEPLOY, "alerts", "neighborly-rules.yaml"))[0]["groups"]
    eq(rule["spec"]["groups"], groups, "PrometheusRule groups vs deploy/alerts")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump({"groups": rule["spec"]["groups"]}, f)
    try:
        promtool_check_rules(f.name)
    finally:
        os.unlink(f.name)
    sm = objs.get("ServiceMonitor", name("extender"))
    eq(sm["spec"]["endpoints"][0]["port"], "operator", "ServiceMonitor port")
    pm = objs.get("PodMonitor", name("agent"))
    eq(pm["spec"]["podMetricsEndpoints"][0]["port"], "metrics", "PodMonitor port")
    plain = render()
    for kind in ("PrometheusRule", "ServiceMonitor", "PodMonitor"):
        expect(not plain.of(kind), f"{kind} rendered by default (needs the operator's CRDs)")
    ann = plain.get("DaemonSet", name("agent"))["spec"]["template"]["metadata"]["annotations"]
    eq(ann.get("prometheus.io/port"), "9101", "agent scrape port annotation")


def metric_names(text):
    names = set(re.findall(r"\bneighborly_[a-z0-9_]+", text))
    return {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}


@check
def dashboard_and_documented_metrics():
    with open(os.path.join(DEPLOY, "grafana", "neighborly-dashboard.json"), encoding="utf-8") as f:
        dash = json.load(f)
    ids = [p["id"] for p in dash["panels"]]
    eq(len(ids), len(set(ids)), "unique panel ids")
    exprs = []
    for p in dash["panels"]:
        if p["type"] == "row":
            continue
        expect(p.get("targets"), f"panel {p['title']} has no query")
        exprs += [t["expr"] for t in p["targets"]]
    used = metric_names("\n".join(exprs))
    with open(os.path.join(DEPLOY, "alerts", "neighborly-rules.yaml"), encoding="utf-8") as f:
        used_by_alerts = metric_names(f.read())
    with open(os.path.join(ROOT, "docs", "metrics.md"), encoding="utf-8") as f:
        documented = metric_names(f.read())
    undocumented = (used | used_by_alerts) - documented
    expect(not undocumented, f"metrics used but not listed in docs/metrics.md: {sorted(undocumented)}")
    for needed in ("neighborly_node_contention_score", "neighborly_node_l3_pressure_ratio",
                   "neighborly_node_membw_utilization_ratio", "neighborly_node_telemetry_age_seconds",
                   "neighborly_decisions_total", "neighborly_extender_http_request_duration_seconds",
                   "neighborly_fleet_nodes", "neighborly_fleet_max_membw_utilization_ratio"):
        expect(needed in used, f"the dashboard does not show {needed}")


@check
def dashboard_and_alerts_use_exported_metrics():
    """Every metric name in the dashboard's queries and the alert rules (the
    chart's PrometheusRule as rendered, and deploy/) is exported by the real
    binaries of this build (test/metrics/metrics_conventions.py runs them)."""
    sys.path.insert(0, os.path.join(ROOT, "test", "metrics"))
    import metrics_conventions  # noqa: E402

    pages = metrics_conventions.scrape(BUILD)
    exported = metrics_conventions.exported_names(pages)
    rule = render("metrics.prometheusRule.enabled=true").get("PrometheusRule", RELEASE)
    uses = metrics_conventions.names_used_by_dashboard_and_rules()
    uses["the chart's PrometheusRule"] = metrics_conventions.used_names(
        "\n".join(r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]))
    for where, names in uses.items():
        expect(names, f"{where}: no metric names found")
        missing = sorted(names - exported)
        expect(not missing, f"{os.path.relpath(where, ROOT) if os.path.isabs(where) else where} "
               f"uses {missing}, which the binaries' /metrics do not export")


# ---------------------------------------------------------------------------
# Example workloads

def qos_class(pod_spec):
    """The QoS class Kubernetes derives from requests and limits."""
    containers = pod_spec["containers"]
    res = [c.get("resources", {}) for c in containers]
    if all(not r.get("requests") and not r.get("limits") for r in res):
        return "BestEffort"
    for r in res:
        req, lim = r.get("requests", {}), r.get("limits", {})
        for k in ("cpu", "memory"):
            if k not in lim or str(req.get(k, lim[k])) != str(lim[k]):
                return "Burstable"
    return "Guaranteed"


def example(file, kind, obj_name):
    docs = load_yaml_file(os.path.join(DEPLOY, "examples", file))
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == obj_name]
    expect(found, f"deploy/examples/{file} has no {kind} {obj_name}")
    return found[0]["spec"]["template"]


@check
def example_workloads():
    schedulers = {"neighborly-scheduler"}
    for file, obj in (("article-service.yaml", "article-service"), ("search-api.yaml", "search-api")):
        tpl = example(file, "Deployment", obj)
        eq(qos_class(tpl["spec"]), "Guaranteed", f"{obj} QoS class")
        for c in tpl["spec"]["containers"]:
            cpu = str(c["resources"]["requests"]["cpu"])
            expect(cpu.isdigit(), f"{obj}: integer CPUs get exclusive cores, got {cpu}")
        eq(tpl["metadata"]["annotations"].get("neighborly.io/class"), "latency-critical", f"{obj} class")
        expect(tpl["spec"].get("schedulerName") in schedulers, f"{obj} does not opt in")
        expect("affinity" not in tpl["spec"], f"{obj}: Neighborly replaces hand-kept anti-affinity")
    tpl = example("analytics-batch-job.yaml", "Job", "analytics-ingest")
    eq(tpl["metadata"]["labels"].get("workload-type"), "batch", "analytics job label")
    eq(qos_class(tpl["spec"]), "Burstable", "analytics job QoS class")
    expect(tpl["spec"].get("schedulerName") in schedulers, "analytics job does not opt in")


import chart_test_operator  # noqa: E402  (the operator-side checks; they use the helpers above)
import chart_test_plugin  # noqa: E402  (the framework-plugin mode's checks)
import chart_test_jwks  # noqa: E402  (extender.identity.jwksSync)
import chart_test_rebalancer  # noqa: E402  (rebalancer.enabled)

chart_test_operator.register(sys.modules[__name__])
chart_test_plugin.register(sys.modules[__name__])
chart_test_jwks.register(sys.modules[__name__])
chart_test_rebalancer.register(sys.modules[__name__])


def main():
    global HELM, BUILD
    parser = argparse.ArgumentParser(description="Tests of the Helm chart and deploy/.")
    parser.add_argument("--helm", required=True, help="path of the helm binary")
    parser.add_argument("-k", default="", help="run only checks whose name contains this")
    parser.add_argument("--build", default=BUILD,
                        help="CMake build directory with the binaries (default build/default)")
    args = parser.parse_args()
    HELM = args.helm
    BUILD = args.build
    start = time.monotonic()
    passed = failed = 0
    for fn in CHECKS:
        if args.k not in fn.__name__:
            continue
        t0 = time.monotonic()
        try:
            fn()
        except (AssertionError, RenderError, KeyError, TypeError, yaml.YAMLError, OSError,
                RuntimeError) as e:
            failed += 1
            detail = str(e) if not isinstance(e, (KeyError, TypeError)) else traceback.format_exc(limit=2)
            print(f"FAIL {fn.__name__}: {detail}", flush=True)
        else:
            passed += 1
            print(f"ok   {fn.__name__} ({time.monotonic() - t0:.1f}s)", flush=True)
    print(f"chart-test: {time.monotonic() - start:.1f}s")
    print(f"chart-test: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
