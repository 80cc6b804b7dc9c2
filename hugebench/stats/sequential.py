"""Confidence sequences for ``hugebench try``: intervals whose 95 % holds however often they are looked at
and whichever configuration they end up crowning.

What belongs here: the one interval try's decisions and verdict rest on, pure and vectorised (numpy only).
What does not: when to look or what to run (:mod:`.schedule`), what the answer says (:mod:`.verdict`).

The method: a **confidence sequence for the median of the paired ratios** ``r_i = config_i / as-is_i`` (one
pair per interleaved block), by the beta-binomial mixture of Howard & Ramdas, "Sequential estimation of
quantiles with applications to A/B-testing and best-arm identification", Bernoulli 28(3), 2022 (the
conjugate-mixture boundary of Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Ann. Statist. 49(2), 2021; Robbins' mixture, 1970). For a candidate
median ``m``, the indicators ``1{r_i <= m}`` are fair coins when ``m`` is the true median, so

    E_n(m) = 2**n * B(a + k, a + n - k) / B(a, a),   k = #{i <= n : r_i <= m}

is a nonnegative martingale with mean 1 (a Beta(a, a) mixture over the coin's bias); by Ville's inequality
it ever reaches ``1/alpha`` with probability at most ``alpha``. The confidence sequence is every ``m`` with
``E_n(m) < 1/alpha``: an interval between two order statistics of the ratios, valid at every ``n`` at once
(so looking after each block and stopping when it excludes 1 costs nothing) and **distribution-free**: it
needs only pairs that are independent with a continuous ratio, not normal or unimodal runs — this machine's
huge-page runs are bimodal (docs/try.md). ``a = 1/2`` (Jeffreys) resolves soonest at the sample sizes try
reaches: all of 7 pairs on one side at 95 %, all of 11 at 95 % / 12.

The selection among K configurations uses ``alpha / K`` for each (Bonferroni): every selection-phase
interval holds simultaneously, so a "resolved worse" or "better" claimed there holds whichever
configuration wins. The winner is then confirmed on fresh pairs at ``alpha`` (one hypothesis, chosen before
those pairs were run): its effect and interval are the confirmation's.

The verdict reports one interval, :func:`deployment_interval`: the confirmation's sequence widened for a
deployment timed in another window (a check's own noise, and the drift seen between this try's blocks,
:func:`drift_sd`); it contains the sequence, so stopping on it keeps the sequence's guarantee.

confseq (the authors' library, PyPI 0.0.11, 2023) was not used: it builds C++ against Boost and does not
install here (Python 3.11, no Boost headers).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

ALPHA = 0.05  # the error rate of every interval try reports (95 %)
PRIOR = 0.5  # a of the Beta(a, a) mixture (Jeffreys): the fewest pairs to resolve at n = 7..30


def _log_mixture(n: int, k: int, a: float = PRIOR) -> float:
    """log E_n for k of n indicators set (the beta-binomial mixture against a fair coin)."""
    lbeta = lambda x, y: math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)  # noqa: E731
    return lbeta(a + k, a + n - k) - lbeta(a, a) + n * math.log(2.0)


@lru_cache(maxsize=4096)
def accept_range(n: int, alpha: float = ALPHA) -> tuple[int, int]:
    """The counts ``k`` of ratios at or below a candidate median that keep it in the sequence at ``n``
    pairs: ``k_lo <= k <= k_hi`` (``E_n < 1/alpha``; symmetric, ``k_lo = n - k_hi``)."""
    limit = math.log(1.0 / alpha)
    ok = [k for k in range(n + 1) if _log_mixture(n, k) < limit]
    return (ok[0], ok[-1]) if ok else (n // 2, n // 2)  # never empty: n >= 0 keeps k = n/2


def median_cs(ratios, alpha: float = ALPHA) -> tuple[float, float]:
    """(lo, hi) of the confidence sequence for the median of ``ratios`` (finite, positive) at their count:
    the order statistics ``r_(k_lo)`` and ``r_(k_hi + 1)``, 0 and infinity past the ends."""
    r = np.sort(np.asarray(ratios, dtype=float))
    n = int(r.size)
    if n == 0:
        return 0.0, math.inf
    k_lo, k_hi = accept_range(n, alpha)
    lo = float(r[k_lo - 1]) if k_lo >= 1 else 0.0
    hi = float(r[k_hi]) if k_hi < n else math.inf
    return lo, hi


def direction(below, above, n, alpha: float = ALPHA):
    """Vectorised: +1 where the interval lies below 1 (the configuration is better, for a lower-is-better
    metric), -1 where above, 0 where it holds 1. ``below``/``above``: how many of the ``n`` ratios are < 1 /
    > 1 (arrays of one shape, or numbers). The same rule as :func:`median_cs` excluding 1."""
    below, above, n = np.broadcast_arrays(*(np.asarray(x, dtype=int) for x in (below, above, n)))
    table = np.array([accept_range(int(m), alpha)[1] for m in range(int(n.max(initial=0)) + 1)])
    k_hi = table[n]
    return np.where(below > k_hi, 1, np.where(above > k_hi, -1, 0))


def fewest_pairs(alpha: float = ALPHA) -> int:
    """The fewest pairs whose interval can exclude 1 (every ratio on one side): 7 at 5 %."""
    return next(n for n in range(1, 10_000) if accept_range(n, alpha)[1] < n)


def selection_alpha(configurations: int, alpha: float = ALPHA) -> float:
    """Each of ``configurations`` compared with as-is in the selection gets ``alpha / configurations``
    (Bonferroni): all their intervals hold together with probability >= 1 - alpha."""
    return alpha / max(1, configurations)


def paired(a_values, b_values, alpha: float = ALPHA):
    """The median of the pair ratios ``a_i / b_i`` with its confidence sequence at ``alpha``, as a
    ``stats.Ratio`` (level ``1 - alpha``; an end the pairs cannot bound yet is 0 or infinity)."""
    from hugebench.stats import Ratio, pair_ratios

    ratios = pair_ratios(a_values, b_values)
    ratios = ratios[ratios > 0]
    value = float(np.median(ratios)) if ratios.size else math.nan
    lo, hi = median_cs(ratios, alpha)
    return Ratio(value, lo, hi, True, int(ratios.size), 1.0 - alpha)


Z95 = 1.959963984540054  # the two-sided 95 % normal quantile
# a median's standard error per sigma / sqrt(n) (normal, large n)
MEDIAN_SE = math.sqrt(math.pi / 2)


def drift_sd(log_ratios) -> float:
    """The slow part of the log ratios' spread, in time order, by two estimates, the larger (a drift either
    one sees is a drift): the variance less half the mean square successive difference (von Neumann,
    "Distribution of the ratio of the mean square successive difference to the variance", Ann. Math.
    Statist. 12(4), 1941), and :func:`block_drift_sd`, the spread of the medians of consecutive blocks of
    pairs beyond what their own noise explains (robust: one wild pair of a busy moment moves neither median
    much). Pairs next to each other share the machine's state of the moment; what drifts over minutes adds
    to the variance and the blocks' spread and not to the successive differences."""
    x = np.asarray(log_ratios, dtype=float)
    if x.size < 4:
        return 0.0
    slow = float(np.var(x, ddof=1)) - float(np.mean(np.diff(x) ** 2)) / 2
    return max(math.sqrt(max(0.0, slow)), block_drift_sd(x))


