"""The rules a table's description and a device topology obey.

This is the Python statement of include/neuroshard/Sharding/TableRules.h, for
the front end, which writes tables before any C++ reader sees them. Each
check returns None when the value is allowed, or what is wrong with it in
the very words the C++ rules use; a caller prefixes the thing checked
("'sparse.user': "). tests/test_table_rules.py holds both statements to one
wording by running the C++ readers on the same broken values.
"""

import math
from typing import Optional, Sequence

NUM_ACCESS_BINS = 17
COLUMN_ALIGNMENT = 4
ACCESS_HISTOGRAM_TOLERANCE = 0.01
MAX_TABLE_GB = 1 << 16
MAX_DEVICE_GB = 1 << 20
MAX_DEVICES = 1 << 16
MAX_POOLING_FACTOR = 1e6
BYTES_PER_GB = float(1 << 30)
ELEMENT_TYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def _number(value: float) -> str:
    """A number as C's %g prints it ('0.8', 'nan', '-1')."""
    return "%g" % value


def format_gb(num_bytes: float) -> str:
    """Twin of neuroshard::formatGB with no extra digits."""
    gb = num_bytes / BYTES_PER_GB
    if gb >= 1e9:
        return "%.2e GB" % gb
    if gb >= 10.0:
        return "%.1f GB" % gb
    if gb >= 1.0:
        return "%.2f GB" % gb
    return "%#.3g GB" % gb


def check_table_name(name: str) -> Optional[str]:
    problem = "'name' must be valid UTF-8 without control characters"
    # A lone surrogate is what the C++ JSON reader turns into U+FFFD.
    encoded = "".join("\ufffd" if 0xd800 <= ord(c) <= 0xdfff else c
                      for c in name).encode("utf-8")
    for offset, byte in enumerate(encoded):
        if byte < 0x20 or byte == 0x7f:
            return "%s, got byte 0x%02x at offset %d" % (problem, byte, offset)
    replacement = encoded.find("\ufffd".encode("utf-8"))
    if replacement >= 0:
        return ("%s, got U+FFFD (a lone UTF-16 surrogate or invalid text in "
                "the input) at offset %d" % (problem, replacement))
    return None


def check_element_type(element_type: str) -> Optional[str]:
    if element_type in ELEMENT_TYPE_BYTES:
        return None
    return "'dtype' must be one of f32, f16, bf16, got '%s'" % element_type


def check_rows(rows: int) -> Optional[str]:
    if rows > 0:
        return None
    return "'rows' must be positive, got %d" % rows


def check_dim(dim: int) -> Optional[str]:
    if dim > 0 and dim % COLUMN_ALIGNMENT == 0:
        return None
    return "'dim' must be a positive multiple of %d, got %d" % (
        COLUMN_ALIGNMENT, dim)


def check_table_bytes(rows: int, dim: int, element_bytes: int
                      ) -> Optional[str]:
    num_bytes = float(rows) * float(dim) * float(element_bytes)
    if num_bytes <= MAX_TABLE_GB * BYTES_PER_GB:
        return None
    return "needs %s, more than the %d GB a table may have" % (
        format_gb(num_bytes), MAX_TABLE_GB)


def check_pooling_factor(pooling_factor: float) -> Optional[str]:
    if not math.isfinite(pooling_factor) or pooling_factor < 0.0:
        return "'pooling_factor' must be a finite number >= 0, got %s" % (
            _number(pooling_factor))
    if pooling_factor > MAX_POOLING_FACTOR:
        return "'pooling_factor' must be at most %s, got %s" % (
            _number(MAX_POOLING_FACTOR), _number(pooling_factor))
    return None


