"""Mutation testing of the mechanisms' privacy-critical lines: each listed bug must fail a test.

mutmut (``make mutation``) covers the privacy core (``privacy/``), whose files are mostly privacy-critical.
In the mechanisms most lines are not, so this list names the lines that set a sensitivity, a noise scale, a
clip, a budget share or an event, with one deliberate bug each (a halved scale, a dropped factor, a clip
removed) and the pinned-release test file that must catch it. Such a bug leaves the outputs plausible and
only weakens the privacy, which ordinary correctness tests do not see.

Each mutation is applied to a scratch copy of ``src/`` (the checkout is never touched) and its test file is
run against the copy (``PYTHONPATH``). A mutation marked ``sound=True`` is not a privacy bug (it adds no
risk: e.g. a stability threshold that still keeps a count-1 bin with probability <= delta/2) and is
expected to survive.

Run: ``.venv/bin/python tools/mechanism_mutations.py [NAME-PREFIX ...]`` (about 15 minutes for all, one
core); prints one line per mutation and exits 1 if a privacy bug survives or a listed line has changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # below src/dpspectral/
    old: str  # must occur exactly once
    new: str
    tests: str
    sound: bool = False


MUTATIONS: list[Mutation] = [
    Mutation(
        "moments: the clipped pieces added without their per-row factors (no clip)",
        "_moments.py",
        "            np.multiply(part, factors[rows, None], out=part)",
        "            np.multiply(part, 1.0, out=part)",
        "tests/test_covariance.py",
    ),
    Mutation(
        "moments: the few rows above the bound of a part not scaled",
        "_moments.py",
        "            part[mine] *= factors[a + c + mine, None]",
        "            part[mine] *= 1.0",
        "tests/test_covariance.py",
    ),
    Mutation(
        "moments: every part scaled by the first part's factors",
        "_moments.py",
        "            np.multiply(part, factors[rows, None], out=part)",
        "            np.multiply(part, factors[:part.shape[0], None], out=part)",
        "tests/test_norm_counts.py",
    ),
    Mutation(
        "Dask partial: rows above the bound not counted as clipped, nor clipped",
        "_moments.py",
        "    over = norms > clip_threshold(row_norm * scale)\n    out[0, 1] = np.count_nonzero(over)",
        "    over = norms > np.inf\n    out[0, 1] = np.count_nonzero(over)",
        "tests/test_norm_counts.py",
    ),
    Mutation(
        "DPSR phase 2 with a public B: noise without ||Phi~||_2^2",
        "gep/_reduction.py",
        '        phase2 = NoisyRelease("phase2", "gaussian", s2 * delta2_base * phi_norm2, delta2_base * phi_norm2)',
        '        phase2 = NoisyRelease("phase2", "gaussian", s2 * delta2_base, delta2_base * phi_norm2)',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "device paths: float32 clip without its rounding margin",
        "_array_api.py",
        "        slack = 2.0 * d_u / (1.0 - d_u) + 2.0 * eps",
        "        slack = 0.0",
        "tests/test_array_api.py",
    ),
    Mutation(
        "device paths: the shared clip scales over-bound rows by 1 (no clip)",
        "_array_api.py",
        "    factors = xp.where(over, target / xp.where(over, norms, ones), ones)",
        "    factors = ones",
        "tests/test_array_api.py",
    ),
    Mutation(
        "noisy_power adaptive: the iterations read the rows at C while the noise is at the released clip",
        "pca/_power.py",
        'moments = accumulate(rows.source, row_norm=released["clip"], on_norm_violation="clip",',
        'moments = accumulate(rows.source, row_norm=inputs.C, on_norm_violation="clip",',
        "tests/test_adaptive_clip_iterative.py",
    ),
    Mutation(
        "noisy_power adaptive: the iterations calibrated without the histogram's share",
        "pca/_power.py",
        "        s = calibrate(make if clip is None else clip.compose(make), budget.epsilon, budget.delta,",
        "        s = calibrate(make, budget.epsilon, budget.delta,",
        "tests/test_adaptive_clip_iterative.py",
    ),
    Mutation(
        "adaptive stage: histogram multiplier s_total / sqrt(share) -> s_total",
        "privacy/_adaptive.py",
        "    s_hist = s_total / math.sqrt(share)",
        "    s_hist = s_total",
        "tests/test_adaptive_clip_iterative.py",
    ),
    Mutation(
        "private mean replace-one sensitivity 2C -> C",
        "pca/_covariance.py",
        "    return (2.0 if relation is Relation.REPLACE_ONE else 1.0) * row_norm",
        "    return (1.0 if relation is Relation.REPLACE_ONE else 1.0) * row_norm",
        "tests/test_pinned_releases.py",
    ),
    Mutation(
        "private count noise x0.01 (plan's count sensitivity 1 -> 0.01)",
        "pca/_covariance.py",
        '"mean": sum_sens, "count": 1.0,',
        '"mean": sum_sens, "count": 0.01,',
        "tests/test_pinned_releases.py",
    ),
    Mutation(
        "uncentred adaptive clip from the raw (un-noised) norm histogram",
        "pca/_covariance.py",
        'return _balanced_clip(noisy_counts, edges, kappa, plan["histogram"].scale, inputs.C), (',
        'return _balanced_clip(released.rows.first.norm_counts, edges, kappa, plan["histogram"].scale,'
        ' inputs.C), (',
        "tests/test_pinned_releases.py",
    ),
    Mutation(
        "adaptive clip: rows clipped at row_norm, scatter noise at the released clip",
        "pca/_covariance.py",
        '            clip = released.get("clip", inputs.C)',
        '            clip = inputs.C',
        "tests/test_pinned_releases.py",
    ),
    Mutation(
        "DP-SPCA rows not clipped",
        "pca/_stochastic.py",
        "        block, _ = clip_rows(block, C, on_norm_violation=mode, copy=False, owner=owner)\n",
        "",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "DP-VRPCA full-gradient rows not clipped",
        "pca/_stochastic.py",
        "        block, _ = clip_rows(block, C, on_norm_violation=mode, copy=True, first_row=a, owner=owner)\n",
        "",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "DP-SPCA/DP-VRPCA device products clip at 2 C instead of C",
        "pca/_stochastic.py",
        "        block, norms, _ = clip_rows_xp(xp.astype(chunk, dtype, copy=False), C, xp)\n",
        "        block, norms, _ = clip_rows_xp(xp.astype(chunk, dtype, copy=False), 2.0 * C, xp)\n",
        "tests/test_array_api_stochastic.py",
    ),
    Mutation(
        "DP-SPCA/DP-VRPCA device steps read every row where a Poisson sample is accounted",
        "pca/_stochastic.py",
        "        if self.q == 1.0:  # every row: nothing to draw\n",
        "        if self.q > 0.0:  # every row: nothing to draw\n",
        "tests/test_array_api_stochastic.py",
    ),
    Mutation(
        "DP-VRPCA full-gradient shift 2 sqrt(2) C^2 / n -> 2 C^2 / n",
        "pca/_stochastic.py",
        "        shift_full = math.sqrt(2.0) * _G * Cs**2 / n\n",
        "        shift_full = _G * Cs**2 / n\n",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "DP-VRPCA adaptive inner noise at half the public distance ||V - V~||_2",
        "pca/_stochastic.py",
        "    ratio = _spectral_norm(diff) / 2.0",
        "    ratio = _spectral_norm(diff) / 4.0",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "DP-VRPCA full-batch step shift without sqrt(2)",
        "pca/_stochastic.py",
        "            step_sens = math.sqrt(2.0) * delta_vr\n",
        "            step_sens = delta_vr\n",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "DP-SPCA adaptive clip: rows sampled at row_norm, noise at the released clip",
        "pca/_stochastic.py",
        "_Sampler(rows.X, q, clip, mode, releaser, self.label)\n        V = _spca",
        "_Sampler(rows.X, q, inputs.C, mode, releaser, self.label)\n        V = _spca",
        "tests/test_adaptive_clip_stochastic.py",
    ),
    Mutation(
        "DP-VRPCA adaptive clip: full products at row_norm, noise at the released clip",
        "pca/_stochastic.py",
        "sampler, releaser, C=clip,",
        "sampler, releaser, C=inputs.C,",
        "tests/test_adaptive_clip_stochastic.py",
    ),
    Mutation(
        "DP-SPCA adaptive clip: step noise scaled by (r / C)^3 instead of (r / C)^2",
        "pca/_stochastic.py",
        '    powers = {"step": 2}\n',
        '    powers = {"step": 3}\n',
        "tests/test_adaptive_clip_stochastic.py",
    ),
    Mutation(
        "DP-VRPCA adaptive clip: full-gradient noise scaled by (r / C)^3",
        "pca/_stochastic.py",
        'powers = {"full_gradient": 2, "step": 2}',
        'powers = {"full_gradient": 3, "step": 2}',
        "tests/test_adaptive_clip_stochastic.py",
    ),
    Mutation(
        "DP-SPCA adaptive clip: steps calibrated without the histogram's share",
        "pca/_stochastic.py",
        "accounting, None, 0, clip)",
        "accounting, None, 0, None)",
        "tests/test_adaptive_clip_stochastic.py",
    ),
    Mutation(
        "DP-SPCA full-batch step shift 2 sqrt(2) C^2 -> 2 C^2 (one row's contribution)",
        "pca/_stochastic.py",
        "        sens = math.sqrt(2.0) * delta_row\n",
        "        sens = delta_row\n",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "DP-SPCA full-batch steps calibrated without the histogram's share",
        "pca/_stochastic.py",
        "_rest_multiplier(budget, accounting, clip) * math.sqrt(n_steps)",
        "_rest_multiplier(budget, accounting, None) * math.sqrt(n_steps)",
        "tests/test_adaptive_clip_stochastic.py",
    ),
    Mutation(
        "Local Gaussian GOE weight sqrt(2) -> 2 (off-diagonal noise halved)",
        "local/_gaussian.py",
        'return np.where(i == j, 1.0, math.sqrt(2.0) if shape == "goe" else 1.0)',
        'return np.where(i == j, 1.0, 2.0 if shape == "goe" else 1.0)',
        "tests/test_pinned_releases.py",
    ),
    Mutation(
        "Private Oja noise halved (sens alpha -> sens alpha / 2)",
        "pca/_oja.py",
        'step = _step_widened(NoisyRelease(_STEP, "gaussian", sens * alpha, sens)',
        'step = _step_widened(NoisyRelease(_STEP, "gaussian", 0.5 * sens * alpha, sens)',
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "Private Oja seeded block draws at half the planned std (the block-wise fast path)",
        "pca/_oja.py",
        "zetas = etas * seeded[1]  # eta_t std",
        "zetas = etas * seeded[1] / 2  # eta_t std",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "A5 vectorised coordinate histograms without their Laplace noise",
        "pca/_oja.py",
        "noisy = np.asarray(releaser.add(_COORDINATE_HISTOGRAMS, counts.astype(np.float64)), dtype=np.float64)",
        "noisy = counts.astype(np.float64)",
        "tests/test_oja.py",
    ),
    Mutation(
        "Private Oja default-clip sensitivity C^2 -> C^2 / 2 (half-ball bound halved)",
        "pca/_oja.py",
        "return min(2.0 * gradient_clip, min(math.sqrt(k), math.sqrt(2.0)) * row_norm**2)",
        "return min(2.0 * gradient_clip, 0.5 * min(math.sqrt(k), math.sqrt(2.0)) * row_norm**2)",
        "tests/test_pinned_stochastic.py",
    ),
    Mutation(
        "DP-PCA public-bound mean noise halved",
        "pca/_oja.py",
        "return S / b + releaser.gaussian(_MEAN, S.shape) * (sensitivity / b)",
        "return S / b + releaser.gaussian(_MEAN, S.shape) * (sensitivity / (2 * b))",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DP-PCA without Algorithms 4-5: the Gaussian at 2 epsilon",
        "pca/_oja.py",
        "        s_gauss = analytic_noise_multiplier(budget.epsilon, budget.delta)",
        "        s_gauss = analytic_noise_multiplier(2 * budget.epsilon, budget.delta)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DP-PCA public bound of the batch sum sqrt(2) C^2 -> C^2 for p >= 2",
        "pca/_oja.py",
        "pub_sens=min(math.sqrt(block), math.sqrt(2.0)) * grad_bound,",
        "pub_sens=min(math.sqrt(block), 1.0) * grad_bound,",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "space-optimal LRF second sketch without c_tt",
        "lowrank/_factorization.py",
        "d2 = b * math.sqrt(c_psi), b * math.sqrt(c_s * c_tt)",
        "d2 = b * math.sqrt(c_psi), b * math.sqrt(c_s)",
        "tests/test_lowrank_privacy_boundaries.py",
    ),
    Mutation(
        "A4 Laplace scale halved (release shift/eps -> shift/(2 eps))",
        "pca/_oja.py",
        'NoisyRelease(_EIGENVALUE_HISTOGRAM, "laplace", shift / epsilon, shift)',
        'NoisyRelease(_EIGENVALUE_HISTOGRAM, "laplace", shift / epsilon / 2, shift)',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "A4 event without L1 shift (branch-1 claim eps/2)",
        "pca/_oja.py",
        "event4 = laplace_histogram_event(2.0 / config.b_eps, relation)",
        "event4 = dp_accounting.LaplaceDpEvent(2.0 / config.b_eps)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "A5 histogram scale halved (2 lap_m -> lap_m)",
        "pca/_oja.py",
        "return None if self.lap_m is None else 2.0 * self.lap_m",
        "return None if self.lap_m is None else self.lap_m",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "A5 mean sensitivity halved (2 h r sqrt p / b -> h r sqrt p / b)",
        "pca/_oja.py",
        "sens = 2.0 * h * math.sqrt(p) / b",
        "sens = h * math.sqrt(p) / b",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "A5 mean noise x0.5",
        "pca/_oja.py",
        "centred.sum(axis=0) / b + releaser.gaussian(_MEAN, p) * sens",
        "centred.sum(axis=0) / b + 0.5 * releaser.gaussian(_MEAN, p) * sens",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "A5 mean noise x0.8",
        "pca/_oja.py",
        "centred.sum(axis=0) / b + releaser.gaussian(_MEAN, p) * sens",
        "centred.sum(axis=0) / b + 0.8 * releaser.gaussian(_MEAN, p) * sens",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "Oja/DP-PCA rows not clipped (_Rows.take)",
        "pca/_stream.py",
        "out, _ = clip_rows(out, self.C,",
        "_unused, _ = clip_rows(out.copy(), self.C,",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "stable: coordinate histograms get 2x their epsilon share",
        "pca/_oja.py",
        "stable = (epsilon * share / p, delta * share / p)",
        "stable = (2 * epsilon * share / p, delta * share / p)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "stable: Gaussian gets the whole epsilon",
        "pca/_oja.py",
        "analytic_noise_multiplier(epsilon * (1 - share), delta * (1 - share))",
        "analytic_noise_multiplier(epsilon, delta * (1 - share))",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "stable threshold ln(2/delta) -> ln(1/delta)",
        "privacy/_histogram.py",
        "return 1.0 + histogram_shift(relation) * math.log(2.0 / delta) / epsilon",
        "return 1.0 + histogram_shift(relation) * math.log(1.0 / delta) / epsilon",
        "tests/test_pinned_dp_pca_gep.py",
        sound=True,
    ),
    Mutation(
        "stable histogram scale shift/eps -> 1/eps",
        "privacy/_histogram.py",
        "noisy = _noisy_counts(noise, counts, shift / epsilon, shift)",
        "noisy = _noisy_counts(noise, counts, 1.0 / epsilon, shift)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "histogram_shift replace-one 2 -> 1",
        "privacy/_histogram.py",
        "return 2.0 if as_relation(relation) is Relation.REPLACE_ONE else 1.0",
        "return 1.0",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "laplace_histogram_mode noise x0.5 (occupied bins)",
        "privacy/_histogram.py",
        "noisy = _noisy_counts(noise, counts, scale, sensitivity)",
        "noisy = _noisy_counts(noise, counts, 0.5 * scale, sensitivity)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "_laplace_max scale x0.5",
        "privacy/_histogram.py",
        "return -scale * math.log(2.0 * -math.expm1(log_u))",
        "return -0.5 * scale * math.log(2.0 * -math.expm1(log_u))",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPSR gradient noise x0.5 (_noisy_phase, after the draw)",
        "gep/_reduction.py",
        "            G = release(G)  # the release",
        "            G = G + 0.5 * (release(G) - G)  # the release",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPSR phase-1 std halved",
        "gep/_reduction.py",
        'NoisyRelease("phase1", "gaussian", s1 * delta1, delta1)',
        'NoisyRelease("phase1", "gaussian", s1 * delta1 / 2, delta1)',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPSR Lambda_B std halved",
        "gep/_reduction.py",
        'NoisyRelease("lambda", "gaussian", s_lam * delta_lam, delta_lam)',
        'NoisyRelease("lambda", "gaussian", s_lam * delta_lam / 2, delta_lam)',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPSR Lambda_B not noised (drawn, discarded)",
        "gep/_reduction.py",
        'out["phase2"] = After(lambda rel: phase_two(_whitening(c.inputs, c.scales, rel)))',
        'out["phase2"] = After(lambda rel: phase_two(_whitening(c.inputs, c.scales, {**rel, "lambda": '
        'np.einsum("ij,ij->j", rel["phase1"][0], pair.B @ rel["phase1"][0])})))',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPSR phase-2 std without ||Phi~||^2",
        "gep/_reduction.py",
        "std2, sensitivity2 = widened(scales.s2 * scales.delta2_base * phi_norm2,\n"
        "                                         scales.delta2_base * phi_norm2, scales.phase2_rounding)",
        "std2, sensitivity2 = widened(scales.s2 * scales.delta2_base,\n"
        "                                         scales.delta2_base, scales.phase2_rounding)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPSR phase-1 multiplier without sqrt(m)",
        "gep/_reduction.py",
        "return split[0] * math.sqrt(m), split[1]",
        "return split[0], split[1]",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "FDA b_frobenius halved",
        "gep/_scatter.py",
        "b_frobenius=4.0 * math.sqrt(2.0) * C2 / n_samples,\n        a_spectral=8.0",
        "b_frobenius=2.0 * math.sqrt(2.0) * C2 / n_samples,\n        a_spectral=8.0",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "moments class-sum replace-one sensitivity 2C -> sqrt(2) C (same-class replacement forgotten)",
        "gep/_moments.py",
        'return {"second": math.sqrt(2.0) * C * C, "sums": 2.0 * C, "counts": math.sqrt(2.0)}',
        'return {"second": math.sqrt(2.0) * C * C, "sums": math.sqrt(2.0) * C, "counts": math.sqrt(2.0)}',
        "tests/test_gep_moments.py",
    ),
    Mutation(
        "moments second-moment noise share ignored (one part at the whole budget's multiplier)",
        "gep/_moments.py",
        "releases = tuple(NoisyRelease(name, \"gaussian\", m * sens[name], sens[name])",
        "releases = tuple(NoisyRelease(name, \"gaussian\", s * sens[name], sens[name])",
        "tests/test_gep_moments.py",
    ),
    Mutation(
        "moments adaptive clip: the rows clipped at the bound C while the noise is set at the released clip",
        "gep/_moments.py",
        'radius = released.get("clip", inputs.C)',
        "radius = inputs.C",
        "tests/test_adaptive_clip_fisher.py",
    ),
    Mutation(
        "moments adaptive clip: the class sums' noise scaled by r^2 instead of r",
        "gep/_moments.py",
        '_CLIP_POWER = {"second": 2, "sums": 1, "counts": 0}',
        '_CLIP_POWER = {"second": 2, "sums": 2, "counts": 0}',
        "tests/test_adaptive_clip_fisher.py",
    ),
    Mutation(
        "FDA a_spectral halved",
        "gep/_scatter.py",
        "a_spectral=8.0 * C2 / n_samples",
        "a_spectral=4.0 * C2 / n_samples",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "FDA a_frobenius halved",
        "gep/_scatter.py",
        "a_frobenius=8.0 * math.sqrt(2.0) * C2 / n_samples",
        "a_frobenius=4.0 * math.sqrt(2.0) * C2 / n_samples",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "gradient_a factor 2 dropped",
        "gep/_scatter.py",
        "return 2.0 * self.block(self.a_frobenius, self.a_spectral, k)",
        "return 1.0 * self.block(self.a_frobenius, self.a_spectral, k)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "gradient_b factor 2 dropped",
        "gep/_scatter.py",
        "return 2.0 * self.block(self.b_frobenius, self.b_spectral, k)",
        "return 1.0 * self.block(self.b_frobenius, self.b_spectral, k)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPRF std_A halved",
        "gep/_common.py",
        'NoisyRelease("A", "gaussian", s_a * sens.a_frobenius,',
        'NoisyRelease("A", "gaussian", 0.5 * s_a * sens.a_frobenius,',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPRF noisy B: noise x0.5 after the draw",
        "gep/_rayleigh.py",
        'B_raw = pair.B if pair.b_is_public else released["B"]',
        'B_raw = pair.B if pair.b_is_public else pair.B + 0.5 * (released["B"] - pair.B)',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPRF paper s = 1/sqrt(4 rho)",
        "gep/_rayleigh.py",
        "s_a = 1.0 / math.sqrt(2.0 * rho_a)",
        "s_a = 1.0 / math.sqrt(4.0 * rho_a)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "symmetric_gaussian off-diagonal /2 instead of /sqrt2",
        "privacy/_gaussian.py",
        "noise *= sigma / math.sqrt(2.0)",
        "noise *= sigma / 2.0",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "local LRF gram protocol: row bound halved in the users' reports",
        "local/_lowrank.py",
        "row_norm=C, accountant=accountant",
        "row_norm=C / 2, accountant=accountant",
        "tests/test_local_lrf_utility.py",
    ),
    Mutation(
        "goe noise shape: off-diagonal std sigma/2 instead of sigma/sqrt2",
        "privacy/_noise.py",
        "noise *= 1.0 / math.sqrt(2.0)",
        "noise *= 0.5",
        "tests/test_pinned_releases.py",
    ),
    Mutation(
        "goe secure shape: iso weights 2 instead of sqrt2 (off-diagonal noise halved)",
        "privacy/_noise.py",
        "return np.where(i == j, 1.0, math.sqrt(2.0))\n\n\ndef seeded_source",
        "return np.where(i == j, 1.0, 2.0)\n\n\ndef seeded_source",
        "tests/test_secure_noise_pca.py",
    ),
    Mutation(
        "split_noise_multiplier * sqrt(w) instead of / sqrt(w)",
        "privacy/_gaussian.py",
        "/ math.sqrt(float(x)) for x in w]",
        "* math.sqrt(float(x)) for x in w]",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "stable threshold ln(2/delta) -> ln(0.2/delta) (unsound)",
        "privacy/_histogram.py",
        "return 1.0 + histogram_shift(relation) * math.log(2.0 / delta) / epsilon",
        "return 1.0 + histogram_shift(relation) * math.log(0.2 / delta) / epsilon",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DPSR Lambda_B (share 0) from the true B",
        "gep/_reduction.py",
        'lam = np.einsum("ij,ij->j", prev, G) / 2.0',
        'lam = np.einsum("ij,ij->j", basis, pair.B @ basis)',
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DP-PCA paper beta_t 8K -> 4K",
        "pca/_oja.py",
        "paper_std_factor = (8 * K",
        "paper_std_factor = (4 * K",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "DP-PCA paper: Alg 4 at the whole epsilon",
        "pca/_oja.py",
        'b_eps, b_delta = (budget.epsilon, budget.delta) if calibration == "tight" else (\n        budget.epsilon / 2, budget.delta / 2)',
        "b_eps, b_delta = (budget.epsilon, budget.delta)",
        "tests/test_pinned_dp_pca_gep.py",
    ),
    Mutation(
        "F1 frobenius sensitivity halved",
        "lowrank/_factorization.py",
        "    sens = bound * math.sqrt((c_t + c_v) * levels)\n",
        "    sens = bound * math.sqrt((c_t + c_v) * levels) / 2\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F2 frobenius tight sigma x0.5",
        "lowrank/_factorization.py",
        "        sigma = analytic_noise_multiplier(epsilon, delta - delta_sketch) * sens\n",
        "        sigma = analytic_noise_multiplier(epsilon, delta - delta_sketch) * sens * 0.5\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F3 frobenius c_v dropped",
        "lowrank/_factorization.py",
        "    sens = bound * math.sqrt((c_t + c_v) * levels)\n",
        "    sens = bound * math.sqrt((c_t) * levels)\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F4 frobenius bound ignored",
        "lowrank/_factorization.py",
        "    sens = bound * math.sqrt((c_t + c_v) * levels)\n",
        "    sens = math.sqrt((c_t + c_v) * levels)\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F5 embedding factor always 1",
        "lowrank/_factorization.py",
        "    return 1.0 if rows >= cols else chi2_factor(rows, delta_s)\n",
        "    return 1.0\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F6 frobenius paper sigma x0.5",
        "lowrank/_factorization.py",
        "        sigma = math.sqrt((1 + alpha) * math.log(1 / delta)) / epsilon * bound * math.sqrt(levels)\n",
        "        sigma = math.sqrt((1 + alpha) * math.log(1 / delta)) / epsilon * bound * math.sqrt(levels) / 2\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F7 frobenius delta_s not split",
        "lowrank/_factorization.py",
        "    delta_s = delta_sketch / 2\n",
        "    delta_s = delta_sketch\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F8 frobenius exact chi2 quantile instead of LM",
        "lowrank/_sketches.py",
        "    return 1.0 + 2.0 * math.sqrt(x / d) + 2.0 * x / d\n",
        "    return float(stats.chi2.isf(delta_s, d)) / d\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "T1 turnstile and V4 covariance sketches N2 x0.5",
        "lowrank/_streaming.py",
        "    return Y, np.ascontiguousarray(Z.T), report",
        "    return Y, np.ascontiguousarray(Z.T / 2), report",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "T2 turnstile and V4 covariance sketches N1 x0.8",
        "lowrank/_streaming.py",
        "    return Y, np.ascontiguousarray(Z.T), report",
        "    return 0.8 * Y, np.ascontiguousarray(Z.T), report",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "TS1 turnstile space-optimal N2 x0.5",
        "lowrank/_turnstile_space_optimal.py",
        "        self._Z = smin * (self._S @ self._T[:, n:].T) + N2\n",
        "        self._Z = smin * (self._S @ self._T[:, n:].T) + N2 / 2\n",
        "tests/test_lowrank_turnstile_space_optimal.py",
    ),
    Mutation(
        "TS2 turnstile space-optimal padding sigma_min halved",
        "lowrank/_turnstile_space_optimal.py",
        "        smin = self._so.sigma_min\n",
        "        smin = self._so.sigma_min / 2\n",
        "tests/test_lowrank_turnstile_space_optimal.py",
    ),
    Mutation(
        "TS3 turnstile space-optimal N1 x0.8",
        "lowrank/_turnstile_space_optimal.py",
        "smin * self._Psi]) + N1\n",
        "smin * self._Psi]) + 0.8 * N1\n",
        "tests/test_lowrank_turnstile_space_optimal.py",
    ),
    Mutation(
        "TS5 Priv1 tree calibrated for b, not b sqrt(L)",
        "lowrank/_continual_space_optimal.py",
        "bound=float(bound) * math.sqrt(self.levels),",
        "bound=float(bound),",
        "tests/test_lowrank_turnstile_space_optimal.py",
    ),
    Mutation(
        "TS6 Priv1 tree node padding dropped",
        "lowrank/_continual_space_optimal.py",
        "        Y_c = exact[0] + self._so.sigma_min * releaser.standard_normal(exact[0].shape)\n",
        "        Y_c = exact[0] + 0 * releaser.standard_normal(exact[0].shape)\n",
        "tests/test_lowrank_turnstile_space_optimal.py",
    ),
    Mutation(
        "TS4 turnstile space-optimal publication not made stale by updates",
        "lowrank/_turnstile_space_optimal.py",
        "        self._Y_c[ru], self._Y_r[:, cu], self._Z = Y_c, Y_r, Z\n        self._changed()\n",
        "        self._Y_c[ru], self._Y_r[:, cu], self._Z = Y_c, Y_r, Z\n",
        "tests/test_lowrank_turnstile_space_optimal.py",
    ),
    Mutation(
        "C1 tree_levels without +1",
        "lowrank/_continual.py",
        "    return (int(horizon) - 1).bit_length() + 1\n",
        "    return (int(horizon) - 1).bit_length()\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "C2 levels - 1 in the calibration",
        "lowrank/_continual.py",
        "sketch_failure_share=sketch_failure_share, levels=self.levels,",
        "sketch_failure_share=sketch_failure_share, levels=self.levels - 1,",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "C3 levels ignored (1)",
        "lowrank/_continual.py",
        "sketch_failure_share=sketch_failure_share, levels=self.levels,",
        "sketch_failure_share=sketch_failure_share, levels=1,",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "C4 node noise N2 x0.5",
        "lowrank/_continual.py",
        "N1, N2 = split_joint(flat, [(m, t), (v, n)])\n        return N1, N2\n",
        "N1, N2 = split_joint(flat, [(m, t), (v, n)])\n        return N1, N2 / 2\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "C5 child noise not removed",
        "lowrank/_continual.py",
        "            Y += y - N1\n",
        "            Y += y\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "V1 covariance replace-one sqrt2 dropped",
        "lowrank/_covariance.py",
        "        scale = math.sqrt(2.0) if rel is Relation.REPLACE_ONE else 1.0\n",
        "        scale = 1.0\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "V2 covariance C instead of C^2",
        "lowrank/_covariance.py",
        "        b = scale * sensitivity_norm(C_r) ** 2\n",
        "        b = scale * sensitivity_norm(C_r)\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "V3 covariance rows not clipped",
        "lowrank/_covariance.py",
        "        Xc, _ = clip_rows(X, self.row_norm, on_norm_violation=self.on_norm_violation, owner=owner)\n",
        "        Xc = X\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H1 HR b = C (not 2C)",
        "lowrank/_hardt_roth.py",
        "    b = 2.0 * C\n",
        "    b = C\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H2 HR d2 halved",
        "lowrank/_hardt_roth.py",
        "    d2 = b * tau\n",
        "    d2 = b * tau / 2\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H3 HR sigma1 halved",
        "lowrank/_hardt_roth.py",
        "        sigma1, sigma2 = s1 * d1, s2 * d2\n",
        "        sigma1, sigma2 = s1 * d1 / 2, s2 * d2\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H4 HR no stage split",
        "lowrank/_hardt_roth.py",
        "        s1, s2 = split_noise_multiplier(s, [w, 1.0 - w])\n",
        "        s1, s2 = s, s\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H5 HR pruning removed",
        "lowrank/_hardt_roth.py",
        "scale[over] = tau / norms[over]",
        "scale[over] = 1.0",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H6 HR rows not clipped",
        "lowrank/_hardt_roth.py",
        "        clipped, _ = clip_rows(inputs.A, inputs.C, on_norm_violation=inputs.inputs.on_norm_violation,\n"
        "                               copy=True, owner=_OWNER)\n",
        "        clipped = inputs.A\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H7 HR stage-1 exact q -> sqrt",
        "lowrank/_hardt_roth.py",
        "    d1 = b * math.sqrt(chi2_quantile_factor(int(ell), delta_s))\n",
        "    d1 = b * chi2_quantile_factor(int(ell), delta_s) ** 0.25\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H8 HR paper sigma2 halved",
        "lowrank/_hardt_roth.py",
        "        sigma2 = d2 * factor\n",
        "        sigma2 = d2 * factor / 2\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L1 local b = C (not 2C)",
        "local/_lowrank.py",
        "b = 2.0 * sensitivity_norm(float(row_norm))\n    delta_sketch",
        "b = 1.0 * sensitivity_norm(float(row_norm))\n    delta_sketch",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L2 local d_z = b sqrt(q_v)",
        "local/_lowrank.py",
        "b * chi2_quantile_factor(int(v), delta_s)",
        "b * math.sqrt(chi2_quantile_factor(int(v), delta_s))",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L3 local delta_s not split in 3",
        "local/_lowrank.py",
        "    delta_s = delta_sketch / 3.0\n",
        "    delta_s = delta_sketch\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L4 local report Z noise x0.5 (joint report, after the draw)",
        "local/_lowrank.py",
        "Z=noisy[t:].reshape(v, v))",
        "Z=0.5 * (noisy[t:].reshape(v, v) + np.outer(inputs.sketches[1][:, inputs.i], "
        "inputs.sketches[2] @ rows.source)))",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L5 local simulate_sum not scaled by sqrt(m)",
        "local/_lowrank.py",
        "noise.sigma_z * math.sqrt(m), noise.sensitivity_z",
        "noise.sigma_z, noise.sensitivity_z",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L6 local protocol rows not clipped",
        "local/_lowrank.py",
        "A_c = clip_rows(inputs.A, i.C, on_norm_violation=i.on_norm_violation, copy=True, owner=_OWNER)[0]",
        "A_c = inputs.A",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L7 local report row not clipped",
        "local/_lowrank.py",
        "a2, _ = clip_rows(arr.astype(np.float64)[None, :], inputs.C,\n"
        "                          on_norm_violation=inputs.on_norm_violation, copy=False)\n",
        "a2 = arr.astype(np.float64)[None, :]\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L8 local paper sigma_z halved",
        "local/_lowrank.py",
        "        sigma_z = b * (1.0 + a) * math.sqrt(log_inv) / budget.epsilon\n",
        "        sigma_z = b * (1.0 + a) * math.sqrt(log_inv) / budget.epsilon / 2\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L9 local per-user G_i x0.5 (after the draw)",
        "local/_lowrank.py",
        'Z += releaser.add("Z", clean).sum(axis=0)',
        'Z += (clean + 0.5 * (releaser.add("Z", clean) - clean)).sum(axis=0)',
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F9 frobenius event multiplier x2",
        "lowrank/_factorization.py",
        "    events = (dp_accounting.GaussianDpEvent(sigma / sens), EpsilonDeltaDpEvent(0.0, delta_sketch))\n",
        "    events = (dp_accounting.GaussianDpEvent(2 * sigma / sens), EpsilonDeltaDpEvent(0.0, delta_sketch))\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "F10 frobenius sketch delta not charged",
        "lowrank/_factorization.py",
        "    events = (dp_accounting.GaussianDpEvent(sigma / sens), EpsilonDeltaDpEvent(0.0, delta_sketch))\n",
        "    events = (dp_accounting.GaussianDpEvent(sigma / sens), EpsilonDeltaDpEvent(0.0, 0.0))\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H9 HR stage-2 event multiplier x2",
        "lowrank/_hardt_roth.py",
        "        dp_accounting.GaussianDpEvent(sigma2 / d2),\n",
        "        dp_accounting.GaussianDpEvent(2 * sigma2 / d2),\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "L10 local tight event multiplier x2",
        "local/_lowrank.py",
        "        events = (dp_accounting.GaussianDpEvent(s), EpsilonDeltaDpEvent(0.0, delta_sketch))\n",
        "        events = (dp_accounting.GaussianDpEvent(2 * s), EpsilonDeltaDpEvent(0.0, delta_sketch))\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "H10 HR row_change b halved",
        "lowrank/_hardt_roth.py",
        "else float(row_change) / 2.0\n",
        "else float(row_change) / 4.0\n",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "P1 HR power sensitivity sqrt(2) C^2 -> C^2",
        "lowrank/_power.py",
        "    sens = math.sqrt(2.0) * C**2",
        "    sens = C**2",
        "tests/test_lowrank_power.py",
    ),
    Mutation(
        "P2 HR power rows not clipped",
        "lowrank/_hardt_roth.py",
        "        clipped, _ = clip_rows(inputs.A, inputs.C, on_norm_violation=inputs.inputs.on_norm_violation,\n"
        "                               copy=True, owner=_OWNER)\n",
        "        clipped = inputs.A\n",
        "tests/test_lowrank_power.py",
    ),
    Mutation(
        "P3 HR power budget not split over the iterations",
        "lowrank/_power.py",
        "    mults = split_noise_multiplier(s, list(shares))\n",
        "    mults = [s] * len(shares)\n",
        "tests/test_lowrank_power.py",
    ),
    Mutation(
        "L11 local row_change b halved",
        "local/_lowrank.py",
        "float(row_change) / 2.0  # the noise plan's distance is 2 C",
        "float(row_change) / 4.0  # the noise plan's distance is 2 C",
        "tests/test_pinned_lowrank_more.py",
    ),
    Mutation(
        "exponential joint accounting drops the max c term (replace-one)",
        "pca/_exponential.py",
        "    units = w.sum() + (w.max() if replace_one else 0.0)",
        "    units = w.sum() + (0.0 if replace_one else 0.0)",
        "tests/test_exponential.py",
    ),
    Mutation(
        "exponential adaptive split spends c(m) on all directions",
        "pca/_exponential.py",
        "    return best, [_equal_concentration(plan, best_m)] * best_m + [0.0] * (n - best_m)",
        "    return best, [_equal_concentration(plan, best_m)] * n",
        "tests/test_exponential.py",
    ),
    Mutation(
        "exponential diagonal L1 sensitivity 2 C^2 -> C^2 (replace-one)",
        "pca/_exponential.py",
        "        l1_diag = (2.0 if r1 else 1.0) * C2",
        "        l1_diag = (1.0 if r1 else 1.0) * C2",
        "tests/test_exponential.py",
    ),
    Mutation(
        "exponential eigenvalues of A and A_SS released at one release's sensitivity",
        "pca/_exponential.py",
        "        l1 = (2.0 if r1 else 1.0) * C2 * (2.0 if coordinates else 1.0)",
        "        l1 = (2.0 if r1 else 1.0) * C2 * (1.0 if coordinates else 1.0)",
        "tests/test_exponential.py",
    ),
    Mutation(
        "minibatch_oja adaptive: the batches' multiplier calibrated alone, not with the histogram",
        "pca/_minibatch.py",
        "multiplier = calibrate(clip.compose(dp_accounting.GaussianDpEvent),",
        "multiplier = calibrate(dp_accounting.GaussianDpEvent,",
        "tests/test_adaptive_clip_streaming.py",
    ),
    Mutation(
        "streaming adaptive clip: rows clipped at the bound C, batch noise at the released clip",
        "pca/_stream.py",
        'return dataclasses.replace(self, rows=rows, row_norm=r, mode="clip")',
        'return dataclasses.replace(self, rows=rows, mode="clip")',
        "tests/test_adaptive_clip_streaming.py",
    ),
    Mutation(
        "private_oja adaptive: the step multiplier calibrated alone, not with the histogram",
        "pca/_oja.py",
        "calibrate(clip.compose(dp_accounting.GaussianDpEvent), budget.epsilon, budget.delta,",
        "calibrate(dp_accounting.GaussianDpEvent, budget.epsilon, budget.delta,",
        "tests/test_adaptive_clip_streaming.py",
    ),
    Mutation(
        "dp_pca adaptive: the batch multiplier calibrated alone, not with the histogram",
        "pca/_oja.py",
        "                clip.compose(dp_accounting.GaussianDpEvent), budget.epsilon",
        "                dp_accounting.GaussianDpEvent, budget.epsilon",
        "tests/test_adaptive_clip_streaming.py",
    ),
    Mutation(
        "clipping: norms compared with a bound far from 1 without the power-of-two scaling",
        "privacy/_clipping.py",
        "    if 2.0 ** -k < row_norm < 2.0 ** k:\n        return 1.0",
        "    if True:\n        return 1.0",
        "tests/test_clipping_range.py",
    ),
    Mutation(
        "dpdispca add/remove: one array cut into sites by position, not by a random site per row",
        "distributed/_protocol.py",
        "            parts = _random_split(data, n_sites, rng)\n",
        "            parts = _split_rows(data, n_sites)\n",
        "tests/test_neighbour_invariance.py",
    ),
    Mutation(
        "dpdispca add/remove: the row blocks of one Dask array accepted as sites",
        "distributed/_protocol.py",
        "    if n_private and sites.numblocks[0] > 1:\n",
        "    if False:\n",
        "tests/test_neighbour_invariance.py",
    ),
]


def run(mutation: Mutation) -> tuple[bool, str]:
    """Apply one mutation to a scratch copy and run its test file; returns (caught, last line)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
        path = src / "dpspectral" / mutation.file
        text = path.read_text()
        if text.count(mutation.old) != 1:
            return False, f"the mutated line is not found once in {mutation.file}: update this list"
        path.write_text(text.replace(mutation.old, mutation.new))
        env = dict(
            os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", NUMBA_CACHE_DIR=str(Path(tmp) / "nb")
        )
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", mutation.tests],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        lines = r.stdout.strip().splitlines()
        return r.returncode == 1, lines[-1] if lines else r.stderr[-300:]


def main(prefixes: list[str]) -> int:
    bad = 0
    for m in MUTATIONS:
        if prefixes and not any(m.name.startswith(p) for p in prefixes):
            continue
        caught, last = run(m)
        if m.sound:
            verdict = "survived (sound)" if not caught else "caught (sound)"
        else:
            verdict = "caught" if caught else "SURVIVED"
            bad += not caught
        print(f"{verdict:18s} {m.name}  [{m.tests}: {last}]", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
