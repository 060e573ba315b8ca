"""Which decision sites mattered for latency: PED-ANOVA importance of a task's decisions.

The method is PED-ANOVA (Watanabe et al., "PED-ANOVA: Efficiently Quantifying Hyperparameter
Importance in Arbitrary Subspaces", IJCAI 2023), as Optuna's ``PedAnovaImportanceEvaluator``
computes it for categorical parameters, written here from its description and Optuna's source
(``optuna/importance/_ped_anova/``, the version with ``consider_prior=True, prior_weight=1.0``).
Why this one:

- decisions are categorical (a tuple of tile factors, an unroll candidate, a compute location)
  and PED-ANOVA takes categorical parameters as they are, with no encoding and no model to fit
  (fANOVA fits a random forest; permutation importance needs the cost model);
- it costs one pass over the trials per site, so thousands of trials take milliseconds;
- what it compares, the distribution of a site's decisions among the fastest trials (the top
  ``quantile``) against all trials, is exactly "the values that won", which the proposed space
  restriction (:mod:`msviz.analysis.restriction`) is made of.

For each site, a Parzen estimator of its decisions is built over the top trials and one over all
trials; each is a mixture of one kernel per observed value (weighted by its count; the kernel
puts ``1 + w/k`` on its value and ``w/k`` on every other choice, normalized, with ``k`` the
kernels including the prior) and a uniform prior kernel of weight ``w = prior_weight``. The
importance is the Pearson divergence ``sum_x p_all(x) (p_top(x) / p_all(x) - 1)^2``, normalized
over the sites to sum to 1. Sites with a single choice get 0.

A trace's sites depend on its design space, so the importance is computed over the trials of
one design space at a time (those :func:`msviz.trace.spaces.trial_decisions` reads, the same the
decisions plot draws); a site is keyed by its instruction index and kind (``"#4
SamplePerfectTile"``).

The same concept drawn: :mod:`msviz.views.importance`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from msviz.errors import MsvizWarning

__all__ = [
    "ImportanceInfo",
    "SiteImportance",
    "importance_info",
    "pearson_divergence",
    "ped_anova",
    "top_mask",
]

#: Default share of the fastest trials that "won" (Optuna's ``baseline_quantile``).
QUANTILE = 0.1
#: Fewest trials counted as winners. Optuna's ``min_n_top_trials`` is 2, and its documentation
#: advises at least 5 for a stable result: a task's first run often has few trials, and the
#: winners' decisions become a space restriction, so msviz takes 5.
MIN_TOP = 5
METHOD = "PED-ANOVA"


class SiteImportance(NamedTuple):
    """One decision site: its importance and what the fastest trials decided there."""

    site: str  # "#4 SamplePerfectTile"
    importance: float  # share of the total (the sites' importances sum to 1)
    winners: tuple[tuple[str, int], ...]  # (decision, count) among the top trials, most first
    choices_seen: int  # distinct decisions over all trials


class ImportanceInfo(NamedTuple):
    """Decision-site importance of one task's trials (of one design space)."""

    method: str
    task: str
    trials: int  # trials the importance was computed from
    top: int  # of which "won" (the fastest ``quantile``, at least MIN_TOP)
    quantile: float
    cutoff_us: float  # the slowest winner's latency (NaN without trials)
    sites: tuple[SiteImportance, ...]  # most important first


def top_mask(loss: Sequence[float], quantile: float = QUANTILE,
             min_top: int = MIN_TOP) -> np.ndarray:
    """Which trials are in the top ``quantile`` (lower is better), at least ``min_top`` of them,
    ties with the cutoff included (Optuna's ``_QuantileFilter``)."""
    values = np.asarray(loss, dtype=float)
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], not {quantile!r}")
    if values.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.sort(values)
    at_quantile = order[max(0, math.ceil(quantile * values.size) - 1)]
    at_min = order[min(max(min_top, 1), values.size) - 1]
    return values <= max(at_quantile, at_min)


def _parzen_pdf(counts: np.ndarray, prior_weight: float) -> np.ndarray:
    """The categorical Parzen estimator's probabilities of each choice (see the module text)."""
    n_choices = counts.size
    observed = np.flatnonzero(counts > 0)
    if observed.size == 0:
        return np.full(n_choices, 1.0 / n_choices)
    n_kernels = observed.size + 1  # + the prior
    kernels = np.full((observed.size, n_choices), prior_weight / n_kernels)
    kernels[np.arange(observed.size), observed] += 1.0
    kernels /= kernels.sum(axis=1, keepdims=True)
    weights = np.append(counts[observed].astype(float), prior_weight)
    weights /= weights.sum()
    return weights[:-1] @ kernels + weights[-1] / n_choices


