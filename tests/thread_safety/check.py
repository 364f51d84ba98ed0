#!/usr/bin/env python3
"""ThreadSafetyAnalysis: compiles every .cc under daemon/ with clang's thread-safety analysis (-Wthread-safety and
-Wthread-safety-beta) as errors.

The annotations (daemon/util/thread_annotations.h) say which mutex guards which field; GCC ignores them, so this
check is what holds the code to them. Each file is compiled with -fsyntax-only and the include paths and defines its
build uses (from compile_commands.json), two at a time. Fails when a file has a violation, when clang is missing,
or when a .cc under daemon/ is not in the build (so a new file is never skipped).

usage: check.py BUILD_DIR SOURCE_DIR
"""
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys

ANALYSIS_FLAGS = ["-fsyntax-only", "-std=c++20", "-Wthread-safety", "-Wthread-safety-beta", "-Werror"]


def build_flags(command):
    """The include paths and defines of one compile command."""
    args = shlex.split(command)
    flags = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-I", "-isystem", "-D", "-iquote"):
            flags += [a, args[i + 1]]
            i += 2
            continue
        if a.startswith(("-I", "-D", "-isystem", "-iquote")):
            flags.append(a)
        i += 1
    return flags


def main():
    build_dir, source_dir = sys.argv[1], os.path.realpath(sys.argv[2])
    clang = os.environ.get("CLANGXX") or shutil.which("clang++")
    if not clang:
        print("clang++ not found (Debian package clang)", file=sys.stderr)
        return 1
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    daemon = os.path.join(source_dir, "daemon")
    commands = {}
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if path.startswith(daemon + os.sep) and path.endswith(".cc"):
            command = e.get("command") or " ".join(shlex.quote(a) for a in e["arguments"])
            commands[path] = (e["directory"], build_flags(command))
    sources = sorted(os.path.join(d, n) for d, _, names in os.walk(daemon) for n in names if n.endswith(".cc"))
    missing = [s for s in sources if s not in commands]
    if missing:
        print("not in the build (compile_commands.json): " + ", ".join(missing), file=sys.stderr)
        return 1

    def check(path):
        directory, flags = commands[path]
        run = subprocess.run([clang, *ANALYSIS_FLAGS, *flags, path], cwd=directory, capture_output=True, text=True)
        return path, run.returncode, run.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for path, code, stderr in pool.map(check, sources):
            if code != 0:
                failed += 1
                sys.stderr.write(stderr)
                print("FAILED: " + os.path.relpath(path, source_dir), file=sys.stderr)
    print(f"{len(sources) - failed} of {len(sources)} files pass clang's thread-safety analysis")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
