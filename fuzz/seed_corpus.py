#!/usr/bin/env python3
"""Builds the seed corpus of every fuzz target from the test fixtures.

    fuzz/seed_corpus.py --source . --out build/fuzz/fuzz/seeds \
        --report-seeds build/fuzz/fuzz/neighborly_fuzz_report_seeds

Writes OUT/<target>/<sha1 of content>: the fixture files a parser reads in
production (sysfs, cgroup, resctrl and kubelet files of the captured hosts in
test/testdata/hosts, the extender request fixtures, scenarios, configs),
directory names for the name parsers, a few hand-written edge cases, and
valid protobuf NodeReports written by --report-seeds. OUT is emptied first.
"""
import argparse
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HOSTS = "test/testdata/hosts"

# target -> basenames of fixture files under test/testdata/hosts to take.
FILES_BY_NAME = {
    "cpu_list_fuzzer": {"cpulist", "online", "shared_cpu_list", "cpuset.cpus.effective",
                        "cpuset.effective_cpus", "cpuset.cpus"},
    "topology_text_fuzzer": {"meminfo", "distance", "size"},
    "cgroup_stat_fuzzer": {"cpu.stat", "memory.numa_stat", "cpu.pressure", "memory.pressure",
                           "cgroup.threads", "tasks"},
    "mount_table_fuzzer": {"mounts", "mountinfo"},
    "resctrl_text_fuzzer": {"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"},
    "kubelet_state_json_fuzzer": {"cpu_manager_state", "memory_manager_state"},
    "kubelet_config_fuzzer": {"config.yaml", "kubelet-config.yaml", "cmdline"},
}

# Hand-written edge cases, beside the fixtures.
INLINE = {
    "cpu_list_fuzzer": ["0-3,8,10-11\n", "", "\n", "0", "65535", "0-65535", "3-1", "1,,2",
                        " 0-1 \n"],
    "quantity_fuzzer": ["500m", "2", "4Gi", "1.5G", "1e3", "0.1", "100Ki", "1E", "-1",
                        "9223372036854775807", "8Ei", "1n", "0.5u", "+1.5e-3"],
    "host_port_fuzzer": ["0.0.0.0:8888", "[::1]:0", "localhost:9090", ":8080", "[::]:65535"],
    "topology_text_fuzzer": ["Node 0 MemTotal:       16384 kB\n", "MemTotal: 16384 kB\n",
                             "10 21\n", "36608K\n", "32M\n", "1G\n", "4096\n"],
    "cgroup_stat_fuzzer": [
        "usage_usec 123\nuser_usec 100\nsystem_usec 23\n",
        "anon N0=4096 N1=0\nfile N0=8192 N1=4096\n",
        "total=3 N0=1 N1=2\nhierarchical_total=30 N0=10 N1=20\n",
        "some avg10=1.50 avg60=0.00 avg300=0.00 total=10\n"
        "full avg10=0.25 avg60=0.00 avg300=0.00 total=5\n",
        "1\n2\n3\n"],
    "mount_table_fuzzer": [
        "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "36 31 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n"
        "37 31 0:34 / /sys/fs/resctrl rw - resctrl resctrl rw\n",
        "cgroup2 /host/sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n"],
    "resctrl_text_fuzzer": ["123\n", "Unavailable\n", "Error\n", "Unassigned\n", "mon_L3_05",
                            "mon_L3_100", "mon_sub_L3_02", "mon_MB_00"],
    "cgroup_names_fuzzer": [
        "kubepods-burstable-pod6f1c0e1a_0000_4000_8000_000000000001.slice",
        "pod6f1c0e1a-0000-4000-8000-000000000001",
        "cri-containerd-" + "a" * 64 + ".scope", "crio-" + "b" * 64 + ".scope",
        "docker-" + "c" * 64 + ".scope", "c" * 64,
        "content_article-service-5d8f7-abcde_6f1c0e1a-0000-4000-8000-000000000001"],
    "extender_config_fuzzer": ["", "http:\n  address: 127.0.0.1:0\n",
                               "model:\n  membwHeadroom: 0.8\n"],
    # Edit programs (see report_mutation_fuzzer.cc); the empty one is the base report.
    "report_mutation_fuzzer": ["", "\x00", "\x03\x00\x05", "\x0b\x03\x01\x02",
                               "\x0c\x00\x00\x07\x03\x01"],
    "extender_request_fuzzer": ['{"Pod":{"metadata":{"name":"p","uid":"u"}},"NodeNames":["a","b"]}',
                                '{}', '[]', 'null'],
}


def put(out_dir, target, content):
    if isinstance(content, str):
        content = content.encode()
    directory = os.path.join(out_dir, target)
    os.makedirs(directory, exist_ok=True)
    name = hashlib.sha1(content).hexdigest()
    with open(os.path.join(directory, name), "wb") as f:
        f.write(content)