DRIFT_BLOCK = 5  # pairs in each consecutive block of block_drift_sd


def block_drift_sd(log_ratios, size: int = DRIFT_BLOCK) -> float:
    """The between-block standard deviation of the log ratios in time order (a variance component): the
    series cut into consecutive blocks of ``size`` pairs (the first block takes the remainder), the
    variance of the blocks' medians less what a median of ``size`` pairs varies by itself
    (``MEDIAN_SE**2 * sd**2 / size``, ``sd`` the robust within-block spread, 1.4826 x MAD), clipped at 0.
    Fewer than two blocks: 0."""
    x = np.asarray(log_ratios, dtype=float)
    blocks = x.size // size
    if blocks < 2:
        return 0.0
    parts = np.array_split(x, blocks)  # consecutive, in time order, sizes size..size+remainder
    medians = np.array([np.median(p) for p in parts])
    within = np.concatenate([p - np.median(p) for p in parts])
    sd = 1.4826 * float(np.median(np.abs(within)))
    between = float(np.var(medians, ddof=1)) - (MEDIAN_SE * sd) ** 2 / (x.size / blocks)
    return math.sqrt(max(0.0, between))


def deployment_interval(effect, series, phases=None) -> tuple[float, float, float]:
    """(lo, hi, drift): THE interval of try's verdict, 95 %: where the deployed line, timed the same way
    in another window, should read the ratio; decisions and the verdict rest on it alone.

    ``effect``: the confirmation's ratio (``stats.Ratio``: its median and confidence sequence on the fresh
    pairs); ``series``: every pair ratio of the same two configurations in the order they ran (selection
    and confirmation, warm-ups left out); the later check is as long as the confirmation (``effect.n``
    pairs). A prediction interval for a replication (Spence & Stanley, "Prediction interval: what to
    expect when you're expecting... a replication", PLoS ONE 11(9), 2016), with the between-window
    variance of a random-effects prediction (Higgins, Thompson & Spiegelhalter, J. R. Stat. Soc. A
    172(1), 2009): in logs, the confidence sequence's half-widths combined in quadrature with
    ``Z95 * sqrt(se_check**2 + drift**2)``, where ``se_check`` is the check's own median error (robust sd
    of the log ratios, 1.4826 x MAD) and ``drift`` :func:`drift_sd`. It contains the confidence sequence,
    so it keeps the sequence's guarantee at every look (stopping on it costs nothing). Approximate (the
    sequence's half-width is an anytime bound, wider than a fixed-n one; the normal terms assume the log
    ratios roughly symmetric), and checked against a judge that deploys and times the answer
    (docs/try.md). An end the sequence cannot bound stays unbounded.

    ``phases``: one label per ratio of ``series`` (the selection's pairs, the confirmation's); each phase is
    centred on its own median first, so that the step from a winner's flattered selection ratios to its
    fresh ones (chosen for being the best of several: a selection effect, not a drift) is not counted as
    drift; a drift within either phase still is."""
    values = np.asarray(series, dtype=float)
    keep = (values > 0) & np.isfinite(values)
    x = np.log(values[keep])
    if phases is not None and x.size:
        labels = np.asarray(phases)[keep]
        for label in set(labels.tolist()):
            x[labels == label] -= np.median(x[labels == label])
    n = int(effect.n or 0)
    if not x.size or n < 1 or not (effect.value > 0):
        return 0.0, math.inf, 0.0
    centre = math.log(effect.value)
    sd = 1.4826 * float(np.median(np.abs(x - np.median(x))))
    drift = drift_sd(x)
    extra = Z95 * math.sqrt((MEDIAN_SE * sd) ** 2 / n + drift**2)

    def widen(end: float) -> float:
        if not (end > 0 and math.isfinite(end)):
            return math.inf
        return math.sqrt(abs(math.log(end) - centre) ** 2 + extra**2)

    return (
        math.exp(centre - widen(effect.lo)),
        math.exp(centre + widen(effect.hi)),
        math.exp(drift),
    )
