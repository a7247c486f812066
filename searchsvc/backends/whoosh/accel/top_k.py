"""The best few of many scores, ties included: what a ranked page and the nearest records keep
before their exact order (score, then document number) is decided among the few."""

from __future__ import annotations

import numpy as np

# Every SAMPLE_STEP-th score is looked at first to bound the count-th best (best_positions).
SAMPLE_STEP = 8


def best_positions(scores: np.ndarray, count: int) -> np.ndarray:
    """The positions of every score at least the `count`-th best (ties included: maybe more
    than `count`), in position order; all of them when there are at most `count`."""
    if len(scores) <= count:
        return np.arange(len(scores))
    # The count-th best of a sample is at most the count-th best of all (the sample's best are
    # among all), so the scores at least it include the best `count`: a few times `count` of
    # them, found with one comparison, where a partition of every score costs five times that.
    sample = scores[::SAMPLE_STEP]
    if len(sample) > count:
        floor = np.partition(sample, len(sample) - count)[len(sample) - count]
        positions = np.flatnonzero(scores >= floor)
    else:
        positions = np.arange(len(scores))
    chosen = scores[positions]
    threshold = np.partition(chosen, len(chosen) - count)[len(chosen) - count]
    return positions[chosen >= threshold]
