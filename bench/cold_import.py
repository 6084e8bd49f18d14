#!/usr/bin/env python3
"""How long `import torch` takes from a cold page cache, and whether reading torch's shared
libraries in parallel while it imports shortens that.

The page cache is emptied for the files of torch's site-packages (torch, nvidia, triton, ...)
with posix_fadvise(DONTNEED), which needs no privilege and drops only clean, unmapped pages;
residency is checked with mincore before each cold run. Each case runs `import torch` in a fresh
interpreter (`python -X importtime` off, wall clock around the import only).

  case first      the page cache as found (cold on a fresh machine)
  case warm       everything cached (the second import)
  case cold       evicted, nothing else running
  case all_so     evicted; meanwhile N threads read every .so under torch/lib and nvidia/*/lib
  case touched    evicted; meanwhile N threads read the .so files the cold import mapped
  case willneed_all_so  evicted; posix_fadvise(WILLNEED) on every .so of all_so
  case willneed_pages   evicted; WILLNEED on just the .so pages a cold import left in the cache
  case willneed_every_page  evicted; WILLNEED on every page of site-packages a cold import left

Usage: python3 bench/cold_import.py [--python PY] [--threads N] [--repeat R] [--cases a,b]
"""
import argparse
import ctypes
import ctypes.util
import mmap
import os
import subprocess
import sys
import threading
import time

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PAGE = os.sysconf("SC_PAGE_SIZE")


def site_dir(python):
    out = subprocess.run([python, "-c", "import importlib.util as u, os; "
                          "print(os.path.dirname(os.path.dirname(u.find_spec('torch').origin)))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def files_under(root):
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                yield p


def resident_ranges(path):
    """[(offset, length)] of the file's pages in the page cache."""
    size = os.path.getsize(path)
    if size == 0:
        return []
    pages = (size + PAGE - 1) // PAGE
    vec = ctypes.create_string_buffer(pages)
    fd = os.open(path, os.O_RDONLY)
    try:
        p = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if p in (None, ctypes.c_void_p(-1).value):
            return []
        try:
            if libc.mincore(p, size, vec) != 0:
                return []
        finally:
            libc.munmap(p, size)
    finally:
        os.close(fd)
    out, start = [], None
    for i, b in enumerate(vec.raw + b"\0"):
        if b & 1 and start is None:
            start = i
        elif not b & 1 and start is not None:
            out.append((start * PAGE, (i - start) * PAGE))
            start = None
    return out


def resident_bytes(path):
    """Bytes of the file in the page cache (0 where it cannot be read)."""
    try:
        return sum(n for _, n in resident_ranges(path))
    except OSError:
        return 0


def will_need(ranges):
    """posix_fadvise(WILLNEED) on (path, offset, length) ranges: the kernel queues the reads."""
    for path, off, length in ranges:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, off, length, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(fd)


def evict(paths):
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_all(paths, threads):
    """Reads the files with `threads` readers (largest first); returns (bytes, seconds)."""
    todo = sorted(paths, key=lambda p: -os.path.getsize(p))
    lock = threading.Lock()
    total = [0]

    def worker():
        buf = bytearray(8 << 20)
        while True:
            with lock:
                if not todo:
                    return
                p = todo.pop(0)
            with open(p, "rb", buffering=0) as f:
                while True:
                    n = f.readinto(buf)
                    if not n:
                        break
                    with lock:
                        total[0] += n

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    return ts, total, t0


def import_once(python):
    code = ("import time, os; t = time.perf_counter(); import torch; "
            "d = time.perf_counter() - t; "
            "maps = sorted({l.split()[-1] for l in open('/proc/self/maps') "
            "if len(l.split()) >= 6 and l.split()[-1].startswith('/')}); "
            "print(d); print('\\n'.join(maps))")
    t0 = time.perf_counter()
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    lines = out.stdout.splitlines()
    return float(lines[0]), wall, lines[1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cases", default="cold,all_so,touched,willneed_all_so,willneed_pages,"
                    "willneed_every_page", help="the cold cases to run, comma-separated")
    args = ap.parse_args()
    site = site_dir(args.python)
    tops = [os.path.join(site, d) for d in os.listdir(site)]
    every = [p for t in tops for p in (files_under(t) if os.path.isdir(t) else [t])]
    every = [p for p in every if os.path.isfile(p)]
    sos = [p for p in every if ".so" in os.path.basename(p) and
           (os.sep + "torch" + os.sep + "lib" + os.sep in p or os.sep + "nvidia" + os.sep in p)]
    gib = lambda b: b / 2**30
    print(f"site-packages {site}: {len(every)} files, {gib(sum(map(os.path.getsize, every))):.2f} "
          f"GiB; {len(sos)} .so under torch/lib and nvidia: "
          f"{gib(sum(map(os.path.getsize, sos))):.2f} GiB")

    imp, wall, _ = import_once(args.python)
    print(f"first: import {imp:.2f} s (process {wall:.2f} s), the page cache as found")
    imp, wall, maps = import_once(args.python)
    print(f"warm: import {imp:.2f} s (process {wall:.2f} s)")
    mapped = [p for p in maps if p.startswith(site) and ".so" in p]
    print(f"the import maps {len(mapped)} files of site-packages, "
          f"{gib(sum(map(os.path.getsize, mapped))):.2f} GiB")

    def cold_case(name, prefetch=None, advise=None):
        evict(every)
        left = sum(resident_bytes(p) for p in sos)
        threads, extra = None, ""
        if prefetch:
            threads, total, t0 = read_all(prefetch, args.threads)
        if advise:
            t0 = time.perf_counter()
            adviser = threading.Thread(target=will_need, args=(advise,))
            adviser.start()
        imp, wall, _ = import_once(args.python)
        if threads:
            for t in threads:
                t.join()
            extra = (f"; prefetch read {gib(total[0]):.2f} GiB in "
                     f"{time.perf_counter() - t0:.2f} s with {args.threads} threads")
        if advise:
            adviser.join()
            extra = (f"; WILLNEED on {gib(sum(r[2] for r in advise)):.2f} GiB, advice given in "
                     f"{time.perf_counter() - t0:.2f} s")
        touched = sum(resident_bytes(p) for p in mapped)
        print(f"{name}: import {imp:.2f} s (process {wall:.2f} s); {gib(left):.2f} GiB of the .so "
              f"files resident before; {gib(touched):.2f} GiB of the mapped files resident after"
              f"{extra}", flush=True)

    cold_case("cold")
    # what a cold import leaves in the page cache: the pages it needs (plus kernel readahead)
    needed = [(p, off, n) for p in mapped for off, n in resident_ranges(p)]
    # ... and of every file of site-packages (the .py/.pyc it read too): an ideal prefetch
    needed_all = [(p, off, n) for p in every for off, n in resident_ranges(p)]
    print(f"a cold import reads {gib(sum(r[2] for r in needed_all)):.2f} GiB from "
          f"{len({r[0] for r in needed_all})} files of site-packages", flush=True)
    cases = {
        "cold": {},
        "all_so": {"prefetch": sos},
        "touched": {"prefetch": mapped},
        "willneed_all_so": {"advise": [(p, 0, os.path.getsize(p)) for p in sos]},
        "willneed_pages": {"advise": needed},
        "willneed_every_page": {"advise": needed_all},
    }
    for r in range(args.repeat):
        for name in args.cases.split(","):
            cold_case(f"{name}[{r}]", **cases[name])

if __name__ == "__main__":
    main()