def pearson_divergence(top_counts: Sequence[float], all_counts: Sequence[float], *,
                       prior_weight: float = 1.0) -> float:
    """PED-ANOVA's (unnormalized) importance of one categorical parameter.

    Parameters
    ----------
    top_counts, all_counts : sequence of int
        How often each choice (the same order in both) was decided by the top trials and by
        all trials.
    prior_weight : float
        Weight of the uniform prior kernel (the smoothing).
    """
    top = _parzen_pdf(np.asarray(top_counts, dtype=float), prior_weight) + 1e-12
    local = _parzen_pdf(np.asarray(all_counts, dtype=float), prior_weight) + 1e-12
    return float(local @ ((top / local - 1.0) ** 2))


def ped_anova(params: Mapping[str, Sequence[Hashable]], loss: Sequence[float], *,
              choices: Mapping[str, Sequence[Hashable]] | None = None,
              quantile: float = QUANTILE, min_top: int = MIN_TOP,
              prior_weight: float = 1.0) -> dict[str, float]:
    """PED-ANOVA importance of categorical parameters for a loss (lower is better).

    Parameters
    ----------
    params : mapping of str to sequence
        Each parameter's value in every trial (the same length as ``loss``).
    loss : sequence of float
        Each trial's loss (here: latency).
    choices : mapping of str to sequence, optional
        A parameter's possible values (default: the values seen); values seen but not listed
        are added.
    quantile, min_top : float, int
        The top trials: the fastest ``quantile`` of them, at least ``min_top``.
    prior_weight : float
        The smoothing (weight of the uniform prior kernel).

    Returns
    -------
    importances : dict of str to float
        In the order of ``params``; they sum to 1 over the parameters with more than one
        choice (those with one get 0). With ``min_top`` trials or fewer, or when no parameter
        separates the top trials from the rest, every parameter gets the same share.
    """
    n = len(loss)
    domains = {}
    for name, values in params.items():
        if len(values) != n:
            raise ValueError(f"parameter {name!r} has {len(values)} values for {n} trials")
        domain = list(dict.fromkeys((choices or {}).get(name, ())))
        domain += [v for v in dict.fromkeys(values) if v not in set(domain)]
        domains[name] = domain
    varied = [name for name, domain in domains.items() if len(domain) > 1]
    out = {name: 0.0 for name in params}
    if not varied:
        return out
    if n <= min_top:
        return {name: (1.0 / len(varied) if name in varied else 0.0) for name in params}
    top = top_mask(loss, quantile, min_top)
    raw = {}
    for name in varied:
        position = {v: i for i, v in enumerate(domains[name])}
        codes = np.fromiter((position[v] for v in params[name]), dtype=int, count=n)
        size = len(position)
        raw[name] = pearson_divergence(np.bincount(codes[top], minlength=size),
                                       np.bincount(codes, minlength=size),
                                       prior_weight=prior_weight)
    total = sum(raw.values())
    for name in varied:
        out[name] = raw[name] / total if total > 0 else 1.0 / len(varied)
    return out


def importance_info(decisions: pd.DataFrame, *, task: str = "",
                    choices: Mapping[str, Sequence[Hashable]] | None = None,
                    quantile: float = QUANTILE, min_top: int = MIN_TOP) -> ImportanceInfo:
    """PED-ANOVA importance of each decision site, from the frame of
    :func:`msviz.trace.spaces.trial_decisions` (``trial``, ``latency_us``, one column per site).

    Parameters
    ----------
    decisions : pandas.DataFrame
        One row per successful trial of one design space.
    task : str
        The task's name (shown in the title).
    choices : mapping of str to sequence, optional
        Each site's valid decisions (as the frame writes them), for the prior's smoothing.
    quantile, min_top : float, int
        The winners: the fastest ``quantile`` of the trials, at least ``min_top``.
    """
    sites = [c for c in decisions.columns if c not in ("trial", "latency_us")]
    if decisions.empty or not sites:
        warnings.warn("no successful trial with decisions: no importance to compute",
                      MsvizWarning, stacklevel=2)
        return ImportanceInfo(METHOD, task, len(decisions), 0, quantile, math.nan, ())
    loss = decisions["latency_us"].to_numpy(dtype=float)
    values = {s: [str(v) for v in decisions[s]] for s in sites}
    scores = ped_anova(values, loss, choices=choices, quantile=quantile, min_top=min_top)
    top = top_mask(loss, quantile, min_top)
    rows = []
    for s in sites:
        won = pd.Series(values[s])[top].value_counts(sort=False)
        ranked = sorted(won.items(), key=lambda kv: (-kv[1], kv[0]))
        rows.append(SiteImportance(s, scores[s], tuple((str(v), int(c)) for v, c in ranked),
                                   len(set(values[s]))))
    rows.sort(key=lambda r: -r.importance)
    return ImportanceInfo(METHOD, task, len(loss), int(top.sum()), quantile,
                          float(loss[top].max()), tuple(rows))
