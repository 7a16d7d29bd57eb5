# Why the extension gets its own copy of libstdc++, and whether linking the shared one by name fixes it.
for f in libstdc++.so libstdc++.a; do echo "$f -> $(g++ -print-file-name=$f)"; ls -la "$(g++ -print-file-name=$f)" 2>&1; done
dpkg -S libstdc++.a 2>/dev/null | head -3; ls /usr/lib/gcc/x86_64-linux-gnu/13/ | grep -i stdc
rm -rf /tmp/sx && mkdir -p /tmp/sx && cat > /tmp/sx/e.cpp <<'CPP'
#include <torch/library.h>
#include <c10/util/Exception.h>
int64_t lltm_probe(int64_t n) { TORCH_CHECK(n < 0, "got ", n); return n; }
TORCH_LIBRARY(sxprobe, m) { m.def("probe(int n) -> int"); m.impl("probe", &lltm_probe); }
CPP
cat > /tmp/sx/t.py <<'PY'
import sys, torch
from torch.utils import cpp_extension
flags = sys.argv[2:]
lib = cpp_extension.load(name=sys.argv[1], sources=["/tmp/sx/e.cpp"], extra_ldflags=flags, build_directory=None, is_python_module=False, verbose=False)
torch.ops.load_library(lib) if isinstance(lib, str) else None
try:
    torch.ops.sxprobe.probe(42)
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
PY
for v in "plain" "shared -l:libstdc++.so.6"; do set -- $v; name=sx_$1; shift
  python3 /tmp/sx/t.py $name "$@" > /tmp/sx/$name.out 2>&1; rc=$?
  so=$(ls ~/.cache/torch_extensions/*/$name/$name.so 2>/dev/null | head -1)
  echo "$name rc=$rc: $(tail -1 /tmp/sx/$name.out) | NEEDED: $(readelf -d $so 2>/dev/null | grep NEEDED | grep -o 'libstdc[^]]*' | tr '\n' ' ') | std:: defined: $(nm -D --defined-only $so 2>/dev/null | grep -c ' _ZNS')"
done
