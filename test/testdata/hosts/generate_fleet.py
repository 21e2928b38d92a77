#!/usr/bin/env python3
"""Writes the fleet fixture hosts (issue 27): the server shapes where one socket
is not one NUMA node and one L3. Each tree is what --host-root would see on a
scaled-down machine of that kind (fewer cores per L3, same structure): CPU
numbering with SMT siblings in the upper half as Linux enumerates x86, L3
domains per CCD / per socket, NUMA nodes per NPS / SNC setting, resctrl trees
as the kernel lays them out for that vendor (file formats per
../../../../shared/reference/linux-telemetry-interfaces.md), kubelet state.
Rerun after editing:  python3 test/testdata/hosts/generate_fleet.py
"""
import os
import shutil

from generate import CID, UIDS, mounts, pods, w

HERE = os.path.dirname(os.path.abspath(__file__))


def cpulist(cpus):
    cpus = sorted(cpus)
    out, start, prev = [], None, None
    for c in cpus:
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = c
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


def machine(root, cores, smt, distance, mem_kb=16777216, l3_size="32768K\n", l2_size="1024K\n"):
    """cores: list of dicts {socket, core_id, numa, l3 (cache id or None)}, in core order.
    Thread t of core i is CPU i + t * len(cores) (x86 and Arm enumeration)."""
    n = len(cores)
    cpu_info = {}
    for i, core in enumerate(cores):
        threads = [i + t * n for t in range(smt)]
        for cpu in threads:
            cpu_info[cpu] = dict(core, threads=threads)
    total = n * smt
    w(root, "/sys/devices/system/cpu/online", f"0-{total - 1}\n")
    numas = sorted({c["numa"] for c in cores})
    w(root, "/sys/devices/system/node/online", cpulist(numas) + "\n")
    for node in numas:
        cpus = [c for c, info in cpu_info.items() if info["numa"] == node]
        w(root, f"/sys/devices/system/node/node{node}/cpulist", cpulist(cpus) + "\n")
        w(root, f"/sys/devices/system/node/node{node}/distance",
          " ".join(str(distance(node, m)) for m in numas) + "\n")
        w(root, f"/sys/devices/system/node/node{node}/meminfo",
          f"Node {node} MemTotal:       {mem_kb} kB\nNode {node} MemFree:        {mem_kb // 2} kB\n")
    for cpu, info in cpu_info.items():
        topo = f"/sys/devices/system/cpu/cpu{cpu}/topology"
        w(root, f"{topo}/physical_package_id", f"{info['socket']}\n")
        w(root, f"{topo}/core_id", f"{info['core_id']}\n")
        w(root, f"{topo}/thread_siblings_list", cpulist(info["threads"]) + "\n")
        base = f"/sys/devices/system/cpu/cpu{cpu}/cache"
        w(root, f"{base}/index0/level", "1\n")
        w(root, f"{base}/index0/size", "32K\n")
        w(root, f"{base}/index2/level", "2\n")
        w(root, f"{base}/index2/size", l2_size)
        if info["l3"] is None:
            continue
        sharing = [c for c, o in cpu_info.items() if o["l3"] == info["l3"]]
        w(root, f"{base}/index3/level", "3\n")
        if info.get("l3_id", True):
            w(root, f"{base}/index3/id", f"{info['l3']}\n")
        w(root, f"{base}/index3/size", l3_size)
        w(root, f"{base}/index3/shared_cpu_list", cpulist(sharing) + "\n")
    return total