def placement_seeds():
    """FilterRequests (neighborly.placement.v1) in protobuf wire format."""
    def varint(n):
        n &= (1 << 64) - 1
        out = b""
        while True:
            byte = n & 0x7F
            n >>= 7
            if n:
                out += bytes([byte | 0x80])
            else:
                return out + bytes([byte])

    def field(number, value):
        if isinstance(value, int):
            return varint(number << 3) + varint(value)
        if isinstance(value, str):
            value = value.encode()
        return varint(number << 3 | 2) + varint(len(value)) + value

    def entry(number, key, value):
        return field(number, field(1, key) + field(2, value))

    def container(cpu_req=None, cpu_lim=None, mem_req=None, mem_lim=None):
        out = field(1, "c")
        for number, v in ((2, cpu_req), (3, cpu_lim), (4, mem_req), (5, mem_lim)):
            if v is not None:
                out += field(number, v)
        return out

    lc = (field(1, "u-lc") + field(2, "content") + field(3, "article")
          + entry(5, "neighborly.io/class", "latency-critical")
          + field(6, field(1, "ReplicaSet") + field(2, "article-5d8f7") + field(3, 1))
          + field(7, container(4000, 4000, 4 << 30, 4 << 30)) + field(9, "Guaranteed"))
    batch = (field(1, "u-batch") + field(2, "analytics") + field(3, "scan")
             + entry(4, "workload-type", "batch")
             + entry(5, "neighborly.io/membw-bytes-per-second", "22.1G")
             + field(7, container(2000, None, 4 << 30, 8 << 30))
             + field(8, container(3000, None, 1 << 30, None)))
    yield field(1, lc)
    yield field(1, lc) + field(2, "node-1") + field(2, "node-2") + field(2, "node-9")
    yield field(1, batch) + field(2, "node-2") + field(2, "node-1")
    yield field(1, field(1, "u") + field(2, "ns") + field(3, "p") + field(7, container()))


def perf_seeds():
    """Two CPUs' group reads (2 events) at the start and end of a window."""
    def read(enabled, running, values):
        words = [len(values), enabled, running]
        for i, v in enumerate(values):
            words += [v, 1000 + i]
        return words
    start = read(100, 100, [10, 20]) + read(100, 50, [5, 6])
    end = read(200, 200, [30, 60]) + read(300, 150, [15, 16])
    yield bytes([2]) + struct.pack("<%dQ" % len(start + end), *(start + end))
    yield bytes([0]) + struct.pack("<6Q", 0, 1, 1, 0, 2, 2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--report-seeds",
                        help="neighborly_fuzz_report_seeds binary (without: no report seeds)")
    args = parser.parse_args()
    src, out = args.source, args.out
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)

    hosts = os.path.join(src, HOSTS)
    for root, dirs, files in os.walk(hosts):
        for d in dirs:
            # Names the agent parses: cgroup directories, /var/log/pods entries,
            # resctrl mon_data domains.
            if "/sys/fs/cgroup" in root or root.endswith("/var/log/pods"):
                put(out, "cgroup_names_fuzzer", d)
            if d.startswith("mon_"):
                put(out, "resctrl_text_fuzzer", d)
        for f in files:
            for target, names in FILES_BY_NAME.items():
                if f in names:
                    with open(os.path.join(root, f), "rb") as fh:
                        put(out, target, fh.read())

    def put_files(target, paths):
        for p in paths:
            with open(os.path.join(src, p), "rb") as fh:
                put(out, target, fh.read())

    extender = "test/testdata/extender"
    put_files("extender_request_fuzzer",
              [os.path.join(extender, f) for f in sorted(os.listdir(os.path.join(src, extender)))
               if f.endswith(".json")])
    put_files("extender_config_fuzzer", ["deploy/extender/extender.yaml"])
    scenarios = ["test/testdata/scenarios/" + f
                 for f in sorted(os.listdir(os.path.join(src, "test/testdata/scenarios")))]
    put_files("scenario_fuzzer", scenarios + ["deploy/examples/content-platform.yaml"])

    for target, items in INLINE.items():
        for item in items:
            put(out, target, item)
    for seed in placement_seeds():
        put(out, "placement_request_fuzzer", seed)
    for seed in perf_seeds():
        put(out, "perf_group_read_fuzzer", seed)

    if not args.report_seeds:
        print("no --report-seeds: report_validation_fuzzer gets no seeds", file=sys.stderr)
    else:
        write_report_seeds(src, out, args.report_seeds)

    for target in sorted(os.listdir(out)):
        print("%-28s %4d seeds" % (target, len(os.listdir(os.path.join(out, target)))))


def write_report_seeds(src, out, binary):
    with tempfile.TemporaryDirectory() as tmp:
        valid = [os.path.join(src, p) for p in
                 ("test/testdata/scenarios/two-nodes.yaml", "deploy/examples/content-platform.yaml")]
        result = subprocess.run([binary, tmp] + valid)
        if result.returncode != 0:
            sys.exit("report seeds failed")
        for f in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, f), "rb") as fh:
                put(out, "report_validation_fuzzer", fh.read())


if __name__ == "__main__":
    main()
