#===- metrics.py - Error and rank metrics of cost predictions -------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The numbers a cost model is judged by: the mean absolute percentage
error of its predictions, Kendall's tau between predicted and measured costs
(does the model order shard sets as the machine does?), and the mean and
standard deviation of the log error, which say how a plan's slowest device
strays from its prediction (the planner's expected slowest device).
Plain numpy, so that no scipy is needed."""

import math
from typing import Sequence, Tuple

import numpy as np


def _pair(what: str, predicted: Sequence[float],
          measured: Sequence[float]) -> Tuple[np.ndarray, np.ndarray]:
    """The two sequences as float arrays; fails, naming `what`, unless they
    are non-empty and of one length."""
    predicted = np.asarray(predicted, dtype=np.float64)
    measured = np.asarray(measured, dtype=np.float64)
    if predicted.shape != measured.shape or measured.size == 0:
        raise ValueError("%s needs two non-empty sequences of one length, "
                         "got %d and %d values" %
                         (what, predicted.size, measured.size))
    return predicted, measured


def mape(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Mean of |predicted - measured| / measured, as a fraction (0.05 is
    5%). Measured values must be positive."""
    predicted, measured = _pair("mape", predicted, measured)
    if not np.all(measured > 0):
        raise ValueError("mape needs positive measured values")
    return float(np.mean(np.abs(predicted - measured) / measured))


def log_error(predicted: Sequence[float], measured: Sequence[float]
              ) -> Tuple[float, float]:
    """(mean, standard deviation) of ln(measured / predicted): the mean is
    the model's bias (above 0: sets measure slower than predicted), the
    deviation its spread around it (0 with fewer than two values). Both
    sequences must be positive and of one non-zero length."""
    predicted, measured = _pair("log_error", predicted, measured)
    if not (np.all(measured > 0) and np.all(predicted > 0)):
        raise ValueError("log_error needs positive predicted and measured "
                         "values")
    logs = np.log(measured / predicted)
    spread = float(np.std(logs, ddof=1)) if logs.size > 1 else 0.0
    return float(np.mean(logs)), spread


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b: (concordant - discordant) / sqrt((n0 - n1)(n0 - n2))
    over all n0 = n(n-1)/2 pairs, where n1 and n2 count the pairs tied in x
    and in y. 1 for the same order, -1 for the reverse; NaN when x or y is
    constant. O(n^2) work in blocks of rows, which is fine for the few
    thousand held-out samples it is used on."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = x.size
    if x.shape != y.shape or n < 2:
        raise ValueError("kendall_tau needs two sequences of one length >= "
                         "2, got %d and %d values" % (x.size, y.size))
    score = tied_x = tied_y = 0
    block = max(1, 4_000_000 // n)
    columns = np.arange(n)
    for begin in range(0, n, block):
        end = min(n, begin + block)
        later = columns[None, :] > np.arange(begin, end)[:, None]
        dx = np.sign(x[None, :] - x[begin:end, None])
        dy = np.sign(y[None, :] - y[begin:end, None])
        score += int(np.sum((dx * dy)[later]))
        tied_x += int(np.sum((dx == 0) & later))
        tied_y += int(np.sum((dy == 0) & later))
    pairs = n * (n - 1) // 2
    denominator = math.sqrt(float(pairs - tied_x) * float(pairs - tied_y))
    if denominator == 0.0:
        return float("nan")
    return score / denominator
