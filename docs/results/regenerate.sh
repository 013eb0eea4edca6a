#!/usr/bin/env bash
# Regenerate docs/results/ from the real repeated-trial data bundled in
# src/passmix/example_data (see its README for provenance).
# Run from the repository root: bash docs/results/regenerate.sh
# Each report.md also quotes its own command. Afterwards errors.csv is
# gzipped and the PDF copies of the figures are removed to keep the folder
# small (the harness always writes errors.csv and PNG + PDF figures).
set -euo pipefail
cd "$(dirname "$0")/../.."

passmix experiment repeated src/passmix/example_data/math_pythia_10k.csv --group-by model \
    --out docs/results/math_10k --jobs 2 --no-cache --quiet \
    --title "Large Language Monkeys MATH (Pythia, 10,000 samples per problem)"
passmix experiment repeated src/passmix/example_data/math_pythia_10k.csv --group-by model \
    --m 10 --seeds 9 --out docs/results/math_10k_m10_9seeds --jobs 2 --no-cache --quiet \
    --no-figures --title "MATH at m = 10 over seeds 0-8"
passmix experiment repeated src/passmix/example_data/taubench_airline.csv \
    --group-by model,domain --out docs/results/taubench_airline --no-cache --quiet --seeds 30 \
    --method naive --method combinatorial --method mixture --method pooled \
    --title "tau-bench airline (gpt-4o, 4 trials per task)"
passmix experiment repeated src/passmix/example_data/livecodebench.csv.gz \
    --group-by model --out docs/results/livecodebench --jobs 2 --no-cache --quiet \
    --title "LiveCodeBench 2024-04-17 (43 models, 10 samples per problem)"

passmix experiment scaling src/passmix/example_data/math_pythia_10k.csv --group-by model \
    --seeds 9 --out docs/results/scaling_math_10k --jobs 2 --no-cache --quiet \
    --title "Pass@k scaling on Large Language Monkeys MATH (Pythia, 10,000 samples per problem)"

passmix experiment sensitivity src/passmix/example_data/mizrahi_bbh.csv.gz \
    --group-by task,model --out docs/results/sensitivity_bbh --jobs 2 --no-cache --quiet \
    --title "Prompt sensitivity on BIG-bench Hard (Mizrahi et al. 2024: 165 task x model groups, 136-189 instructions, 100 questions)"
python docs/results/sensitivity_simulated.py

for dir in math_10k math_10k_m10_9seeds taubench_airline livecodebench scaling_math_10k \
        sensitivity_bbh sensitivity_simulated; do
    gzip -9 -n -f "docs/results/$dir/errors.csv"
    rm -f docs/results/"$dir"/*.pdf
done
gzip -9 -n -f docs/results/scaling_math_10k/allocations.csv
python docs/results/pooled_summary.py
python docs/results/pooled_slopes.py
python docs/results/pooled_intervals.py
python docs/results/pooled_reorder.py --reps 20
python docs/results/pooled_reorder.py --reps 100 --m 10 --rho 1 --update --models pooled
python docs/results/pooled_check.py --reps 40
python docs/results/two_component_properties.py --sets 150
python docs/results/zero_inflated.py
python docs/results/rare_coverage.py --reps 20 --jobs 2
python docs/results/rare_coverage.py --reps 100 --truths logistic --methods mixture pooled --jobs 2 --update
python docs/results/compare/compare_rare.py --reps 20 --jobs 2
# reads the default ends that shape_coverage.py and beyond_the_trials/math_coverage.py wrote
# (hours on 2 cores, not run here: re-run them first when the default intervals change)
python docs/results/shape_free.py --reps 100 --jobs 2
