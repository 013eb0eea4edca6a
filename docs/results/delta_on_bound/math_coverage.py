"""Delta and profile coverage on the 10k MATH data: 7 models x 10 subsamples of m trials.

Run:  python docs/results/delta_on_bound/math_coverage.py M

Prints coverage (``covered``; ``covered_tol`` allows the reference's own
rounding) and mean width per method, metric and horizon, and writes every
interval to ``math_coverage_M.csv`` beside this script.
"""

import sys
import warnings
from pathlib import Path

from passmix.experiments.coverage import interval_coverage, math_cases

warnings.simplefilter("ignore")
m = int(sys.argv[1])
df = interval_coverage(math_cases(range(10), m), methods=["delta", "profile"])
df["width"] = df["upper"] - df["lower"]
print(f"m = {m}")
print(df.groupby(["method", "metric", "k"])[["covered", "covered_tol", "width"]].mean()
      .round(3).to_string())
df.to_csv(Path(__file__).with_name(f"math_coverage_{m}.csv"), index=False)
