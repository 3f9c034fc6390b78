#!/usr/bin/env python3
"""Where a silent test VM's cpus are: samples each vCPU's instruction pointer
through QEMU's monitor and names the guest kernel function it is in, from the
guest's own /proc/kallsyms (guest.sh leaves a copy in the results share).

    vcpus.py MONITOR_SOCKET KALLSYMS [SAMPLES]

A guest whose cpus all spin with interrupts off says nothing on its console
(no soft lockup report can run), so this is the only way to see it.
"""
import bisect
import collections
import re
import socket
import sys
import time


def load_symbols(path):
    addrs, names = [], []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in "tT":
                    addrs.append(int(parts[0], 16))
                    names.append(parts[2] + (" " + parts[3] if len(parts) > 3 else ""))
    except OSError:
        pass
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def name_of(rip, addrs, names):
    if rip < 0xFFFF800000000000:
        return "user space"
    i = bisect.bisect_right(addrs, rip) - 1
    if i < 0:
        return hex(rip)
    return f"{names[i]}+{rip - addrs[i]:#x}"


def ask(sock, command):
    sock.sendall(command.encode() + b"\n")
    out = b""
    sock.settimeout(2.0)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            out += chunk
            if out.rstrip().endswith(b"(qemu)"):
                break
    except socket.timeout:
        pass
    return out.decode(errors="replace")


def main():
    monitor, kallsyms = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    addrs, names = load_symbols(kallsyms)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(monitor)
    ask(sock, "")  # the banner
    # the monitor echoes the command with line editing; keep its answer
    for line in ask(sock, "info cpus").splitlines():
        if "CPU #" in line:
            print(line.strip())
    seen = collections.defaultdict(collections.Counter)
    for _ in range(samples):
        text = ask(sock, "info registers -a")
        for cpu, rip in re.findall(r"CPU#(\d+)\s*\n\s*RAX=.*?RIP=([0-9a-f]+)", text, re.S):
            seen[int(cpu)][name_of(int(rip, 16), addrs, names)] += 1
        time.sleep(0.5)
    for cpu in sorted(seen):
        print(f"cpu {cpu}, {samples} samples:")
        for where, count in seen[cpu].most_common(8):
            print(f"  {count:3d}  {where}")


if __name__ == "__main__":
    main()
