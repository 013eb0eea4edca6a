"""The README's figure: Pass@k against k from 10 trials per problem, beside all 10,000.

Run from the repository root: ``python docs/images/make_readme_figure.py`` (about a
minute). Three Pythia models of the bundled MATH example (128 problems, 10 trials
each, ``math_m10``): the pooled fit of all 7 models (``passmix.fit_pooled``, what
``passmix estimate --example`` reports) and each model's own Beta mixture
(``passmix.fit``), each with its 95% profile-likelihood intervals, the naive
plug-in estimate, and the unbiased estimate from all 10,000 trials per problem
(``math_10k``) as the truth to check against.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import passmix  # noqa: E402
from passmix.examples import example_path, load_example  # noqa: E402

MODELS = ("Pythia 160M", "Pythia 1B", "Pythia 12B")
K = np.unique(np.geomspace(1, 10_000, 40).round().astype(int))


def main() -> None:
    groups = passmix.read_counts(example_path("math_m10"), group_by="model")
    pooled = passmix.fit_pooled(groups, seed=0)  # what `passmix estimate --example` fits
    full = load_example("math_10k")
    fig, axes = plt.subplots(1, len(MODELS), figsize=(10, 3.3), sharey=True)
    for ax, model in zip(axes, MODELS):
        counts = groups[(model,)]
        rows = full[full["model"] == model]
        truth = passmix.combinatorial_estimate(
            passmix.Counts(rows["successes"].to_numpy(), rows["trials"].to_numpy()),
            "pass@k", K)
        for result, name, color in ((pooled.system(model), "pooled fit (7 models)", "C0"),
                                    (passmix.fit(counts, seed=0), "this model alone",
                                     "C2")):
            lower, upper = result.interval("pass@k", K)
            ax.fill_between(K, lower, upper, color=color, alpha=0.18, lw=0)
            ax.plot(K, result.metric("pass@k", K), color=color, lw=1.8,
                    label=f"{name}, 95% interval")
        ax.plot(K, passmix.naive_estimate(counts, "pass@k", K), color="C1", lw=1,
                label="naive plug-in")
        ax.plot(K, truth, "k.-", ms=3, lw=1, label="all 10,000 trials")
        ax.axvline(10, color="grey", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.set_title(f"{model}", fontsize=10)
        ax.set_xlabel("horizon k (10 trials per problem observed)")
    axes[0].set_ylabel("Pass@k on 128 MATH problems")
    axes[0].legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    out = Path(__file__).with_name("horizons_math.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