def kubelet(root, config, default_cpus, pinned):
    w(root, "/var/lib/kubelet/config.yaml",
      "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + config)
    g = UIDS["guaranteed"]
    w(root, "/var/lib/kubelet/cpu_manager_state",
      '{"policyName":"static","defaultCpuSet":"%s","entries":{"%s":{"app":"%s"}},"checksum":1}\n'
      % (default_cpus, g, pinned))
    w(root, "/var/lib/kubelet/memory_manager_state", '{"policyName":"None","machineState":{},"checksum":1}\n')


def resctrl_tree(root, domains, mon=None, sub=None, l3=None, mb=None, mount_opts=""):
    """domains: L3 cache ids. mon: (features, num_rmids) or None (no L3_MON).
    sub: cache id -> NUMA nodes of its mon_sub_L3_* (SNC). l3/mb: info files."""
    base = "/sys/fs/resctrl"
    w(root, f"{base}/info/last_cmd_status", "ok\n")
    w(root, f"{base}/tasks", "1\n")
    w(root, f"{base}/cpus_list", "\n")
    os.makedirs(os.path.join(root, "sys/fs/resctrl/mon_groups"), exist_ok=True)
    schemata = []
    if l3:
        for k, v in l3.items():
            w(root, f"{base}/info/L3/{k}", f"{v}\n")
        schemata.append("L3:" + ";".join(f"{d}={l3['cbm_mask']}" for d in domains))
    if mb:
        for k, v in mb.items():
            if not k.startswith("_"):
                w(root, f"{base}/info/MB/{k}", f"{v}\n")
        schemata.append("MB:" + ";".join(f"{d}={mb['_max']}" for d in domains))
    if schemata:
        w(root, f"{base}/schemata", "\n".join(schemata) + "\n")
    if mon:
        features, num_rmids = mon
        w(root, f"{base}/info/L3_MON/num_rmids", f"{num_rmids}\n")
        w(root, f"{base}/info/L3_MON/mon_features", "".join(f + "\n" for f in features))
        w(root, f"{base}/info/L3_MON/max_threshold_occupancy", "1048576\n")
        for d in domains:
            dom = f"{base}/mon_data/mon_L3_{d:02d}"
            values = {"llc_occupancy": 4_000_000 + d, "mbm_total_bytes": 1_000_000_000 * (d + 1),
                      "mbm_local_bytes": 800_000_000 * (d + 1)}
            parts = (sub or {}).get(d, [])
            for f in features:
                w(root, f"{dom}/{f}", f"{values[f]}\n")
                for node in parts:
                    w(root, f"{dom}/mon_sub_L3_{node:02d}/{f}", f"{values[f] // len(parts)}\n")
    # Mount options are in /proc/mounts (mounts() wrote the plain line).
    if mount_opts:
        path = os.path.join(root, "proc/mounts")
        text = open(path).read().replace("resctrl /sys/fs/resctrl resctrl rw,relatime",
                                         f"resctrl /sys/fs/resctrl resctrl rw,relatime,{mount_opts}")
        open(path, "w").write(text)


def cpuinfo_arm(root, part, n):
    w(root, "/proc/cpuinfo", "".join(
        f"processor\t: {i}\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"
        f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: {part}\n"
        f"CPU revision\t: 1\n\n" for i in range(n)))


def cpuinfo_x86(root, vendor, model, n, flags):
    w(root, "/proc/cpuinfo", "".join(
        f"processor\t: {i}\nvendor_id\t: {vendor}\nmodel name\t: {model}\nflags\t\t: {flags}\n\n"
        for i in range(n)))


def common(root, name, kind, driver, runtime, rdt, numa_cpus, pinned):
    mounts(root, kind, rdt)
    pods(root, kind, driver, runtime, 1, numa_cpus, pinned=pinned)
    w(root, "/proc/sys/kernel/hostname", f"{name}\n")
    w(root, "/proc/sys/kernel/random/boot_id", "0b5e55ed-0000-4000-8000-00000000b027\n")
    for what in ("cpu", "memory"):
        w(root, f"/proc/pressure/{what}", "some avg10=0.50 avg60=0.20 avg300=0.05 total=4242\n"
          "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def readme(root, name, text):
    with open(os.path.join(root, "README"), "w") as f:
        f.write(f"Fixture host {name}: {text} Generated by ../generate_fleet.py.\n")


def fresh(name):
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    return root


AMD_FLAGS = "fpu sse2 ht rdt_a cat_l3 cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local mba"


def epyc(name, nps):
    """2 sockets x 8 CCDs (one L3 each) x 2 cores x SMT2; NPS1: a NUMA node per socket,
    NPS4: four per socket (two CCDs each)."""
    root = fresh(name)
    cores = []
    for c in range(32):
        socket = c // 16
        numa = socket if nps == 1 else c // 4
        cores.append(dict(socket=socket, core_id=c % 16, numa=numa, l3=c // 2))

    def distance(a, b):
        if a == b:
            return 10
        return 12 if (nps == 4 and a // 4 == b // 4) else 32

    total = machine(root, cores, 2, distance, mem_kb=33554432 if nps == 1 else 8388608)
    all_cpus = f"0-{total - 1}"
    pinned = "2-3,34-35"  # a whole CCD (L3 1): both cores with their siblings
    common(root, name, "v2" if nps == 1 else "v1", "systemd" if nps == 1 else "cgroupfs",
           "containerd", True, all_cpus, pinned)
    policy = "best-effort" if nps == 1 else "restricted"
    kubelet(root, f"cgroupDriver: {'systemd' if nps == 1 else 'cgroupfs'}\ncpuManagerPolicy: static\n"
            f"topologyManagerPolicy: {policy}\nreservedSystemCPUs: \"0,32\"\n"
            "cpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n"
            "  prefer-align-cpus-by-uncorecache: \"true\"\n"
            + ("topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n" if nps == 4 else ""),
            "0-1,4-33,36-63", pinned)
    resctrl_tree(root, list(range(16)),
                 mon=(["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"], 256),
                 l3=dict(cbm_mask="ffff", min_cbm_bits=1, num_closids=16, shareable_bits=0,
                         sparse_masks=1),
                 mb=dict(min_bandwidth=0, bandwidth_gran=1, delay_linear=0, num_closids=16, _max=2048))
    cpuinfo_x86(root, "AuthenticAMD", "AMD EPYC 7763 64-Core Processor", total, AMD_FLAGS)
    readme(root, name, f"AMD EPYC shape, 2 sockets x 8 CCDs (16 L3 of 32 MiB), NPS{nps} "
           f"({2 if nps == 1 else 8} NUMA nodes), SMT2 (siblings +32), cgroup "
           f"{'v2 systemd' if nps == 1 else 'v1 cgroupfs'}, resctrl with CMT/MBM per CCD, CAT "
           "(16 ways) and MBA in 1/8 GB/s; kubelet static with prefer-align-cpus-by-uncorecache.")


def intel_snc2(name):
    """2 sockets x 8 cores x SMT2, SNC-2: 4 NUMA nodes, one L3 per socket spanning two;
    resctrl monitoring split per SNC node (mon_sub_L3_<node>)."""
    root = fresh(name)
    cores = [dict(socket=c // 8, core_id=c % 8, numa=c // 4, l3=c // 8) for c in range(16)]

    def distance(a, b):
        if a == b:
            return 10
        return 12 if a // 2 == b // 2 else 21

    total = machine(root, cores, 2, distance, l3_size="61440K\n", l2_size="2048K\n")
    pinned = "4-5,20-21"  # NUMA node 1, the second SNC node of socket 0
    common(root, name, "v2", "systemd", "containerd", True, f"0-{total - 1}", pinned)
    kubelet(root, "cgroupDriver: systemd\ncpuManagerPolicy: static\n"
            "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n"
            "reservedSystemCPUs: \"0,16\"\ncpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n",
            "0-3,6-19,22-31", pinned)
    resctrl_tree(root, [0, 1],
                 mon=(["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"], 128),
                 sub={0: [0, 1], 1: [2, 3]},
                 l3=dict(cbm_mask="7fff", min_cbm_bits=1, num_closids=16, shareable_bits=0,
                         sparse_masks=0),
                 mb=dict(min_bandwidth=10, bandwidth_gran=10, delay_linear=1, num_closids=8,
                         thread_throttle_mode="max", _max=100),
                 mount_opts="mba_MBps")
    cpuinfo_x86(root, "GenuineIntel", "Intel(R) Xeon(R) Platinum 8480+", total,
                "fpu sse2 ht rdt_a cat_l3 cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local mba")
    readme(root, name, "Intel Xeon shape with SNC-2: 2 sockets x 8 cores x SMT2, 4 NUMA nodes, one "
           "60 MiB L3 per socket over two NUMA nodes, resctrl mounted with mba_MBps, monitoring "
           "per SNC node (mon_sub_L3_<node>), CAT 15 ways, MBA 8 CLOSIDs; kubelet single-numa-node.")


def arm_no_resctrl(name):
    """An Ampere Altra-like Arm server: 1 socket, 16 cores without SMT, no L3 in the
    cache information (the SLC is not described), no resctrl at all."""
    root = fresh(name)
    cores = [dict(socket=0, core_id=c, numa=0, l3=None) for c in range(16)]
    total = machine(root, cores, 1, lambda a, b: 10, mem_kb=67108864)
    pinned = "2-3"
    common(root, name, "v2", "systemd", "containerd", False, f"0-{total - 1}", pinned)
    kubelet(root, "cgroupDriver: systemd\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n",
            "0-1,4-15", pinned)
    cpuinfo_arm(root, "0xd0c", total)
    readme(root, name, "Arm Neoverse N1 shape: 1 socket, 16 cores, no SMT, no L3 in sysfs cacheinfo, "
           "no resctrl (no RDT; MPAM absent), cgroup v2 systemd.")


def arm_mpam(name):
    """A Neoverse V2 (Grace-like) server with the MPAM driver and resctrl glue: one L3 for
    the socket, allocation (cache portions, bandwidth max) but no monitors exposed."""
    root = fresh(name)
    cores = [dict(socket=0, core_id=c, numa=0, l3=0) for c in range(16)]
    total = machine(root, cores, 1, lambda a, b: 10, mem_kb=67108864, l3_size="117760K\n")
    pinned = "4-7"
    common(root, name, "v2", "systemd", "containerd", True, f"0-{total - 1}", pinned)
    kubelet(root, "cgroupDriver: systemd\ncpuManagerPolicy: static\n"
            "topologyManagerPolicy: best-effort\nreservedSystemCPUs: \"0\"\n", "0-3,8-15", pinned)
    resctrl_tree(root, [0], mon=None,
                 l3=dict(cbm_mask="fff", min_cbm_bits=1, num_closids=32, shareable_bits=0,
                         sparse_masks=1),
                 mb=dict(min_bandwidth=5, bandwidth_gran=5, delay_linear=1, num_closids=32,
                         _max=100))
    cpuinfo_arm(root, "0xd4f", total)
    readme(root, name, "Arm Neoverse V2 shape with MPAM: 1 socket, 16 cores, one 115 MiB L3, "
           "resctrl with info/L3 (cache portion bitmaps, 32 PARTIDs) and info/MB (max bandwidth "
           "in percent), no info/L3_MON (the kernel wires no MPAM monitors to resctrl).")


def v2_only(name):
    """A single-socket Intel host with only the unified hierarchy, cri-o, resctrl supported
    by the kernel but not mounted."""
    root = fresh(name)
    cores = [dict(socket=0, core_id=c, numa=0, l3=0) for c in range(8)]
    total = machine(root, cores, 2, lambda a, b: 10, l3_size="30720K\n")
    pinned = "2,10"
    common(root, name, "v2", "systemd", "cri-o", False, f"0-{total - 1}", pinned)
    w(root, "/proc/filesystems", "nodev\tsysfs\nnodev\tcgroup2\nnodev\tresctrl\n")
    kubelet(root, "cgroupDriver: systemd\ncpuManagerPolicy: static\n"
            "topologyManagerPolicy: single-numa-node\nreservedSystemCPUs: \"0,8\"\n"
            "cpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n  strict-cpu-reservation: \"true\"\n",
            "1,3-7,9,11-15", pinned)
    cpuinfo_x86(root, "GenuineIntel", "Intel(R) Xeon(R) E-2388G", total, "fpu sse2 ht")
    readme(root, name, "cgroup v2 only (no v1 hierarchy), systemd, cri-o, 1 socket x 8 cores x SMT2, "
           "resctrl supported but not mounted; kubelet with strict-cpu-reservation.")


FLEET = ["epyc-2s8ccd-nps1-v2-systemd-containerd", "epyc-2s8ccd-nps4-v1-cgroupfs-containerd",
         "intel-snc2-submon-v2-systemd-containerd", "arm-n1-noresctrl-v2-systemd-containerd",
         "arm-v2-mpam-v2-systemd-containerd", "v2only-nomount-systemd-crio"]

def keep_empty_dirs(root):
    """git keeps no empty directory: mark each with .gitkeep (the agent ignores it)."""
    for d, subdirs, files in os.walk(root):
        if not subdirs and not files:
            open(os.path.join(d, ".gitkeep"), "w").close()


if __name__ == "__main__":
    epyc(FLEET[0], 1)
    epyc(FLEET[1], 4)
    intel_snc2(FLEET[2])
    arm_no_resctrl(FLEET[3])
    arm_mpam(FLEET[4])
    v2_only(FLEET[5])
    for name in FLEET:
        keep_empty_dirs(os.path.join(HERE, name))
