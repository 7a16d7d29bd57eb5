# The final GPU job: setup and cold build, the whole suite, the sequence bench, issue 14's before/after.
set -o pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=$(mktemp -d)
{
  date -u +%Y-%m-%dT%H:%M:%SZ; git log -1 --format='%h %s' 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  nvcc --version | tail -2; c++ --version | head -1; echo "cores: $(nproc)"
  echo "== cold import (empty cache)"
  /usr/bin/time -f "cold import wall %e s" python3 -c "import lltm_jit; print(lltm_jit.build_info())"
  echo "per-file compile times (ninja log: start ms, end ms, file):"
  find $LLTM_JIT_CACHE_DIR -name .ninja_log -exec cut -f1,2,4 {} \; | grep -v '^#'
  so=$(python3 -c "import lltm_jit; print(lltm_jit.build_info()['library'])")
  echo "NEEDED: $(readelf -d $so | grep NEEDED | grep -o 'lib[^]]*' | tr '\n' ' ')"
  echo "std:: symbols defined in the library: $(nm -D --defined-only $so | grep -c ' _ZNS')"
  python3 -c "
import torch, lltm_jit
x = torch.randn(4, 3, 5, device='cuda'); w = torch.randn(18, 11, device='cuda'); b = torch.randn(18, device='cuda')
try: lltm_jit.lltm_sequence(x, w, b, lengths=torch.tensor([4, 9, 1]))
except RuntimeError as e: print('TORCH_CHECK with numbers:', str(e).splitlines()[0])"
} > $OUT/setup.txt 2>&1; cat $OUT/setup.txt | tail -8
timeout 330 python3 -m pytest tests -q -rs -p no:cacheprovider > $OUT/tests.txt 2>&1; tail -6 $OUT/tests.txt
timeout 150 python3 bench.py --kind sequence --out $OUT > $OUT/bench-sequence.txt 2>$OUT/bench-sequence.err; grep -v "^saved" $OUT/bench-sequence.txt | tail -40
{ (cd .gpu/old && PYTHONPATH=$PWD LLTM_JIT_CACHE_DIR=/tmp/c-old timeout 60 python3 ../carried.py before) 2>&1 | grep -E "^before|Error"
  (cd .gpu/mid && PYTHONPATH=$PWD LLTM_JIT_CACHE_DIR=/tmp/c-mid timeout 80 python3 ../carried.py before) 2>&1 | grep -E "^before|Error"
  timeout 80 python3 .gpu/carried.py after 2>&1 | grep -E "^after|Error"; } > $OUT/carried.txt; cat $OUT/carried.txt
