#!/usr/bin/env bash
# Session 44, call d, on main: benchmarks.precision at 70x9x72 with 8 seeds. scripts/rounding_sim.py
# (SIM_SEEDS=8) predicts bf16 d_input persistent 1.67e-1, step 1.43e-1, eager 4.05e-1; session 42's
# 4 seeds gave the persistent path 4.69e-1 where the simulation gives 2.29e-1 (its step path
# matched: 2.02e-1 against 2.05e-1).
set -uo pipefail
export PYTHONUNBUFFERED=1
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1; head -2 $OUT/d-env.txt
PYTHONPATH=. timeout 240 python3 -m benchmarks.precision --device cuda --seeds 8 --sizes 70x9x72 > $OUT/d-precision.txt 2>&1
echo "precision rc=$?"; cat $OUT/d-precision.txt
