#!/usr/bin/env bash
# Session 47, call b: wgmma_chunks.cu (~30 s: rs2's product loop rebuilt a piece at a time around
# wgmma's own rate), then s47c.sh (the SS product in the kernel) and s47d.sh (the backward's
# products through cuBLAS directly). Predicted for wgmma_chunks:
# variant 0 ~50 cycles a wgmma (wgmma_rate.cu's), and the piece that takes a step from ~3.2k
# cycles toward rs2's ~12-14k names what holds the kernel's wgmma's back; if none does (3-5 at
# ~3-4k), the cause is outside the loop's shape (the kernel's registers, its other code). Variants
# 6-7 read A from the stage (SS, a proxy fence a chunk), as wgmma-ss.patch's kernel does.
set -uo pipefail
HERE=$PWD/benchmarks/results/h100-20261207-s47/scripts
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1; head -2 $OUT/b-env.txt
nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/wgmma_chunks $HERE/wgmma_chunks.cu \
  && timeout 60 /tmp/wgmma_chunks > $OUT/b-wgmma-chunks.txt 2>&1
echo "wgmma_chunks rc=$?"; cat $OUT/b-wgmma-chunks.txt
# SKIP_SS=1 (a call with ~4 minutes of device time): wgmma_chunks and s47d.sh alone
[ "${SKIP_SS:-0}" = 1 ] || bash $HERE/s47c.sh
bash $HERE/s47d.sh
