#!/usr/bin/env bash
# Session 43, call a: (1) the tests of b7e5f9a/e833753 (the streamed forward's rule and its
# long-sequence case), never run on a GPU; (2) where the streamed forward's product loop stalls
# (ncu's warp states, pipes, shared-memory wavefronts, and stall samples by SASS line at
# 256x512x1024 bf16 T = 64); (3) mma.sync's rate on one multiprocessor alone and fed by ldmatrix
# in the kernel's pattern, by warps a block (mma_rate.cu); (4) session 42's wgmma probe.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s43/scripts; S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -3 $OUT/a-env.txt
(cd /tmp && nvcc -O3 -arch=sm_90a -o mma_rate $HERE/mma_rate.cu && timeout 60 ./mma_rate) > $OUT/a-mma-rate.txt 2>&1
echo "mma_rate rc=$?"; cat $OUT/a-mma-rate.txt
PYTHONPATH=$ROOT timeout 300 python3 -m pytest tests/test_sequence.py -q -x -n 8 -p no:cacheprovider \
  -k "streamed or which_persistent or fall_back or long_sequence" > $OUT/a-tests.txt 2>&1
echo "tests rc=$?"; tail -3 $OUT/a-tests.txt
# (2) a -lineinfo build of main, its streamed cubin disassembled with lines
rm -rf /tmp/li /tmp/li-cache && mkdir /tmp/li && cp -r lltm_jit src /tmp/li/
sed -i 's/^NVCC_FLAGS = ("-O3",/NVCC_FLAGS = ("-O3", "-lineinfo",/' /tmp/li/lltm_jit/jit/spec.py
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache python3 -m lltm_jit build 2>&1 | grep "built in")
mkdir -p /tmp/cubins && cd /tmp/cubins
for o in $(find /tmp/li-cache -name "tensor_core_forward_bf16_streamed*.o"); do cuobjdump -xelf all $o > /dev/null 2>&1; done
for c in *.cubin; do nvdisasm -g -c $c; done > /tmp/disasm.txt 2>&1
cd /tmp/li
export LLTM_JIT_SEQUENCE_KERNEL=streamed PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache
timeout 150 ncu --kernel-name regex:streamed_forward --launch-skip 2 --launch-count 1 --section SourceCounters \
  --page source --print-source sass --csv python3 $S23/one_forward.py 256 512 1024 bfloat16 64 > /tmp/ncu-streamed.csv 2>&1
python3 $S23/sass_lines.py /tmp/ncu-streamed.csv /tmp/disasm.txt 40 > $OUT/a-stalls.txt 2>&1
echo "== stalls"; head -24 $OUT/a-stalls.txt
timeout 150 ncu --kernel-name regex:streamed_forward --launch-skip 2 --launch-count 1 --section WarpStateStats \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SchedulerStats \
  --section LaunchStats --section SpeedOfLight \
  --metrics smsp__inst_executed_op_ldsm.sum,smsp__inst_executed_pipe_tensor_op_hmma.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
  python3 $S23/one_forward.py 256 512 1024 bfloat16 64 > $OUT/a-ncu.txt 2>&1
echo "ncu rc=$?"; grep -E "Warp Cycles Per Issued|Stall|hmma|ldsm|Issue Slots|Active Warps|Eligible|Duration|Bank" $OUT/a-ncu.txt | head -40
unset LLTM_JIT_SEQUENCE_KERNEL
cd $ROOT
# (4) session 42's wgmma probe (its a/b timing left out: call c of session 42 has it)
S42=$ROOT/benchmarks/results/h100-20261206-s42/scripts
rm -rf /tmp/wp; mkdir /tmp/wp; cp -r lltm_jit src pyproject.toml /tmp/wp/
(cd /tmp/wp && patch -s -p1 < $S42/wgmma.patch && patch -s -p1 < $S42/wgmma-probe.patch) || echo "patch failed"
(cd /tmp/wp && PYTHONPATH=/tmp/wp LLTM_JIT_CACHE_DIR=/tmp/cache-wp timeout 100 python3 $HERE/wgmma_probe.py) > $OUT/a-wgmma-probe.txt 2>&1; echo "probe rc=$?"; tail -5 $OUT/a-wgmma-probe.txt
