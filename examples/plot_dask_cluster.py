"""
Distributed PCA on a Dask cluster
=================================

Rows held by several sites (hospitals, branches, devices) that may not pool them. With
:class:`~dpspectral.DistributedDPPCA` (DPdisPCA, Imtiaz and Sarwate 2018) each site computes its own
noisy second-moment matrix where its data live (a Dask worker) and sends only a noisy rank-``R``
proxy of it; the aggregator combines the proxies into one subspace. No row leaves its site.

**What is private.** Each site's rows, under ``replace_one`` neighbours: every site's release is
``(epsilon, delta)``-DP for the people at that site, and since the sites hold disjoint rows, so is the
whole protocol. The figure compares the captured energy of DPdisPCA against epsilon with two
baselines at the same privacy: one site alone (``local_pca``: it uses only its own rows) and a
trusted curator who pools every row (``pooled_pca``: the best one can do, but it needs the rows in
one place).

The example starts a small ``LocalCluster`` in this process (``processes=False``, one worker, one
thread) to stay light; with a real cluster pass its ``Client`` or scheduler address instead.
"""

# %%
# A cluster and eight sites
# -------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
from dask.distributed import Client, LocalCluster
from sklearn.datasets import load_digits

from dpspectral import DistributedDPPCA
from dpspectral.distributed import local_pca, pooled_pca
from dpspectral.metrics import captured_energy

QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
EPSILONS = [0.3, 3.0] if QUICK else [0.1, 0.3, 1.0, 3.0, 10.0]
REPEATS = 1 if QUICK else 5
K, S = 5, 4

cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
client = Client(cluster)

X, _ = load_digits(return_X_y=True)
X = X / 16.0  # a public scale (pixels are stored as 0..16); row norms are then at most 8
order = np.random.default_rng(0).permutation(len(X))
sites = [X[idx] for idx in np.array_split(order, S)]  # S sites, about 450 rows each
print([site.shape for site in sites])

# %%
# One fit on the cluster
# ----------------------
# ``engine="dask"`` (the default) finds the active ``Client`` and runs each site's step on a worker.
model = DistributedDPPCA(K, epsilon=1.0, delta=1e-6, row_norm=6.0, random_state=0).fit(sites)
print("sites that contributed:", model.sites_contributed_)
print(model.privacy_)
print("bytes sent to the aggregator:", model.bytes_sent_)

# %%
# Against epsilon, next to one site alone and a pooled curator
# ------------------------------------------------------------
# The captured energy is measured on the pooled rows' second moment, for the reader only (no site
# would publish it).
A = X.T @ X
curves = {"DPdisPCA (4 sites, Dask)": [], "one site alone": [], "pooled rows (trusted curator)": []}
for eps in EPSILONS:
    runs = {name: [] for name in curves}
    for seed in range(REPEATS):
        common = dict(epsilon=eps, delta=1e-6, row_norm=6.0, random_state=seed)
        dist = DistributedDPPCA(K, **common).fit(sites)
        runs["DPdisPCA (4 sites, Dask)"].append(captured_energy(dist.components_.T, A))
        runs["one site alone"].append(captured_energy(local_pca(sites, K, **common).components, A))
        pooled = pooled_pca(sites, K, **common)
        runs["pooled rows (trusted curator)"].append(captured_energy(pooled.components, A))
    for name in curves:
        curves[name].append(np.mean(runs[name]))
    print(f"epsilon {eps}: " + ", ".join(f"{name} {curves[name][-1]:.3f}" for name in curves))

client.close()
cluster.close()

# %%
# The figure: the fraction of the best rank-5 energy of the pooled second moment captured by each
# subspace (1 is the best possible), mean over the repeats. DPdisPCA sits between one site alone and
# the pooled curator: it gains from every site's rows without moving them.
fig, ax = plt.subplots(figsize=(6, 4))
for (name, values), style in zip(curves.items(), ["o-", "s--", "^:"], strict=True):
    ax.plot(EPSILONS, values, style, label=name)
ax.set_xscale("log")
ax.set_ylim(0, 1.05)
ax.set_xlabel("epsilon (delta = 1e-6), per site")
ax.set_ylabel("captured energy")
ax.set_title(f"Digits split over {S} sites, k = {K}")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
