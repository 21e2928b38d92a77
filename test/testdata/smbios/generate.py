#!/usr/bin/env python3
"""Writes SMBIOS memory-device fixtures: /sys/firmware/dmi/entries/17-N/raw
trees, byte for byte as the kernel exposes each type 17 structure (formatted
area, then its NUL-terminated strings, then one more NUL). Layouts follow the
SMBIOS reference specification (DSP0134, Memory Device); the locator strings
follow what these kinds of servers print in `dmidecode -t 17`.
Rerun after editing:  python3 test/testdata/smbios/generate.py
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

DDR4, DDR5, RAM = 0x1A, 0x22, 0x07
DRAM_TECH, OPTANE_TECH = 0x03, 0x07


def device(handle, locator, bank, size_mib, mem_type, speed, configured, data_width=64,
           total_width=72, length=0x5C, technology=DRAM_TECH, ext_speed=0, ext_configured=0):
    """One type 17 structure of `length` bytes (0x22: SMBIOS 2.7, 0x28: 2.8,
    0x54: 3.2, 0x5C: 3.3)."""
    strings = [locator, bank, "Samsung", "0001", "Tag", "M321R4GA3BB6-CQK"]
    size = size_mib if size_mib < 0x7FFF else 0x7FFF
    ext_size = size_mib if size_mib >= 0x7FFF else 0
    body = struct.pack(
        "<BBHHHHHHBBBBBHHBBBBBIHHHH",
        17, length, handle, 0x1000, 0xFFFE, total_width, data_width, size,
        0x09, 0, 1, 2, mem_type, 0x0080, speed, 3, 4, 5, 6, 0x02, ext_size,
        configured, 1100, 1100, 1100)
    # 3.2: technology, operating modes, firmware, ids (8 bytes), 4 sizes (32 bytes).
    body += struct.pack("<BHB", technology, 0x0004, 0) + bytes(8)
    body += struct.pack("<QQQQ", 0, size_mib << 20, 0, 0)
    body += struct.pack("<II", ext_speed, ext_configured)
    body = body[:length].ljust(length, b"\0")
    return body + b"".join(s.encode() + b"\0" for s in strings) + b"\0"


def write(tree, entries):
    root = os.path.join(HERE, tree)
    shutil.rmtree(root, ignore_errors=True)
    for i, raw in enumerate(entries):
        path = os.path.join(root, "sys/firmware/dmi/entries", f"17-{i}")
        os.makedirs(path)
        with open(os.path.join(path, "raw"), "wb") as f:
            f.write(raw)
    # Another structure type beside them, which the reader must skip.
    other = os.path.join(root, "sys/firmware/dmi/entries/16-0")
    os.makedirs(other)
    with open(os.path.join(other, "raw"), "wb") as f:
        f.write(bytes([16, 0x17]) + bytes(0x15) + b"\0\0")


# Two sockets, 8 DDR5 channels each, one 32 GiB RDIMM per channel at 4800 MT/s
# (rated 5600), the second slot of every channel empty:
# 16 x 4800e6 x 8 B = 614.4 GB/s.
intel = []
for cpu in range(2):
    for ch in "ABCDEFGH":
        intel.append(device(0x1100 + len(intel), f"CPU{cpu}_DIMM_{ch}1", f"NODE {cpu}", 32768,
                            DDR5, 5600, 4800, total_width=80))
        intel.append(device(0x1100 + len(intel), f"CPU{cpu}_DIMM_{ch}2", f"NODE {cpu}", 0,
                            DDR5, 0, 0, total_width=80))
write("intel-2s-ddr5", intel)

# One EPYC socket, 8 DDR4 channels with two DIMMs each (2DPC runs at 2933):
# 8 channels x 2933e6 x 8 B = 187.7 GB/s. SMBIOS 3.2 (no extended speeds).
amd = []
for ch in "ABCDEFGH":
    for slot in range(2):
        amd.append(device(0x0030 + len(amd), f"DIMM {slot}", f"P0 CHANNEL {ch}", 65536, DDR4,
                          3200, 2933, length=0x54))
write("amd-1s-ddr4-2dpc", amd)

# MRDIMMs faster than 65534 MT/s do not exist yet, but 0xFFFF in the speed
# fields means "see the extended field" all the same; these name no channel
# ("PROC 1 DIMM 3"), so each counts as one. Plus an Optane module, left out.
hpe = [
    device(0x0100, "PROC 1 DIMM 1", "Not Specified", 65536, DDR5, 0xFFFF, 0xFFFF,
           ext_speed=8800, ext_configured=8800, total_width=80),
    device(0x0101, "PROC 1 DIMM 3", "Not Specified", 65536, DDR5, 0xFFFF, 0xFFFF,
           ext_speed=8800, ext_configured=8800, total_width=80),
    device(0x0102, "PROC 1 DIMM 5", "Not Specified", 131072, DDR4, 3200, 3200,
           technology=OPTANE_TECH),
]
write("extended-speed-no-channels", hpe)

# What QEMU/KVM guests expose: "RAM", no speed.
write("vm-no-speed", [device(0x1100, "DIMM 0", "Not Specified", 24576, RAM, 0, 0,
                             length=0x28)])

# One good DDR4 module and one structure whose length runs past its bytes.
bad = device(0x0002, "DIMM_B1", "Not Specified", 16384, DDR4, 3200, 3200)
write("one-corrupt-entry", [
    device(0x0001, "DIMM_A1", "Not Specified", 16384, DDR4, 3200, 3200),
    bytes([17, 0xF0]) + bad[2:20],
])
