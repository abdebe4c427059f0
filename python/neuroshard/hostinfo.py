#===- hostinfo.py - What machine measurements are taken on ---------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The description of a machine that a cost-model bundle records as its
"host" (docs/cost-model.md): the CPU model, its family and model numbers,
the vector instruction sets it has, the data caches of CPU 0 and the number
of logical CPUs,

  {"cpu_model": "AMD EPYC", "cpu_family": 25, "cpu_model_number": 1,
   "isa": ["avx", "avx2", "fma", "sse4_2"],
   "caches_kb": {"L1d": 32, "L2": 512, "L3": 32768}, "logical_cpus": 2}

A virtual machine's model name can be as vague as "AMD EPYC" for chips two
generations apart; the family and model numbers and the instruction sets
(from /proc/cpuinfo's "cpu family", "model" and "flags" lines; "isa" lists
which of ISA_FLAGS the flags name) tell them apart, and the C++ side
(hostCPUIdentity()) reads them the same way.

cpu_model is what the C++ side's hostCPUModel() (lib/Runtime/HostInfo.cpp)
reports, the value of the first "model name" line of /proc/cpuinfo, and is
what every sample's "hardware" field holds. The cache sizes come from
/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}, read as the
C++ hostCachesKB() reads them; a cache the machine does not report (e.g.
no L3) has no key. Every reader takes the
root of the file system as an argument, so that tests can point it at a
fake tree.
"""

import os
import re
from typing import Dict, Optional

UNKNOWN_CPU = "unknown CPU"
# The instruction-set flags that change how fast the kernels run.
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw",
             "avx512vl", "amx_tile")
# (level, type) of a sysfs cache entry -> its key in "caches_kb".
CACHE_KEYS = {(1, "Data"): "L1d", (2, "Unified"): "L2", (3, "Unified"): "L3"}
# KiB per unit of a sysfs cache size.
_SIZE_UNITS = {"K": 1, "M": 1 << 10, "G": 1 << 20}


def _path(root: str, absolute: str) -> str:
    return os.path.join(root, absolute.lstrip("/"))


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def cpu_model(root: str = "/") -> str:
    """The first "model name" value of /proc/cpuinfo with the blanks around
    it trimmed, like hostCPUModel(); "unknown CPU" if there is none."""
    text = _read(_path(root, "/proc/cpuinfo")) or ""
    for line in text.splitlines():
        if not line.startswith("model name"):
            continue
        _, colon, value = line.partition(":")
        value = value.strip(" \t")
        if colon and value:
            return value
    return UNKNOWN_CPU


def _first_value(text: str, key: str) -> Optional[str]:
    """The value of the first /proc/cpuinfo line whose key is `key`."""
    for line in text.splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip(" \t") == key:
            return value.strip(" \t")
    return None


def cpu_identity(root: str = "/") -> Dict:
    """{"cpu_family", "cpu_model_number", "isa"} from /proc/cpuinfo; a
    number it does not report is left out."""
    text = _read(_path(root, "/proc/cpuinfo")) or ""
    identity = {}
    for key, field in (("cpu family", "cpu_family"),
                       ("model", "cpu_model_number")):
        value = _first_value(text, key)
        if value is not None and value.isdigit():
            identity[field] = int(value)
    flags = set((_first_value(text, "flags") or "").split())
    identity["isa"] = [flag for flag in sorted(ISA_FLAGS) if flag in flags]
    return identity


def parse_cache_size(text: str) -> int:
    """KiB of a sysfs cache size: "32K" -> 32, "1024K" -> 1024, "32M" ->
    32768, "1G" -> 1048576 (a trailing newline aside). ValueError for
    anything else, as the C++ reader (hostCachesKB()) skips it."""
    match = re.fullmatch(r"(\d{1,12})([KMG])", text.rstrip("\n"))
    if not match:
        raise ValueError("not a cache size: %r" % text)
    return int(match.group(1)) * _SIZE_UNITS[match.group(2)]


def cache_sizes_kb(root: str = "/") -> Dict[str, int]:
    """{"L1d", "L2", "L3"} -> KiB for the caches CPU 0 reports, in that
    order; the first index of a (level, type) wins, unreadable or malformed
    entries are skipped."""
    directory = _path(root, "/sys/devices/system/cpu/cpu0/cache")
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    indices = sorted((int(n[5:]), n) for n in names
                     if re.fullmatch(r"index\d+", n))
    found = {}
    for _, name in indices:
        fields = {f: _read(os.path.join(directory, name, f))
                  for f in ("level", "type", "size")}
        if any(v is None for v in fields.values()):
            continue
        try:
            level = int(fields["level"].strip())
            size = parse_cache_size(fields["size"])
        except ValueError:
            continue
        key = CACHE_KEYS.get((level, fields["type"].strip()))
        if key is not None and key not in found:
            found[key] = size
    return {key: found[key] for key in ("L1d", "L2", "L3") if key in found}


def host_description(root: str = "/") -> Dict:
    """{"cpu_model", "cpu_family", "cpu_model_number", "isa", "caches_kb",
    "logical_cpus"} of this machine (the
    files under `root`; logical_cpus is always os.cpu_count())."""
    description = {"cpu_model": cpu_model(root)}
    description.update(cpu_identity(root))
    description["caches_kb"] = cache_sizes_kb(root)
    description["logical_cpus"] = os.cpu_count() or 1
    return description


def other_chip(recorded: Optional[Dict], root: str = "/") -> Optional[str]:
    """What differs between a bundle's recorded "host" and this machine
    among the CPU family, model number and instruction sets the bundle
    records ("cpu_family 26 there, 25 here"), or None when nothing does;
    the C++ side warns on the same differences."""
    if not isinstance(recorded, dict):
        return None
    here = cpu_identity(root)
    differences = []
    for field in ("cpu_family", "cpu_model_number"):
        if field in recorded and field in here and \
                recorded[field] != here[field]:
            differences.append("%s %s there, %s here" %
                               (field, recorded[field], here[field]))
    if isinstance(recorded.get("isa"), list) and \
            sorted(recorded["isa"]) != here["isa"]:
        differences.append("isa %s there, %s here" %
                           (" ".join(sorted(recorded["isa"])) or "none",
                            " ".join(here["isa"]) or "none"))
    return "; ".join(differences) or None
