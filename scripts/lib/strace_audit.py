#!/usr/bin/env python3
"""Reads an `strace -f -y -v` log and reports what the traced processes did outside
the places they may touch. Used by scripts/ort-isolation-test.sh.

usage: strace_audit.py LOG --cwd DIR --allow DIR [--allow DIR ...]

The log must come from
  strace -f -qq -y -v -s 4096 -e trace=execve,clone,clone3,fork,vfork,chdir,fchdir,
         network,open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,link,
         linkat,symlink,symlinkat,unlink,unlinkat,rmdir,truncate
started in DIR (--cwd). It reports, one line each, and exits 1 if there is any:
  network   any network system call (socket, connect, sendto, ...) of any process,
            except glibc's name-service lookups: a local (AF_UNIX) socket that
            connects only to the name service cache (nscd) or systemd's user
            database (`getpwuid` and friends do that where nsswitch.conf says so);
            a local socket connected anywhere else is reported
  write     a file or directory created, opened for writing, truncated, renamed,
            linked or removed outside every --allow directory (and /dev/null)
  telemetry a process that loaded ONNX Runtime (libonnxruntime*.so or the Python
            binding's onnxruntime_pybind11_state*.so) while its environment did not
            hold ORT_DISABLE_TELEMETRY=1
Paths are resolved as the kernel did: `-y` annotates descriptors and AT_FDCWD with
their paths, and each process's working directory is followed through chdir and
inherited through clone/fork, for the calls that take a plain relative path.
Environments are taken from each execve and inherited the same way.
"""
import argparse
import os
import re
import sys

LINE = re.compile(r"^(\d+)\s+(.*)$")
CALL = re.compile(r"^([a-z0-9_]+)\((.*)\)\s+=\s+(-?\d+|\?)(.*)$")
STR = r'"((?:[^"\\]|\\.)*)"'
DIRFD = r"(?:AT_FDCWD|\d+)(?:<([^>]*)>)?"
FD_PATH = re.compile(r"^<([^>]*)>")
NETWORK = {
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto",
    "sendmsg", "sendmmsg", "recvfrom", "recvmsg", "recvmmsg", "getsockname", "getpeername",
    "setsockopt", "getsockopt", "shutdown",
}
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")
# Local sockets glibc's name service (getpwnam, getgrgid, ...) connects to: nscd's and
# systemd-userdb's. Nothing leaves the machine through them.
NAME_SERVICE = re.compile(r"^(/var)?/run/(nscd/socket|systemd/userdb/[^/]+)$")
SOCKET_INODE = re.compile(r"^\d+<(?:socket|UNIX(?:-STREAM)?):\[(\d+)")
SUN_PATH = re.compile(r'sun_path=' + STR)
ORT_LIBRARY = re.compile(r"(^|/)(libonnxruntime[^/]*\.so[^/]*|onnxruntime_pybind11_state[^/]*\.so)$")


def unescape(s):
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode(
        "utf-8", "replace"
    )


def strings(args):
    return [unescape(m) for m in re.findall(STR, args)]


def join_lines(path):
    """Yields (pid, text) with strace's unfinished/resumed halves put back together."""
    pending = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue
            pid, text = int(m.group(1)), m.group(2)
            if text.endswith("<unfinished ...>"):
                pending[pid] = text[: -len("<unfinished ...>")].rstrip()
                continue
            r = re.match(r"^<\.\.\. [a-z0-9_]+ resumed>\s?(.*)$", text)
            if r:
                text = pending.pop(pid, "") + r.group(1)
            yield pid, text


def name_service(name, args, ret, tail, local_sockets):
    """True for a call of glibc's name-service lookup: creating a local socket, or
    using one whose every address (if any) is a name-service socket."""
    if name == "socket":
        ino = SOCKET_INODE.match(f"{ret}{tail.strip()}")
        if args.startswith("AF_UNIX,") and ino:
            local_sockets.add(ino.group(1))
            return True
        return False
    ino = SOCKET_INODE.match(args)
    if not ino or ino.group(1) not in local_sockets:
        return False
    paths = [unescape(m) for m in SUN_PATH.findall(args)]
    if all(NAME_SERVICE.match(p) for p in paths):
        return True
    local_sockets.discard(ino.group(1))
    return False


