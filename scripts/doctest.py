#!/usr/bin/python3
#===- doctest.py - Run the commands that README.md and docs/ show -------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Runs every shell command that README.md and docs/*.md show, as written.

Fences:
  ```sh      commands, run as one bash script under `set -eo pipefail`
             (comments and `\\` continuations are bash's own);
  ```console a transcript: lines that start with `$ ` (and their `\\`
             continuation lines) are run, the other lines are the output
             they must print, whitespace aside (a line with `...` stands
             for any lines). A command whose output shows an `error:` line
             must fail;
  ``` or ```text, ```mlir, ...: not run. An untagged block that starts with
             `$ ` or with what looks like a command is an error, so that a
             command cannot hide in an output fence.

Annotations: HTML comments on the lines right before a fence, one
directive each:
  <!-- doctest: skip REASON -->          do not run the block; the reason
                                         is printed and must not be empty
  <!-- doctest: env NAME=VALUE ... -->   set variables for the block
  <!-- doctest: replace 'OLD' 'NEW' -->  run the block with OLD replaced by
                                         NEW (to shrink inputs); OLD must
                                         occur in the block. A transcript
                                         so shrunk has its output unchecked
  <!-- doctest: varies 'TEXT' -->        in shown output lines holding
                                         TEXT (timings), numbers may differ
An annotation that matches nothing (a replace whose OLD is absent, a
varies whose TEXT no output line holds, one not followed by a fence that
runs) fails, so annotations cannot rot.

Each file runs in its own scratch copy of the repository's tracked files,
blocks in document order sharing it, with build/bin, build/lib and
build/share linked to the real build; anything else a command writes lands
in the copy. After each block, a tracked file that changed or vanished, or
a new file under models/, docs/ or examples/, fails the block: documented
commands must not overwrite what the repository ships. Commands run without
the caller's PYTHONPATH and NEUROSHARD_* variables, as a reader's shell
would.

Usage: /usr/bin/python3 scripts/doctest.py [--build-dir build] [FILE.md ...]
Prints PASS/SKIP/FAIL per block and one closing summary; exits 1 on any
failure.
"""

import argparse
import difflib
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_FENCES = {"sh", "bash", "console"}
LINKED_BUILD_DIRS = ("bin", "lib", "share")
SHIPPED_DIRS = ("models/", "docs/", "examples/")
# The first word of a line that is a command, for untagged blocks.
COMMAND_START = re.compile(
    r"^(\$ |build/bin/|bash |cmake |ctest |mpirun |mpiexec |PYTHONPATH=|"
    r"/usr/bin/python3 |for \w+ in )")
ANNOTATION = re.compile(r"^<!--\s*doctest:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")
CLEARED_ENV = re.compile(r"^(PYTHONPATH|NEUROSHARD_\w+)$")
TAIL_LINES = 40


class Block:
    def __init__(self, path, line, fence, lines, directives):
        self.path = path          # relative to the repository
        self.line = line          # line of the opening fence
        self.fence = fence
        self.lines = lines        # (line number, text) of the body
        self.directives = directives  # (line number, text)

    def where(self):
        return "%s:%d" % (self.path, self.line)


def parse(path):
    """Returns the fenced blocks of a markdown file and the errors found
    while reading it (annotations before nothing, commands in an untagged
    fence)."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        text = f.read().split("\n")
    blocks, errors = [], []
    pending = []
    i = 0
    while i < len(text):
        m = ANNOTATION.match(text[i])
        if m:
            pending.append((i + 1, m.group(1)))
            i += 1
            continue
        m = FENCE.match(text[i])
        if not m:
            if pending and text[i].strip():
                errors.append("%s:%d: doctest annotation not followed by a "
                              "fence" % (path, pending[0][0]))
                pending = []
            i += 1
            continue
        start, fence, body = i + 1, m.group(1), []
        i += 1
        while i < len(text) and not re.match(r"^```\s*$", text[i]):
            body.append((i + 1, text[i]))
            i += 1
        i += 1
        block = Block(path, start, fence, body, pending)
        pending = []
        if fence in RUN_FENCES:
            blocks.append(block)
        elif block.directives:
            errors.append("%s: doctest annotation on a ```%s block, which "
                          "is not run" % (block.where(), fence))
        elif fence in ("", "text"):
            first = next((t for _, t in body if t.strip()), "")
            if COMMAND_START.match(first):
                errors.append("%s: a command in a ```%s fence (use ```sh, "
                              "or ```console for a transcript)" %
                              (block.where(), fence))
    if pending:
        errors.append("%s:%d: doctest annotation not followed by a fence" %
                      (path, pending[0][0]))
    return blocks, errors


