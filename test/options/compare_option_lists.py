#===- compare_option_lists.py - The planning options of every front end ---===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Checks that the planning options reach every front end.

The planning pass's options (`PlanOptions` in
include/neuroshard/Transforms/Passes.td) are the one description of what a
plan can be asked for. neuroshard-plan takes each as a flag of the same
spelling and Python's neuroshard.plan as a keyword with '_' for '-'. A front
end may add options of its own only where this file says why; an option
added to one front end and not the others fails here, naming it.

Usage: compare_option_lists.py NEUROSHARD_OPT NEUROSHARD_PLAN
"""

import re
import subprocess
import sys

# What one front end takes that the pass has no use for, and why.
TOOL_ONLY = {
    "format": "what to write: the pass leaves that to --neuroshard-export-plan",
    "output": "the file to write, as --neuroshard-export-plan's output",
    "plot": "a picture of the plan, as --neuroshard-export-plan format=svg",
    "price": "a plan to price instead of searching: --neuroshard-import-plan",
    "verbose": "a row per table in the table format",
}
PYTHON_ONLY = {
    "task": "the task itself, the tool's positional argument",
    "format": TOOL_ONLY["format"],
    "price": TOOL_ONLY["price"],
    "verbose": TOOL_ONLY["verbose"],
    "interconnect-gbps": "the former name of intra-node-gbps, kept for "
                         "callers of earlier releases",
}
# Pass options that Python does not take, and why.
NOT_IN_PYTHON = {
    "progress": "a line per search step on standard error, for terminals",
    "model-warnings": "Python returns the warnings in the plan's 'warnings' "
                      "instead of emitting them",
}
# The command line's own options.
LLVM_OPTIONS = {"help", "help-list", "version"}


def help_text(tool):
    return subprocess.run([tool, "--help"], check=True, capture_output=True,
                          text=True).stdout


def pass_options(opt):
    """The options --neuroshard-plan lists in neuroshard-opt --help."""
    options, inside = set(), False
    for line in help_text(opt).splitlines():
        option = re.match(r"^(\s+)--([a-z0-9-]+)", line)
        if not option:
            continue
        if option.group(2) == "neuroshard-plan":
            inside, depth = True, len(option.group(1))
        elif inside and len(option.group(1)) > depth:
            options.add(option.group(2))
        elif inside:
            break
    return options


def tool_options(plan):
    """The flags neuroshard-plan --help lists."""
    return {m.group(1) for m in re.finditer(r"^\s+--([a-z0-9-]+)",
                                            help_text(plan), re.M)}


def python_keywords():
    """The keywords of neuroshard.plan, from the signature pybind11 writes
    first in the C++ function's docstring, spelled with '-'."""
    import neuroshard
    first = neuroshard._core.plan.__doc__.lstrip().split("\n", 1)[0]
    return {name.replace("_", "-")
            for name in re.findall(r"[(,]\s*(\w+)\s*:", first)}


def compare(what, have, expected, extras):
    """Lines naming what `what` lacks of `expected` and what it has beyond
    it and `extras`."""
    problems = ["%s lacks the planning option '%s'" % (what, name)
                for name in sorted(expected - have)]
    problems += ["%s has '%s', which the planning pass lacks: add it to "
                 "PlanOptions (Passes.td) or say why here" % (what, name)
                 for name in sorted(have - expected - set(extras))]
    return problems


def main():
    opt, plan = sys.argv[1:3]
    planning = pass_options(opt)
    if not planning:
        sys.exit("error: neuroshard-opt --help lists no options of "
                 "--neuroshard-plan")
    problems = compare("neuroshard-plan", tool_options(plan) - LLVM_OPTIONS,
                       planning, TOOL_ONLY)
    problems += compare("neuroshard.plan", python_keywords(),
                        planning - set(NOT_IN_PYTHON), PYTHON_ONLY)
    for problem in problems:
        print("error: " + problem)
    if problems:
        sys.exit(1)
    print("%d planning options in the pass, neuroshard-plan and "
          "neuroshard.plan" % len(planning))


if __name__ == "__main__":
    main()