class Proc:
    def __init__(self, cwd, env):
        self.cwd, self.env = cwd, env


def resolve(base, p):
    return os.path.normpath(p if p.startswith("/") else os.path.join(base, p))


def audit(log, cwd, allow):
    allow = [os.path.normpath(a) for a in allow] + ["/dev/null"]
    procs = {}
    local_sockets = set()  # inodes of AF_UNIX sockets that only ever reached the name service
    first = None
    findings = []

    def inside(path):
        return any(path == a or path.startswith(a + "/") for a in allow)

    def proc(pid):
        nonlocal first
        if pid not in procs:
            # The first process seen is the traced command; any other unknown pid is
            # a thread or child whose clone line came later: it shares its start.
            procs[pid] = Proc(cwd, dict(os.environ)) if first is None else Proc(
                procs[first].cwd, dict(procs[first].env)
            )
            first = first or pid
        return procs[pid]

    for pid, text in join_lines(log):
        p = proc(pid)
        m = CALL.match(text)
        if not m:
            continue
        name, args, ret, tail = m.group(1), m.group(2), m.group(3), m.group(4)
        ok = ret != "?" and not ret.startswith("-")
        if name in NETWORK:
            if not name_service(name, args, ret, tail, local_sockets):
                findings.append(f"network   pid {pid}: {text[:300]}")
            continue
        if not ok:
            continue
        if name in ("clone", "clone3", "fork", "vfork"):
            child = int(ret)
            procs[child] = Proc(p.cwd, dict(p.env))
        elif name == "execve":
            env = {}
            arrays = re.findall(r"\[(.*?)\](?=,|$)", args)
            if len(arrays) >= 2:
                for kv in strings(arrays[-1]):
                    k, _, v = kv.partition("=")
                    env[k] = v
                p.env = env
        elif name == "chdir":
            p.cwd = resolve(p.cwd, strings(args)[0])
        elif name == "fchdir":
            d = re.match(r"^\d+<([^>]*)>", args)
            if d:
                p.cwd = d.group(1)
        elif name in ("open", "openat", "creat"):
            fd = FD_PATH.match(tail.strip())
            target = fd.group(1) if fd else None
            if target and ORT_LIBRARY.search(target) and p.env.get("ORT_DISABLE_TELEMETRY") != "1":
                findings.append(f"telemetry pid {pid}: loaded {target} without ORT_DISABLE_TELEMETRY=1")
            writes = name == "creat" or any(flag in args for flag in WRITE_FLAGS)
            if writes and target and not inside(target):
                findings.append(f"write     pid {pid}: {name} {target}")
        elif name in (
            "mkdir", "mkdirat", "rename", "renameat", "renameat2", "link", "linkat",
            "symlink", "symlinkat", "unlink", "unlinkat", "rmdir", "truncate",
        ):
            for path in touched(name, args, p.cwd):
                if not inside(path):
                    findings.append(f"write     pid {pid}: {name} {path}")
    return findings


def touched(name, args, cwd):
    """The paths a name-changing call creates or removes (a link's target is only read)."""
    if name.endswith("at") or name == "renameat2":
        pairs = re.findall(DIRFD + r",\s*" + STR, args)
        paths = [resolve(d or cwd, unescape(s)) for d, s in pairs]
        if name == "symlinkat":
            # symlinkat(target, newdirfd, linkpath): only the link is made.
            return paths[-1:]
        if name == "linkat":
            return paths[1:]
        return paths
    paths = [resolve(cwd, s) for s in strings(args)]
    if name in ("symlink", "link"):
        return paths[1:]
    return paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--allow", action="append", default=[])
    a = ap.parse_args()
    findings = audit(a.log, a.cwd, a.allow)
    seen = set()
    for f in findings:
        if f not in seen:
            seen.add(f)
            print(f)
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