def transcript(block):
    """The commands of a ```console block: (line, command text, the output
    lines it shows)."""
    commands = []
    for number, text in block.lines:
        if text.startswith("$ "):
            commands.append((number, [text[2:]], []))
        elif commands and commands[-1][1][-1].endswith("\\"):
            commands[-1][1].append(text)
        elif commands:
            commands[-1][2].append(text)
    return [(n, "\n".join(c), o) for n, c, o in commands]


def console_script(block):
    """Bash for a transcript: each `$ ` command, its output kept in
    .doctest/LINE.out for the check, required to fail when its shown
    output has an `error:` line."""
    script = ["mkdir -p .doctest"]
    for number, command, output in transcript(block):
        out = ".doctest/%d.out" % number
        if any(re.search(r"\berror:", o) for o in output):
            script.append(
                "__doctest_line=%d\nif { %s\n} > %s 2>&1; then cat %s; echo "
                "'doctest: this command shows an error but succeeded' >&2; "
                "false; fi; cat %s" % (number, command, out, out, out))
        else:
            script.append("__doctest_line=%d\n{ %s\n} > %s 2>&1 || "
                          "{ status=$?; cat %s; (exit $status); }\ncat %s" %
                          (number, command, out, out, out))
    return script


def normalize(line, masked):
    line = " ".join(line.split())
    return re.sub(r"\d+(\.\d+)?", "N", line) if masked else line


def output_differences(block, scratch, varies):
    """Compares the output a transcript shows with what its commands print:
    line by line, whitespace aside; a line with `...` stands for any lines,
    and in a line holding a `varies` string the numbers may differ."""
    problems = []
    for number, _, shown in transcript(block):
        with open(os.path.join(scratch, ".doctest", "%d.out" % number),
                  errors="replace") as f:
            actual = f.read().rstrip("\n").split("\n")
        shown = list(shown)
        while shown and not shown[-1].strip():
            shown.pop()
        if not shown:
            continue
        pattern = []
        for line in shown:
            if "..." in line:
                pattern.append(".*?\n")
            else:
                masked = any(v in line for v in varies)
                pattern.append(re.escape(normalize(line, masked) + "\n"))
        text = "".join(normalize(a, any(v in a for v in varies)) + "\n"
                       for a in actual)
        if not re.fullmatch("(?s)" + "".join(pattern) +
                            ("" if "..." in shown[-1] else ".*"), text):
            diff = difflib.unified_diff(shown, actual, "shown", "printed",
                                        lineterm="")
            problems.append("%s:%d: the output differs from what the "
                            "document shows:\n%s" % (block.path, number,
                                                      "\n".join(diff)))
    return problems


def sh_script(block):
    """Bash for a block of commands: the body as written, with the line of
    each command recorded so that a failure names it."""
    script, continued, heredoc = [], False, None
    for number, text in block.lines:
        if heredoc is not None:
            script.append(text)
            if text.strip() == heredoc:
                heredoc = None
            continue
        command = text.strip() and not text.lstrip().startswith("#")
        if command and not continued:
            script.append("__doctest_line=%d" % number)
        script.append(text)
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", text)
        if m:
            heredoc = m.group(1)
        continued = re.search(r"(\\|\||&&)\s*$", text) is not None
    return script


def apply_directives(block, script):
    """Returns (script, env, skip reason, varies, errors) after the
    annotations."""
    env, skip, varies, errors = {}, None, [], []
    for number, text in block.directives:
        word, _, rest = text.partition(" ")
        rest = rest.strip()
        where = "%s:%d" % (block.path, number)
        if word == "skip":
            if not rest:
                errors.append("%s: `skip` needs a reason" % where)
            skip = rest
        elif word == "env":
            for item in shlex.split(rest):
                name, eq, value = item.partition("=")
                if not eq or not re.match(r"^[A-Za-z_]\w*$", name):
                    errors.append("%s: `env` takes NAME=VALUE, not '%s'" %
                                  (where, item))
                env[name] = value
        elif word == "replace":
            args = shlex.split(rest)
            if len(args) != 2:
                errors.append("%s: `replace` takes 'OLD' 'NEW'" % where)
                continue
            old, new = args
            if old not in script:
                errors.append("%s: replace: '%s' does not occur in the block"
                              % (where, old))
            script = script.replace(old, new)
        elif word == "varies":
            args = shlex.split(rest)
            shown = "\n".join(o for _, _, out in transcript(block)
                              for o in out)
            if block.fence != "console" or len(args) != 1:
                errors.append("%s: `varies` takes 'TEXT', on a ```console "
                              "block" % where)
            elif args[0] not in shown:
                errors.append("%s: varies: '%s' is in no output line the "
                              "block shows" % (where, args[0]))
            varies += args
        else:
            errors.append("%s: unknown doctest directive '%s'" % (where, word))
    return script, env, skip, varies, errors


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True,
                         capture_output=True).stdout.decode()
    return [p for p in out.split("\0")
            if p and os.path.isfile(os.path.join(REPO, p))]