def check_access_histogram(bins: Sequence[float]) -> Optional[str]:
    if len(bins) != NUM_ACCESS_BINS:
        return "'access_hist' must have %d bins, got %d" % (NUM_ACCESS_BINS,
                                                           len(bins))
    total = 0.0
    for number, value in enumerate(bins):
        if not math.isfinite(value) or value < 0.0:
            return ("'access_hist' bin %d must be a finite number >= 0, "
                    "got %s" % (number, _number(value)))
        total += value
    if total == 0.0 or abs(total - 1.0) <= ACCESS_HISTOGRAM_TOLERANCE:
        return None
    return ("'access_hist' must sum to 1 (or be all zero for a table never "
            "hit), got %s" % _number(total))


def _fewest_hits(bin_index: int) -> float:
    return 1.0 if bin_index == 0 else math.ldexp(1.0, bin_index - 1) + 1.0


def _most_hits(bin_index: int) -> float:
    if bin_index + 1 == NUM_ACCESS_BINS:
        return math.inf
    return math.ldexp(1.0, bin_index)


def _bin_meaning(bin_index: int) -> str:
    if bin_index == 0:
        return "rows hit once"
    if bin_index + 1 == NUM_ACCESS_BINS:
        return "rows hit more than %s times" % _number(
            _fewest_hits(bin_index) - 1)
    if bin_index == 1:
        return "rows hit twice"
    return "rows hit %s to %s times" % (_number(_fewest_hits(bin_index)),
                                        _number(_most_hits(bin_index)))


def check_access_histogram_for_batch(bins: Sequence[float], rows: int,
                                     pooling_factor: float,
                                     batch_size: int) -> Optional[str]:
    """Twin of checkAccessHistogramForBatch: the histogram of one batch of
    batch_size bags must be one that batch can produce."""
    lookups = float(batch_size) * pooling_factor
    batch = "a batch of %d bags with pooling factor %s makes" % (
        batch_size, _number(pooling_factor))
    lookup_text = "%.0f" % lookups
    slack = 1.0 + ACCESS_HISTOGRAM_TOLERANCE
    highest = None
    most_per_row = 0.0
    for bin_index, fraction in enumerate(bins):
        if fraction <= 0.0:
            continue
        highest = bin_index
        most_per_row += fraction * _most_hits(bin_index)
    if highest is None:
        if lookups < 1.0:
            return None
        return ("'access_hist' is all zero (a table never hit), but %s %s "
                "lookups" % (batch, lookup_text))
    # batch * pooling_factor is a mean and a batch makes a whole number of
    # lookups: the ceiling against a bin's fewest hits, the floor against
    # the rows' most.
    if _fewest_hits(highest) > math.ceil(lookups) * slack:
        return ("'access_hist' bin %d (%s) is %s, but %s only %s lookups" %
                (highest, _bin_meaning(highest), _number(bins[highest]),
                 batch, lookup_text))
    most_lookups = float(rows) * most_per_row
    if math.floor(lookups) > most_lookups * slack:
        return ("'access_hist' lets the table's %d rows take at most %.0f "
                "lookups (at most %s hits per distinct row), but %s %s; a "
                "histogram describes one batch of the task's batch size" %
                (rows, most_lookups, "%.4g" % most_per_row, batch,
                 lookup_text))
    return None


def check_pinned_device(device: int, num_devices: int) -> Optional[str]:
    if 0 <= device < num_devices:
        return None
    if device < 0:
        return "'pinned_device' must be non-negative, got %d" % device
    return "'pinned_device' is %d but there %s only %d device%s" % (
        device, "is" if num_devices == 1 else "are", num_devices,
        "" if num_devices == 1 else "s")


def check_device_count(num_devices: int) -> Optional[str]:
    if 1 <= num_devices <= MAX_DEVICES:
        return None
    return "the device count must be between 1 and %d, got %d" % (
        MAX_DEVICES, num_devices)


def check_capacity_gb(gb: float) -> Optional[str]:
    if 0.0 < gb <= MAX_DEVICE_GB:
        return None
    return ("memory capacity must be a positive number of GB up to %d, "
            "got %s" % (MAX_DEVICE_GB, _number(gb)))
