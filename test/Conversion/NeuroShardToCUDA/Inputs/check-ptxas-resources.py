"""Checks `ptxas -v` output against the kernels' launch bounds.

Usage: check-ptxas-resources.py PTXAS_LOG KERNEL_ABI_HEADER

The register budget comes from KernelABI.h (the one owner of the launch
geometry): kMinBlocksPerMultiprocessor blocks of kThreadsPerBlock threads
must fit the multiprocessor's kRegistersPerMultiprocessor registers. Prints
one line per kernel and exits 1 if a kernel is over budget, spills or needs
a stack frame.
"""
import re
import sys


def constant(header, name):
    match = re.search(r"constexpr int64_t %s = (\d+);" % name, header)
    if not match:
        sys.exit("no constant %s in the header" % name)
    return int(match.group(1))


def main():
    log = open(sys.argv[1]).read()
    header = open(sys.argv[2]).read()
    threads = constant(header, "kThreadsPerBlock")
    blocks = constant(header, "kMinBlocksPerMultiprocessor")
    registers = constant(header, "kRegistersPerMultiprocessor")
    budget = registers // (threads * blocks)
    kernels = re.split(r"Compiling entry function '", log)[1:]
    if not kernels:
        sys.exit("no entry function in the ptxas log")
    failed = False
    for text in kernels:
        name = text.split("'", 1)[0]
        used = int(re.search(r"Used (\d+) registers", text).group(1))
        frame, stores, loads = map(int, re.search(
            r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
            r"(\d+) bytes spill loads", text).groups())
        problems = []
        if used > budget:
            problems.append("%d registers over the budget" % used)
        if stores or loads:
            problems.append("spills %d/%d bytes" % (stores, loads))
        if frame:
            problems.append("a %d-byte stack frame" % frame)
        failed |= bool(problems)
        print("%s: %d registers (budget %d for %d blocks of %d threads), "
              "%d bytes stack, %d/%d bytes spilled: %s" %
              (name, used, budget, blocks, threads, frame, stores, loads,
               "; ".join(problems) or "ok"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