def make_scratch(files, build_dir):
    scratch = tempfile.mkdtemp(prefix="neuroshard-doctest-")
    for p in files:
        os.makedirs(os.path.join(scratch, os.path.dirname(p)), exist_ok=True)
        shutil.copy2(os.path.join(REPO, p), os.path.join(scratch, p))
    os.makedirs(os.path.join(scratch, "build"), exist_ok=True)
    for d in LINKED_BUILD_DIRS:
        if os.path.isdir(os.path.join(build_dir, d)):
            os.symlink(os.path.join(build_dir, d),
                       os.path.join(scratch, "build", d))
    return scratch


def digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def shipped_state(scratch, files):
    state = {p: digest(os.path.join(scratch, p)) for p in files}
    extra = set()
    for d in SHIPPED_DIRS:
        for root, dirs, names in os.walk(os.path.join(scratch, d)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for n in names:
                extra.add(os.path.relpath(os.path.join(root, n), scratch))
    return state, extra - set(files)


def changes(before, after, block):
    """Names each shipped file the block changed, with the command lines
    that mention it."""
    (old, old_new), (new, new_new) = before, after
    found = [(p, "overwrites" if new[p] else "deletes")
             for p in old if old[p] != new[p]]
    found += [(p, "creates") for p in sorted(new_new - old_new)]
    messages = []
    for p, what in found:
        lines = [n for n, t in block.lines if p in t]
        messages.append("%s %s %s%s" % (block.where(), what, p,
                        " (line %s)" % ", ".join(map(str, lines))
                        if lines else ""))
    return messages


def run_block(block, scratch, timeout, files):
    script = console_script(block) if block.fence == "console" else \
        sh_script(block)
    script, extra_env, skip, varies, errors = apply_directives(
        block, "\n".join(script))
    if errors:
        return "FAIL", "\n".join(errors)
    if skip is not None:
        return "SKIP", skip
    env = {k: v for k, v in os.environ.items() if not CLEARED_ENV.match(k)}
    env.update(extra_env)
    prologue = ("set -eo pipefail\n"
                "trap 'echo \"doctest: the command at %s:$__doctest_line "
                "exited with status $?\" >&2' ERR\n" % block.path)
    before = shipped_state(scratch, files)
    # A session of its own, so that a block past its time is stopped with
    # everything it started (mpirun's ranks, the tools a script runs).
    process = subprocess.Popen(["bash", "-c", prologue + script], cwd=scratch,
                               env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        rc = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        output += b"\ndoctest: the block ran past %d s" % timeout
        rc = -1
    output = output.decode(errors="replace")
    problems = changes(before, shipped_state(scratch, files), block)
    # A transcript run on shrunk inputs prints other figures than it shows.
    shrunk = any(t.startswith("replace") for _, t in block.directives)
    if rc == 0 and block.fence == "console" and not shrunk:
        problems += output_differences(block, scratch, varies)
    if rc != 0:
        lines = output.rstrip("\n").split("\n")
        problems.append("\n".join(lines[-TAIL_LINES:]))
    if problems:
        return "FAIL", "\n".join(problems)
    return "PASS", None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                        help="the build whose bin/, lib/ and share/ the "
                             "commands use (default: build/)")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds one block may run (default 300)")
    parser.add_argument("files", nargs="*",
                        help="markdown files relative to the repository "
                             "(default: README.md and docs/*.md)")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    if not os.path.isdir(os.path.join(build_dir, "bin")):
        print("doctest: error: no bin/ in the build directory '%s'" %
              build_dir, file=sys.stderr)
        return 1
    docs = args.files or ["README.md"] + sorted(
        os.path.join("docs", n) for n in os.listdir(os.path.join(REPO, "docs"))
        if n.endswith(".md"))
    files = tracked_files()
    counts = {"PASS": 0, "SKIP": 0, "FAIL": 0}
    started = time.time()
    for doc in docs:
        blocks, errors = parse(doc)
        for e in errors:
            print("FAIL %s" % e, flush=True)
            counts["FAIL"] += 1
        if not blocks:
            continue
        scratch = make_scratch(files, build_dir)
        try:
            for block in blocks:
                t0 = time.time()
                status, detail = run_block(block, scratch, args.timeout, files)
                counts[status] += 1
                if status == "SKIP":
                    print("SKIP %s (%s)" % (block.where(), detail), flush=True)
                elif status == "PASS":
                    print("PASS %s (%.1f s)" % (block.where(),
                                                time.time() - t0), flush=True)
                else:
                    print("FAIL %s\n%s" % (block.where(), detail), flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    print("doctest: %.0f s" % (time.time() - started))
    print("%d passed, %d skipped, %d failed" %
          (counts["PASS"], counts["SKIP"], counts["FAIL"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
