"""A/B difference of CPU efficiency with a block bootstrap interval and a permutation p-value.

The statistic is the one efficiency definition (docs/architecture.md), a ratio of sums:

    efficiency(arm) = Σ cpu_seconds / Σ core_wall_seconds,   difference = efficiency(B) - efficiency(A)

(and the same for SLAC's CPU/wall with wall_seconds in the denominator).

Resampling unit: the block (by default the UTC hour of the job's end_time). Jobs that end in the
same hour share its conditions (what the cache holds, which files are hot, how loaded the origin
servers are), so they are not independent draws; resampling single jobs would make the interval
too narrow. Each block carries both arms' sums, so resampling blocks keeps the arms paired in time
(a paired block bootstrap, ``scipy.stats.bootstrap(paired=True)``). Hour blocks give hundreds of
units in a month, day blocks only ~30; pass coarser blocks (``block='day'`` in the dbt var) when
jobs run for many hours and neighbouring hours are strongly correlated.

The permutation test swaps the arm labels within blocks (``scipy.stats.permutation_test`` with
``permutation_type='samples'``): under "the arm makes no difference" the two arms of one hour are
exchangeable. Both use scipy's generators, seeded, so a rebuild gives the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Resamples of the bootstrap and of the permutation test (scipy's defaults are 9999).
N_RESAMPLES = 999
CONFIDENCE = 0.95


@dataclass(frozen=True)
class ABResult:
    blocks: int  # blocks with jobs of either arm
    paired_blocks: int  # blocks with jobs of both arms
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None


def _nan_to_none(x: float) -> float | None:
    x = float(x)
    return None if not np.isfinite(x) else x


def blocks_from_jobs(block_ids, arm_is_b, num, den) -> tuple[np.ndarray, ...]:
    """Per-block sums (num_a, den_a, num_b, den_b) from per-job arrays (any block labels)."""
    block_ids = np.asarray(block_ids)
    arm_is_b = np.asarray(arm_is_b, dtype=bool)
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    _, inv = np.unique(block_ids, return_inverse=True)
    k = int(inv.max()) + 1 if len(inv) else 0
    out = []
    for mask in (~arm_is_b, arm_is_b):
        out.append(np.bincount(inv[mask], weights=num[mask], minlength=k))
        out.append(np.bincount(inv[mask], weights=den[mask], minlength=k))
    return tuple(out)  # num_a, den_a, num_b, den_b


def ab_test(
    num_a,
    den_a,
    num_b,
    den_b,
    *,
    seed: int = 42,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    min_blocks: int = 3,
    permutation: bool = True,
) -> ABResult:
    """Difference Σnum_b/Σden_b - Σnum_a/Σden_a over blocks, its bootstrap CI and permutation p.

    Inputs are per-block sums (``blocks_from_jobs``). With fewer than ``min_blocks`` blocks, or
    an arm without any denominator, only the point estimate (or nothing) is returned.
    ``permutation=False`` skips the permutation test (p_value None): it costs about three times
    the bootstrap, scipy looping over the blocks.
    """
    arrays = [np.asarray(a, dtype=float) for a in (num_a, den_a, num_b, den_b)]
    na, da, nb, db = arrays
    n = len(na)
    blocks = int(np.count_nonzero((da > 0) | (db > 0)))
    paired = int(np.count_nonzero((da > 0) & (db > 0)))
    if da.sum() <= 0 or db.sum() <= 0:
        return ABResult(blocks, paired, None, None, None, None)
    diff = nb.sum() / db.sum() - na.sum() / da.sum()
    if n < min_blocks or paired < 2:
        return ABResult(blocks, paired, float(diff), None, None, None)

    def boot_stat(idx, axis=-1):
        idx = idx.astype(np.intp)
        with np.errstate(invalid="ignore", divide="ignore"):
            return nb[idx].sum(axis=axis) / db[idx].sum(axis=axis) - na[idx].sum(axis=axis) / da[idx].sum(axis=axis)

    rng = np.random.default_rng(seed)
    boot = stats.bootstrap(
        (np.arange(n, dtype=float),),
        boot_stat,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        batch=max(1, min(n_resamples, 2_000_000 // max(n, 1))),
        random_state=rng,
    )
    if not permutation:
        return ABResult(
            blocks,
            paired,
            float(diff),
            _nan_to_none(boot.confidence_interval.low),
            _nan_to_none(boot.confidence_interval.high),
            None,
        )
    # Permutation: swap arm A and arm B of a block (indices i and n + i into the stacked sums).
    num = np.concatenate([na, nb])
    den = np.concatenate([da, db])

    def perm_stat(x, y, axis=-1):
        x = x.astype(np.intp)
        y = y.astype(np.intp)
        with np.errstate(invalid="ignore", divide="ignore"):
            return num[y].sum(axis=axis) / den[y].sum(axis=axis) - num[x].sum(axis=axis) / den[x].sum(axis=axis)

    perm = stats.permutation_test(
        (np.arange(n, dtype=float), np.arange(n, 2 * n, dtype=float)),
        perm_stat,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        batch=max(1, min(n_resamples, 2_000_000 // max(n, 1))),
        random_state=np.random.default_rng(seed + 1),
    )
    return ABResult(
        blocks,
        paired,
        float(diff),
        _nan_to_none(boot.confidence_interval.low),
        _nan_to_none(boot.confidence_interval.high),
        _nan_to_none(perm.pvalue),
    )


def jain_index(values) -> float | None:
    """Jain's fairness index (Σx)² / (n Σx²): 1 when all equal, 1/n when one takes everything."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0 or not np.any(x):
        return None
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))
