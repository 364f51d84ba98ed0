#!/usr/bin/env python3
"""Runs a real memqd on a scratch git repository and records one request/response exchange per method, as the NDJSON
lines that went over the socket. The examples in docs/methods/*.md were captured with it.

Usage: capture_examples.py --bin BUILD_DIR/bin [--out examples.json]
Prints (or writes) {"method": [[request_line, response_line], ...], "notification": line}. Temporary paths are
rewritten to /home/me/src/app (the project) and /run/user/1000/memq/memqd.sock (the socket) so the examples read
like a real session.
"""
import argparse
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PROJECT = "/home/me/src/app"
SOCKET = "/run/user/1000/memq/memqd.sock"


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 1

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def call(self, method, params=None):
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params is not None:
            msg["params"] = params
        text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False)
        self.sock.sendall(text.encode() + b"\n")
        reply = self.line()
        return text, reply, json.loads(reply)


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="me", GIT_AUTHOR_EMAIL="me@example.com", GIT_COMMITTER_NAME="me",
               GIT_COMMITTER_EMAIL="me@example.com")
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def write(repo, path, text):
    p = repo / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def make_repo(repo):
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write(repo, "src/auth/jwt.ts", "export function verify() {}\n")
    write(repo, "src/auth/session.ts", "import { verify } from './jwt';\n")
    write(repo, "src/api/login.ts", "import { verify } from '../auth/jwt';\n")
    write(repo, "Makefile", "test:\n\tctest\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    for i in range(3):
        write(repo, "src/auth/jwt.ts", f"export function verify() {{ return {i}; }}\n")
        write(repo, "src/auth/session.ts", f"import {{ verify }} from './jwt';\n// {i}\n")
        git(repo, "commit", "-q", "-am", f"jwt and session {i}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="memq-ex-"))
    repo = tmp / "app"
    make_repo(repo)
    sock_path = str(tmp / "run" / "memqd.sock")
    daemon = subprocess.Popen([os.path.join(args.bin, "memqd"), "--foreground", "--socket", sock_path, "--data-dir",
                               str(tmp / "data"), "--log-level", "warn"])
    ex = {}
    try:
        for _ in range(200):
            if os.path.exists(sock_path):
                break
            time.sleep(0.05)
        a = Conn(sock_path)
        watcher = Conn(sock_path)

        def rec(conn, method, params=None, key=None):
            req, rep, parsed = conn.call(method, params)
            ex.setdefault(key or method, []).append([req, rep])
            return parsed

        root = str(repo)
        rec(watcher, "initialize", {"client_name": "editor", "project_root": root})
        rec(watcher, "subscribe", {"scopes": ["project"]})
        init = rec(a, "initialize", {"client_name": "claude-code", "client_version": "1.0.3", "project_root": root})
        rec(a, "hints/turn")
        saved = rec(a, "memory/save", {"summary": "JWT verify must check exp before signature",
                                       "category": "gotcha", "topics": ["auth", "jwt"],
                                       "files": ["src/auth/jwt.ts"]})
        gid = saved["result"]["id"]
        ex["notification"] = watcher.line()
        pref = rec(a, "memory/save", {"summary": "Run the tests with make test, not ctest directly",
                                      "category": "pref", "topics": ["testing"], "files": ["Makefile"],
                                      "source": "user"})
        pid = pref["result"]["id"]
        rec(a, "memory/save", {"summary": "Run the tests with make test, not ctest directly"}, key="memory/save#dedup")
        rec(a, "memory/get", {"id": gid[:8]})
        rec(a, "memory/get", {"id": "ffff"}, key="memory/get#notfound")
        rec(a, "memory/update", {"id": gid[:8], "details": "verify() used to accept expired tokens when the "
                                 "signature was valid; see PR 412.", "topics": ["auth", "jwt", "security"]})
        rec(a, "memory/list", {"category": "gotcha", "limit": 10})
        rec(a, "memory/search", {"query": "expired token", "limit": 5})
        rec(a, "memory/recall", {"query": "fix the login token check", "files": ["src/auth/session.ts"],
                                 "limit": 3})
        rec(a, "memory/recall", {"query": "jwt expiry", "explain": True, "limit": 1}, key="memory/recall#explain")
        rec(a, "memory/hide", {"id": pid[:8], "reason": "not relevant this week"})
        rec(a, "memory/restore", {"id": pid[:8]})
        rec(a, "memory/pin", {"id": pid[:8]})
        rec(a, "memory/unpin", {"id": pid[:8]})
        newer = rec(a, "memory/save", {"summary": "Run the tests with make test (it also runs the linters)",
                                       "category": "pref", "topics": ["testing"]})
        nid = newer["result"]["id"]
        rec(a, "memory/supersede", {"id": pid[:8], "by": nid[:8]})
        wrong = rec(a, "memory/save", {"summary": "Use npm for this repository", "category": "pref"})
        wid = wrong["result"]["id"]
        rec(a, "memory/reject", {"id": wid[:8], "reason": "we use pnpm"})
        rec(a, "memory/save", {"summary": "Use npm for this repository"}, key="memory/save#rejected")
        rec(a, "memory/unreject", {"id": wid[:8]}, key="memory/unreject#forbidden")
        rec(a, "memory/unreject", {"id": wid[:8], "source": "user"})
        rec(a, "memory/reject", {"id": wid[:8], "reason": "we use pnpm"}, key="memory/reject#again")
        rec(a, "memory/attach", {"id": gid[:8], "files": ["src/api/login.ts"]})
        rec(a, "memory/detach", {"id": gid[:8], "files": ["src/api/login.ts"]})
        rec(a, "hints/turn")
        rec(a, "hints/for_tool", {"tool": "edit", "files": ["src/auth/jwt.ts"]})
        rec(a, "repo/refresh")
        rec(a, "repo/cochange", {"file": "src/auth/jwt.ts", "limit": 5})
        rec(a, "repo/blast_radius", {"file": "src/auth/jwt.ts"})
        rec(a, "memory/save", {"summary": "JWT verification must check the exp claim before the signature",
                               "category": "gotcha"}, key="memory/save#similar")
        rec(a, "memory/save", {"summary": "The Makefile's test target wraps ctest with the integration label",
                               "category": "context", "files": ["Makefile"]}, key="memory/save#context")
        rec(a, "review/clusters", {"min_weight": 0.5})
        write(repo, "src/auth/jwt.ts", "export function verify(token: string) { return token; }\n")
        git(repo, "commit", "-q", "-am", "verify takes a token")
        rec(a, "review/stale", {"limit": 10})
        (repo / "Makefile").unlink()
        git(repo, "commit", "-q", "-am", "drop the Makefile")
        time.sleep(1.2)  # memqd re-reads HEAD at most once a second
        rec(a, "review/dead", {"limit": 10})
        rec(a, "audit/list", {"id": gid[:8], "limit": 5})
        exp = rec(a, "export", {"state": "rejected"})
        rec(a, "import", {"jsonl": exp["result"]["jsonl"], "scope": "global"})
        rec(a, "stats")
        rec(a, "daemon/status")
        rec(a, "memory/purge", {"id": wid[:8]}, key="memory/purge#forbidden")
        # The import above kept the id, so the prefix now names a memory in each scope; the full id picks the
        # project one (an exact id wins, project scope first).
        rec(a, "memory/purge", {"id": wid[:8], "confirm": True}, key="memory/purge#ambiguous")
        rec(a, "memory/purge", {"id": wid, "scope": "project", "confirm": True})
        # Protocol-level errors, for protocol.md.
        rec(a, "memory/sav", {"summary": "x"}, key="error#method")
        rec(a, "memory/save", {"sumary": "x"}, key="error#params")
        fresh = Conn(sock_path)
        rec(fresh, "hints/turn", key="hints/turn#notinitialized")
        rec(a, "daemon/shutdown")
        daemon.wait(timeout=10)
    finally:
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(timeout=10)
        text = json.dumps(ex, indent=1, ensure_ascii=False)
        text = text.replace(str(repo), PROJECT).replace(sock_path, SOCKET)
        text = text.replace(str(tmp / "data"), "/home/me/.local/share/memq")
        shutil.rmtree(tmp, ignore_errors=True)
        if args.out:
            pathlib.Path(args.out).write_text(text)
        else:
            print(text)


if __name__ == "__main__":
    sys.exit(main())
