"""Every shared object trainprof builds loads with dlopen into a process that
already used up glibc's static TLS surplus (as `import torch` does).

A library with any initial-exec TLS access is flagged STATIC_TLS, and then its
*whole* TLS block must fit in that surplus. The check: each .so given on the
command line has a TLS segment of at most LIMIT bytes (readelf -lW), and
loading it with ctypes in a process that first imported torch works when
torch is importable.
"""
import ctypes
import os
import re
import subprocess
import sys

LIMIT = 512  # bytes; "a few hundred bytes" of static TLS at most


def tls_size(path):
    out = subprocess.run(["readelf", "-lW", path], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "TLS":
            return int(f[5], 16)  # MemSiz
    return 0


def main(paths):
    failed = 0
    for p in paths:
        size = tls_size(p)
        ok = size <= LIMIT
        print(f"{p}: TLS segment {size} bytes (limit {LIMIT}) {'ok' if ok else 'TOO LARGE'}")
        failed += not ok
    if os.environ.get("TP_SANITIZE"):
        # A sanitizer-built library cannot be dlopen'ed into an uninstrumented
        # python (the sanitizer runtime must come first); the TLS sizes above
        # are what matters and the release suite does the dlopen.
        print(f"TP_SANITIZE={os.environ['TP_SANITIZE']}: dlopen part skipped")
        return 1 if failed else 0
    try:
        import torch  # noqa: F401  (fills the static TLS surplus first)
        have_torch = True
    except ImportError:
        have_torch = False
        print("torch not importable here: dlopen-after-torch part skipped")
    for p in paths:
        try:
            ctypes.CDLL(p)
            print(f"{p}: dlopen {'after import torch ' if have_torch else ''}ok")
        except OSError as e:
            print(f"{p}: dlopen failed: {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or not all(re.search(r"\.so", a) for a in sys.argv[1:]):
        sys.exit("usage: check_tls.py LIB.so...")
    sys.exit(main(sys.argv[1:]))
