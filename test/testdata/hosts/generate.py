#!/usr/bin/env python3
"""Writes the host fixture trees used by the node agent's tests.

Each tree is what --host-root would see on one kind of node: sysfs topology,
a mount table, kubelet pod cgroups, /var/log/pods, kubelet state and (where
the CPU has it) resctrl. Values are taken from real machines of that kind
(file formats per ../../../../shared/reference/linux-telemetry-interfaces.md);
rerun after editing:  python3 test/testdata/hosts/generate.py
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

UIDS = {
    "guaranteed": "6f1c0e1a-0000-4000-8000-000000000001",
    "burstable": "7a2b0e1a-0000-4000-8000-000000000002",
    "besteffort": "8b3c0e1a-0000-4000-8000-000000000003",
}
NAMES = {
    "guaranteed": ("content", "article-service-5d8f7-abcde"),
    "burstable": ("analytics", "event-scan-7c9d-xyz12"),
    "besteffort": ("default", "debug-shell"),
}
CID = {q: (c * 64) for q, c in (("guaranteed", "a"), ("burstable", "b"), ("besteffort", "c"))}


def w(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def topology(root, nodes, cpus_per_node, l3, cache=True, smt=1):
    """nodes: count; l3: list of (cache id, cpu list) or None; smt: threads per core
    (siblings are adjacent CPUs), 0 for no core information in sysfs."""
    total = nodes * cpus_per_node
    w(root, "/sys/devices/system/cpu/online", f"0-{total - 1}\n")
    w(root, "/sys/devices/system/node/online", "0\n" if nodes == 1 else f"0-{nodes - 1}\n")
    for n in range(nodes):
        first = n * cpus_per_node
        w(root, f"/sys/devices/system/node/node{n}/cpulist", f"{first}-{first + cpus_per_node - 1}\n")
        w(root, f"/sys/devices/system/node/node{n}/distance",
          " ".join("10" if m == n else "21" for m in range(nodes)) + "\n")
        w(root, f"/sys/devices/system/node/node{n}/meminfo",
          f"Node {n} MemTotal:       33554432 kB\nNode {n} MemFree:        30000000 kB\n")
    for cpu in range(total):
        w(root, f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id", f"{cpu // cpus_per_node}\n")
        if smt:
            first = cpu - cpu % smt
            w(root, f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id", f"{(cpu % cpus_per_node) // smt}\n")
            w(root, f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list",
              f"{first}\n" if smt == 1 else f"{first}-{first + smt - 1}\n")
        if not cache:
            continue
        base = f"/sys/devices/system/cpu/cpu{cpu}/cache"
        w(root, f"{base}/index0/level", "1\n")
        w(root, f"{base}/index0/size", "48K\n")
        w(root, f"{base}/index2/level", "2\n")
        w(root, f"{base}/index2/size", "2048K\n")
        for cid, cpus, size in l3:
            lo, hi = (int(x) for x in cpus.split("-"))
            if lo <= cpu <= hi:
                w(root, f"{base}/index3/level", "3\n")
                w(root, f"{base}/index3/id", f"{cid}\n")
                w(root, f"{base}/index3/size", size)
                w(root, f"{base}/index3/shared_cpu_list", f"{cpus}\n")


def mounts(root, kind, resctrl):
    lines = ["sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0",
             "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0"]
    if kind == "v2":
        lines.append("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0")
    else:
        lines.append("tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0")
        if kind == "hybrid":
            lines.append("cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0")
        for c in ("cpu,cpuacct", "cpuset", "memory", "perf_event", "pids"):
            lines.append(f"cgroup /sys/fs/cgroup/{c} cgroup rw,nosuid,nodev,noexec,relatime,{c} 0 0")
    if resctrl:
        lines.append("resctrl /sys/fs/resctrl resctrl rw,relatime 0 0")
    w(root, "/proc/mounts", "\n".join(lines) + "\n")
    w(root, "/proc/filesystems", "nodev\tsysfs\nnodev\tcgroup2\n" + ("nodev\tresctrl\n" if resctrl else ""))


def pod_rel(driver, qos, uid):
    if driver == "systemd":
        u = uid.replace("-", "_")
        if qos == "guaranteed":
            return f"kubepods.slice/kubepods-pod{u}.slice"
        return f"kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{u}.slice"
    if qos == "guaranteed":
        return f"kubepods/pod{uid}"
    return f"kubepods/{qos}/pod{uid}"


def container_leaf(driver, runtime, cid):
    if driver == "systemd":
        return {"containerd": f"cri-containerd-{cid}.scope", "cri-o": f"crio-{cid}.scope",
                "docker": f"docker-{cid}.scope"}[runtime]
    return {"containerd": cid, "cri-o": f"crio-{cid}", "docker": cid}[runtime]


def pods(root, kind, driver, runtime, nodes, numa_cpus, pinned="2-3"):
    tid = 1000
    for i, qos in enumerate(("guaranteed", "burstable", "besteffort")):
        uid = UIDS[qos]
        ns, name = NAMES[qos]
        os.makedirs(os.path.join(root, f"var/log/pods/{ns}_{name}_{uid}/app"), exist_ok=True)
        rel = pod_rel(driver, qos, uid)
        leaf = container_leaf(driver, runtime, CID[qos])
        usage_usec = 1_000_000 * (i + 1)
        tids = [tid + i * 10 + k for k in range(3)]
        shares = {"guaranteed": 2048, "burstable": 512, "besteffort": 2}[qos]
        weight = 1 + ((shares - 2) * 9999) // 262142
        cpuset = pinned if qos == "guaranteed" else numa_cpus
        if kind == "v2":
            base = f"/sys/fs/cgroup/{rel}"
            w(root, f"{base}/cpu.stat", f"usage_usec {usage_usec}\nuser_usec {usage_usec // 2}\nsystem_usec {usage_usec // 2}\n")
            w(root, f"{base}/cpu.weight", f"{weight}\n")
            w(root, f"{base}/memory.numa_stat",
              "anon " + " ".join(f"N{n}={(n + 1) * 1048576}" for n in range(nodes)) + "\n"
              "file " + " ".join(f"N{n}={4096}" for n in range(nodes)) + "\n"
              "kernel_stack " + " ".join(f"N{n}=16384" for n in range(nodes)) + "\n")
            w(root, f"{base}/cpu.pressure", "some avg10=1.25 avg60=0.50 avg300=0.10 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
            w(root, f"{base}/memory.pressure", "some avg10=0.50 avg60=0.10 avg300=0.00 total=345\nfull avg10=0.25 avg60=0.00 avg300=0.00 total=100\n")
            w(root, f"{base}/cgroup.threads", "")
            w(root, f"{base}/cpuset.cpus.effective", f"{cpuset}\n")
            w(root, f"{base}/{leaf}/cgroup.threads", "".join(f"{t}\n" for t in tids))
            w(root, "/sys/fs/cgroup/cpuset.cpus.effective",
              f"0-{nodes * 4 - 1}\n" if pinned == "2-3" else f"{numa_cpus}\n")
        else:
            ctl = {"cpuacct": "cpu,cpuacct", "memory": "memory", "cpuset": "cpuset", "perf_event": "perf_event"}
            w(root, f"/sys/fs/cgroup/cpu,cpuacct/{rel}/cpuacct.usage", f"{usage_usec * 1000}\n")
            w(root, f"/sys/fs/cgroup/cpu,cpuacct/{rel}/cpu.shares", f"{shares}\n")
            w(root, f"/sys/fs/cgroup/cpu,cpuacct/{rel}/tasks", "")
            w(root, f"/sys/fs/cgroup/cpu,cpuacct/{rel}/{leaf}/tasks", "".join(f"{t}\n" for t in tids))
            w(root, f"/sys/fs/cgroup/memory/{rel}/memory.numa_stat",
              "total=" + str(256 * nodes) + " " + " ".join(f"N{n}=256" for n in range(nodes)) + "\n"
              "hierarchical_total=" + str(512 * nodes) + " " + " ".join(f"N{n}=512" for n in range(nodes)) + "\n")
            w(root, f"/sys/fs/cgroup/cpuset/{rel}/cpuset.effective_cpus", f"{cpuset}\n")
            os.makedirs(os.path.join(root, f"sys/fs/cgroup/perf_event/{rel}"), exist_ok=True)
            if kind == "hybrid":
                w(root, f"/sys/fs/cgroup/unified/{rel}/cpu.pressure", "some avg10=2.00 avg60=0.00 avg300=0.00 total=1\n")
                w(root, f"/sys/fs/cgroup/unified/{rel}/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def kubelet(root, fmt):
    g = UIDS["guaranteed"]
    config = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
              "cgroupDriver: systemd\n")
    if fmt == "none":
        w(root, "/var/lib/kubelet/cpu_manager_state", '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}\n')
        w(root, "/var/lib/kubelet/memory_manager_state", '{"policyName":"None","machineState":{},"checksum":1}\n')
        w(root, "/var/lib/kubelet/config.yaml", config)
        return
    config += ("cpuManagerPolicy: static\ntopologyManagerPolicy: single-numa-node\n"
               "topologyManagerScope: pod\nreservedSystemCPUs: \"0\"\nmemoryManagerPolicy: Static\n"
               "cpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n"
               "topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n"
               "reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 1Gi\n    hugepages-1Gi: 2Gi\n"
               "- numaNode: 1\n  limits:\n    memory: 512Mi\n")
    if fmt == "v4":
        # A kubelet whose --config points elsewhere and whose flags override the file.
        w(root, "/etc/kubernetes/kubelet-config.yaml", config)
        w(root, "/proc/812/cmdline", "\0".join([
            "/usr/bin/kubelet", "--config=/etc/kubernetes/kubelet-config.yaml", "--fail-swap-on",
            "--topology-manager-policy", "restricted", "--topology-manager-scope=container",
            "--cpu-manager-policy-options=full-pcpus-only=true,align-by-socket=true",
            "--reserved-memory", "0:memory=256Mi;1:memory=256Mi", "--reserved-memory=1:memory=256Mi",
            "--memory-manager-policy=None"]) + "\0")
        w(root, "/proc/1/cmdline", "/sbin/init\0splash\0")
    else:
        w(root, "/var/lib/kubelet/config.yaml", config)
    inner = '{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"%s":{"app":"2-3"}}}' % g
    if fmt == "v2":
        w(root, "/var/lib/kubelet/cpu_manager_state", inner[:-1] + ',"checksum":3300516549}\n')
    elif fmt == "v4":
        escaped = inner.replace('"', '\\"')
        w(root, "/var/lib/kubelet/cpu_manager_state",
          '{"policyName":"static","defaultCpuSet":"0-1,4-7","checksum":0,"data":"%s","dataChecksum":42}\n' % escaped)
    elif fmt == "v1-legacy":
        w(root, "/var/lib/kubelet/cpu_manager_state",
          '{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"%s":"2-3"},"checksum":1}\n' % CID["guaranteed"])
    w(root, "/var/lib/kubelet/memory_manager_state",
      '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"memory":'
      '{"total":34359738368,"systemReserved":1073741824,"allocatable":33285996544,"reserved":4294967296,'
      '"free":28991029248}},"cells":[0]}},"entries":{"%s":{"app":[{"numaAffinity":[0],"type":"memory",'
      '"size":4294967296}]}},"checksum":1}\n' % g)


# Issue 26: what the memory view reads. Per pod: usage, inactive file pages and
# limit (the kubelet's working set), the containers' processes and their
# oom_score_adj (the BestEffort pod has one process an entrypoint lowered to 500,
# a mismatch); the node's /proc/meminfo; the kubelet's eviction thresholds.
MEMORY = {  # qos: (usage, inactive_file, limit or None, {pid: oom_score_adj})
    "guaranteed": (3758096384, 268435456, 4294967296, {5001: -997}),
    "burstable": (6710886400, 268435456, None, {5011: 994, 5012: 994}),
    "besteffort": (419430400, 104857600, None, {5021: 1000, 5022: 500}),
}


def memory(root, kind, driver, runtime, kfmt):
    for qos, (usage, inactive, limit, procs) in MEMORY.items():
        rel = pod_rel(driver, qos, UIDS[qos])
        leaf = container_leaf(driver, runtime, CID[qos])
        pids = "".join(f"{p}\n" for p in procs)
        if kind == "v2":
            base = f"/sys/fs/cgroup/{rel}"
            w(root, f"{base}/memory.current", f"{usage}\n")
            w(root, f"{base}/memory.stat", f"anon {usage - inactive}\nfile {inactive}\n"
              f"active_file 0\ninactive_file {inactive}\n")
            w(root, f"{base}/memory.max", "max\n" if limit is None else f"{limit}\n")
            w(root, f"{base}/{leaf}/cgroup.procs", pids)
        else:
            base = f"/sys/fs/cgroup/memory/{rel}"
            w(root, f"{base}/memory.usage_in_bytes", f"{usage}\n")
            w(root, f"{base}/memory.stat", f"cache {inactive}\nrss {usage - inactive}\n"
              f"total_cache {inactive}\ntotal_rss {usage - inactive}\ntotal_inactive_file {inactive}\n")
            w(root, f"{base}/memory.limit_in_bytes",
              "9223372036854771712\n" if limit is None else f"{limit}\n")
            w(root, f"/sys/fs/cgroup/cpu,cpuacct/{rel}/{leaf}/cgroup.procs", pids)
        for pid, adj in procs.items():
            w(root, f"/proc/{pid}/oom_score_adj", f"{adj}\n")
    w(root, "/proc/meminfo", "MemTotal:       65536000 kB\nMemFree:        20480000 kB\n"
      "MemAvailable:   40960000 kB\nBuffers:          102400 kB\nCached:         20480000 kB\n"
      "Active(file):    8192000 kB\nInactive(file):  10240000 kB\n")
    if kfmt == "none":
        return
    eviction = ("evictionHard:\n  memory.available: 500Mi\n  nodefs.available: 10%\n"
                "evictionSoft:\n  memory.available: 1Gi\n")
    for config in ("var/lib/kubelet/config.yaml", "etc/kubernetes/kubelet-config.yaml"):
        full = os.path.join(root, config)
        if os.path.exists(full):
            with open(full, "a") as f:
                f.write(eviction)


def resctrl(root, domains, features, num_rmids, snc_nodes=0, foreign=False):
    base = "/sys/fs/resctrl"
    w(root, f"{base}/info/L3_MON/num_rmids", f"{num_rmids}\n")
    w(root, f"{base}/info/L3_MON/mon_features", "".join(f + "\n" for f in features))
    w(root, f"{base}/info/L3_MON/max_threshold_occupancy", "270336\n")
    w(root, f"{base}/info/last_cmd_status", "ok\n")
    w(root, f"{base}/tasks", "1\n")
    os.makedirs(os.path.join(root, f"sys/fs/resctrl/mon_groups"), exist_ok=True)
    for d in domains:
        dom = f"{base}/mon_data/mon_L3_{d:02d}"
        values = {"llc_occupancy": 10_000_000 + d, "mbm_total_bytes": 5_000_000_000, "mbm_local_bytes": 4_000_000_000}
        for f in features:
            w(root, f"{dom}/{f}", f"{values[f]}\n")
        for s in range(snc_nodes):
            for f in features:
                w(root, f"{dom}/mon_sub_L3_{s:02d}/{f}", f"{values[f] // snc_nodes}\n")
    # A stale group of ours (a pod gone while the agent was down), to be collected.
    stale = f"{base}/mon_groups/neighborly-deadbeef-0000-4000-8000-000000000000"
    w(root, f"{stale}/tasks", "")
    for d in domains:
        for f in features:
            w(root, f"{stale}/mon_data/mon_L3_{d:02d}/{f}", "0\n")
    if foreign:
        w(root, f"{base}/mon_groups/pqos-1234-0/tasks", "")


def host(name, kind, driver, runtime, nodes, cpus_per_node, l3, kfmt, rdt, cache=True, smt=1):
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    topology(root, nodes, cpus_per_node, l3 or [], cache, smt)
    mounts(root, kind, rdt is not None)
    pods(root, kind, driver, runtime, nodes, f"0-{nodes * cpus_per_node - 1}")
    kubelet(root, kfmt)
    memory(root, kind, driver, runtime, kfmt)
    w(root, "/proc/sys/kernel/hostname", f"{name}\n")
    w(root, "/proc/sys/kernel/random/boot_id", "0b5e55ed-0000-4000-8000-00000000b007\n")
    if rdt is not None:
        resctrl(root, **rdt)
    with open(os.path.join(root, "README"), "w") as f:
        f.write(f"Fixture host {name}: cgroup {kind}, {driver} driver, {runtime}, kubelet state {kfmt}, "
                f"{'resctrl ' + str(rdt) if rdt else 'no resctrl'}. Generated by ../generate.py.\n")


ALL = ["intel-mbm-v2-systemd-containerd", "amd-v1-cgroupfs-docker", "cmt-only-hybrid-systemd-crio",
       "snc-v2-cgroupfs-containerd", "no-rdt-hybrid-systemd-containerd"]

if __name__ == "__main__":
    host(ALL[0], "v2", "systemd", "containerd", 2, 4, [(0, "0-3", "36608K\n"), (1, "4-7", "36608K\n")], "v2",
         dict(domains=[0, 1], features=["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"], num_rmids=224),
         smt=2)
    # AMD: one L3 per CCX (4 CPUs each), many mon_L3 per socket.
    host(ALL[1], "v1", "cgroupfs", "docker", 1, 8, [(0, "0-3", "32768K\n"), (1, "4-7", "32768K\n")], "v1-legacy",
         dict(domains=[0, 1], features=["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"], num_rmids=4,
              foreign=True))
    host(ALL[2], "hybrid", "systemd", "cri-o", 2, 4, [(0, "0-3", "25344K\n"), (1, "4-7", "25344K\n")], "v4",
         dict(domains=[0, 1], features=["llc_occupancy"], num_rmids=64))
    # SNC-2: one L3 (id 0) spans both NUMA nodes.
    host(ALL[3], "v2", "cgroupfs", "containerd", 2, 4, [(0, "0-7", "61440K\n")], "v2",
         dict(domains=[0], features=["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"], num_rmids=128,
              snc_nodes=2))
    # Like the build VM: hybrid cgroups, no resctrl, no cache information.
    host(ALL[4], "hybrid", "systemd", "containerd", 1, 2, None, "none", None, cache=False, smt=0)
