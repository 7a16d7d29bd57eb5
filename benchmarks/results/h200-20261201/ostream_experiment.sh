#!/usr/bin/env bash
# One-shot experiment: why does a JIT-built extension die with SIGSEGV in
# std::basic_ostream<char>::_M_insert<long> when c10::str formats a number on the GPU image
# (Ubuntu 24.04, GCC 13.3, torch 2.11.0+cu130), and which build/load change avoids it.
#
#   bash ostream_experiment.sh            # PYTHON=/path/to/python to pick the interpreter
#
# It builds small extensions with torch.utils.cpp_extension.load under several flag sets (in
# parallel), runs each probe in its own subprocess (a crash kills only that probe), scans every
# loaded library for exported libstdc++ names, records LD_DEBUG=scopes,bindings for the baseline,
# takes a gdb backtrace of the baseline if gdb exists, and ends with a table. Writes only a fresh
# directory under /tmp and its log, ostream_experiment.log, in $OUT when set (else in that
# directory). About 1-2 minutes on 16 cores (the two pybind builds dominate).
set -u
PY=${PYTHON:-python3}
W=$(mktemp -d /tmp/ostr_exp.XXXXXX)
export OSTR_W=$W MAX_JOBS=${MAX_JOBS:-4}
LOGF="${OUT:-$W}/ostream_experiment.log"   # full details; stdout keeps to the essentials
{
echo "== workdir $W; full log $LOGF"
echo "== host: $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME") | $(uname -m) | $(ldd --version 2>&1 | head -1)"
echo "== c++: $(c++ --version | head -1) | g++ -dumpfullversion: $(g++ -dumpfullversion 2>/dev/null)"
echo "== link-time libstdc++: $(readlink -f "$(g++ -print-file-name=libstdc++.so.6)")"
echo "== python: $($PY -c 'import sys;print(sys.executable, sys.version.split()[0])')"
echo "== env: LD_PRELOAD='${LD_PRELOAD:-}' LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}' LANG='${LANG:-}' LC_ALL='${LC_ALL:-}'"
} | tee -a "$LOGF"

cat > "$W/light.cpp" <<'EOF'
// Probes for one std::ostringstream built in this library. <iostream> mirrors torch/extension.h
// (with GCC >= 13.2 it adds a reference to std::ios_base_library_init()).
#ifndef OSTR_NO_IOSTREAM
#include <iostream>
#endif
#include <dlfcn.h>
#include <cstdio>
#include <cstring>
#include <locale>
#include <sstream>
#include <string>
#include <c10/util/Exception.h>

static void put(char* buf, int len, const std::string& s) { std::snprintf(buf, len, "%s", s.c_str()); }

extern "C" int ostr_probe(long n, char* buf, int len) {  // the failing pattern: c10::str("got ", n)
  try {
    TORCH_CHECK(n < 0, "got ", n);
    put(buf, len, "no throw");
    return 0;
  } catch (const c10::Error& e) {
    put(buf, len, e.what_without_backtrace());
    return 1;
  }
}

extern "C" int std_probe(long n, char* buf, int len) {  // the same without c10
  std::ostringstream ss;
  ss << "got " << n;
  put(buf, len, ss.str());
  return 1;
}

extern "C" int nostream_probe(long n, char* buf, int len) {  // the project's current workaround
  try {
    TORCH_CHECK(n < 0, std::string("got ") + std::to_string(n));
    return 0;
  } catch (const c10::Error& e) {
    put(buf, len, e.what_without_backtrace());
    return 1;
  }
}

// Reads the facets that basic_ios::init cached in a fresh ostringstream (protected members,
// reached through a pointer to member named via a derived class) and says where each object and
// its vtable live. A num_put slot whose vtable is not num_put's is the locale::id mismatch of two
// libstdc++ copies.
struct IosPeek : std::basic_ios<char> {
  static auto num_put_member() { return &IosPeek::_M_num_put; }
  static auto ctype_member() { return &IosPeek::_M_ctype; }
};
static const char* base(const char* p) { const char* s = p ? std::strrchr(p, '/') : nullptr; return s ? s + 1 : (p ? p : "?"); }
static std::string where(const char* label, const void* obj) {
  Dl_info oi{}, vi{};
  const char* odso = obj && dladdr(obj, &oi) ? oi.dli_fname : "?";
  const void* vptr = obj ? *static_cast<const void* const*>(obj) : nullptr;
  const char* vsym = "?"; const char* vdso = "?";
  if (vptr && dladdr(vptr, &vi)) { vdso = vi.dli_fname; vsym = vi.dli_sname ? vi.dli_sname : "?"; }
  char line[600];
  std::snprintf(line, sizeof line, "%s: object in %s, vtable %s in %s; ", label, base(odso), vsym, base(vdso));
  return line;
}
extern "C" int facet_probe(long, char* buf, int len) {
  std::ostringstream ss;
  std::basic_ios<char>& ios = ss;
  const void* np = ios.*IosPeek::num_put_member();
  const void* ct = ios.*IosPeek::ctype_member();
  const void* np_now = &std::use_facet<std::num_put<char>>(ss.getloc());
  const void* id = &std::num_put<char>::id;
  Dl_info ii{};
  const char* id_dso = dladdr(id, &ii) ? ii.dli_fname : "?";
  void* h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
  const void* sys_id = h ? dlsym(h, "_ZNSt7num_putIcSt19ostreambuf_iteratorIcSt11char_traitsIcEEE2idE") : nullptr;
  std::string s = where("cached num_put", np) + where("cached ctype", ct);
  char line[400];
  std::snprintf(line, sizeof line, "use_facet(num_put)==cached: %s; num_put::id seen here in %s index %zu, "
                "libstdc++'s own id %s", np_now == np ? "yes" : "NO", base(id_dso),
                *static_cast<const size_t*>(id), sys_id == id ? "is the same object" : "is a DIFFERENT object");
  s += line;
  put(buf, len, s);
  const bool ok = np_now == np && std::strstr(s.c_str(), "7num_put") && std::strstr(s.c_str(), "5ctype");
  return ok ? 1 : 2;
}
EOF

cat > "$W/pyb.cpp" <<'EOF'
#include <torch/extension.h>
int64_t probe(int64_t n) { TORCH_CHECK(n < 0, "got ", n); return n; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("probe", &probe); }
EOF

cat > "$W/plain.cpp" <<'EOF'
#include <iostream>
#include <sstream>
int main() { std::ostringstream s; s << "got " << 42L; std::cout << s.str() << "\n"; }
EOF

cat > "$W/exp.py" <<'EOF'
import collections, concurrent.futures as cf, json, os, re, shlex, signal, subprocess, sys, time
W = os.environ["OSTR_W"]
PY = sys.executable
PROJECT = ["-O3", "-fno-trapping-math", "-fopenmp"]  # lltm_jit's CXX_FLAGS (LD_FLAGS: -fopenmp)
# name: (source, extra_cflags, extra_ldflags, what it tests)
BUILDS = {
    "A":  ("light", [], [], "baseline: cpp_extension.load defaults"),
    "N":  ("light", ["-DOSTR_NO_IOSTREAM"], [], "baseline without <iostream>"),
    "Q":  ("light", PROJECT, ["-fopenmp"], "lltm_jit's flags"),
    "B":  ("light", [], ["-lstdc++"], "FIX1: -lstdc++ ahead of -lc10/-ltorch*"),
    "QB": ("light", PROJECT, ["-lstdc++", "-fopenmp"], "FIX1 with lltm_jit's flags"),
    "C":  ("light", [], ["-static-libstdc++", "-static-libgcc", "-Wl,--exclude-libs,ALL"],
           "private static libstdc++ (expect ABORT: c10::Error uncatchable)"),
    "P":  ("pyb", [], [], "faithful: torch/extension.h + pybind, defaults"),
    "PB": ("pyb", [], ["-lstdc++"], "faithful + FIX1"),
}
# name: (build, function, runtime mode, what it tests)
PROBES = [
    ("A",          "A", "ostr_probe", "", "baseline TORCH_CHECK(false, \"got \", 42)"),
    ("A/std",      "A", "std_probe", "", "plain ostringstream << 42L in the extension"),
    ("A/facets",   "A", "facet_probe", "", "which facets the extension's stream cached"),
    ("A/nocuda",   "A", "ostr_probe", "nocuda", "baseline, CUDA not initialised"),
    ("A/LC_ALL=C", "A", "ostr_probe", "lcc", "baseline, LC_ALL=C LANG=C"),
    ("A/preload",  "A", "ostr_probe", "preload", "FIX2: libstdc++ RTLD_GLOBAL before import torch"),
    ("A/deepbind", "A", "ostr_probe", "deepbind", "FIX3: extension dlopen'ed RTLD_DEEPBIND"),
    ("A/no-ostream", "A", "nostream_probe", "", "current workaround (one std::string arg)"),
    ("N",  "N", "ostr_probe", "", BUILDS["N"][3]),
    ("Q",  "Q", "ostr_probe", "", BUILDS["Q"][3]),
    ("B",  "B", "ostr_probe", "", BUILDS["B"][3]),
    ("B/facets", "B", "facet_probe", "", "facets cached with FIX1"),
    ("QB", "QB", "ostr_probe", "", BUILDS["QB"][3]),
    ("C",  "C", "ostr_probe", "", BUILDS["C"][3]),
    ("P",  "P", "probe", "", BUILDS["P"][3]),
    ("PB", "PB", "probe", "", BUILDS["PB"][3]),
    ("T",  None, "torch", "", "torch's own c10::str with numbers (t[5] IndexError)"),
    ("X",  None, "plain", "", "plain g++ program, no torch"),
]

def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True, **kw)

def demangle(names):
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout
    return out.splitlines()

def cuda_init(mode):
    import torch
    if mode != "nocuda" and torch.cuda.is_available():
        torch.cuda.init(); torch.zeros(1, device="cuda")

# ---------------------------------------------------------------- subcommands run in children
def cmd_build(name):
    src, cflags, ldflags, _ = BUILDS[name]
    import torch
    from torch.utils.cpp_extension import load
    d = f"{W}/build/{name}"; os.makedirs(d, exist_ok=True)
    t = time.time()
    load(name=f"ostrexp_{name}", sources=[f"{W}/{src}.cpp"], extra_cflags=list(cflags),
         extra_ldflags=list(ldflags), build_directory=d, is_python_module=(src == "pyb"), verbose=False)
    print(f"built {name} in {time.time() - t:.0f}s")

def load_ext(build, mode):
    import ctypes, torch
    path = f"{W}/build/{build}/ostrexp_{build}.so"
    if mode == "deepbind":
        ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_DEEPBIND)
    torch.ops.load_library(path)  # what lltm_jit does (ctypes.CDLL, RTLD_LOCAL)
    return ctypes.CDLL(path)

def cmd_probe(build, func, mode):
    import ctypes
    if mode == "preload":
        libstd = open(f"{W}/runtime_libstdcxx").read().strip()
        ctypes.CDLL(libstd, mode=os.RTLD_GLOBAL)
    import torch
    cuda_init(mode)
    if func == "torch":
        try:
            torch.zeros(2)[5]
        except IndexError as e:
            print(str(e).splitlines()[0]); return
    if func == "probe":
        import importlib.util
        name = f"ostrexp_{build}"
        spec = importlib.util.spec_from_file_location(name, f"{W}/build/{build}/{name}.so")
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        try:
            m.probe(42); print("no throw")
        except RuntimeError as e:
            print(str(e).splitlines()[0])
        return
    lib = load_ext(build, mode)
    buf = ctypes.create_string_buffer(4096)
    rc = getattr(lib, func)(ctypes.c_long(42), buf, len(buf))
    print(buf.value.decode(errors="replace"))
    if func == "facet_probe" and rc != 1:
        sys.exit(3)

def cmd_maps():  # the libraries of a process that loaded torch (+CUDA) and the baseline extension
    import torch
    cuda_init("")
    load_ext("A", "")
    libs = []
    for line in open("/proc/self/maps"):
        p = line.split()[-1]
        if ".so" in p and p.startswith("/") and p not in libs:
            libs.append(p)
    print(json.dumps(libs))

# ---------------------------------------------------------------- orchestration
def run_child(args, env=None, timeout=150):
    t = time.time()
    try:
        r = subprocess.run([PY, f"{W}/exp.py", *args], capture_output=True, text=True, timeout=timeout, env=env)
        rc, out = r.returncode, (r.stdout + r.stderr)
    except subprocess.TimeoutExpired as e:
        rc, out = "TIMEOUT", str(e)
    return rc, out, time.time() - t

def verdict(rc, out, want="got 42"):
    if rc == 0 and want in out:
        return "PASS"
    if isinstance(rc, int) and rc < 0:
        return signal.Signals(-rc).name
    return "FAIL" if rc == 0 else f"FAIL rc={rc}"

def lastline(out, width=160):
    lines = [l for l in out.splitlines() if l.strip() and "No CUDA runtime" not in l and "UserWarning" not in l]
    return lines[-1][:width] if lines else ""

LOG = None  # opened by main(); the children (build/probe/maps) write nothing to it

def say(*a):  # stdout (what the device run shows) and the log
    line = " ".join(str(x) for x in a)
    print(line, flush=True); LOG.write(line + "\n"); LOG.flush()

def log(*a):  # the log only
    LOG.write(" ".join(str(x) for x in a) + "\n")

def needed(p):
    return " ".join(re.findall(r"\[(.*?)\]", "\n".join(l for l in sh(["readelf", "-d", p]).stdout.splitlines() if "NEEDED" in l)))

def main():
    global LOG
    LOG = open(os.path.join(os.environ.get("OUT") or W, "ostream_experiment.log"), "a")
    results = {}
    t0 = time.time()
    say("\n== building", ", ".join(BUILDS), "in parallel")
    with cf.ThreadPoolExecutor(len(BUILDS)) as ex:
        futs = {ex.submit(run_child, ["build", n], None, 400): n for n in BUILDS}
        for f in cf.as_completed(futs):
            n = futs[f]; rc, out, dt = f.result()
            ok = os.path.exists(f"{W}/build/{n}/ostrexp_{n}.so")
            results[f"build:{n}"] = ok
            say(f"  {n:3} {'ok' if ok else 'BUILD FAILED rc=' + str(rc)} ({dt:.0f}s)")
            if not ok:
                say(out[-1200:])
    if not results.get("build:A"):
        say("baseline did not build; stopping"); return

    rc, out, _ = run_child(["maps"])
    try:
        libs = json.loads(out.strip().splitlines()[-1])
    except Exception:
        say("maps child failed:", verdict(rc, out), out[-1500:]); libs = []
    libstd = next((p for p in libs if re.search(r"/libstdc\+\+\.so", p)), "")
    open(f"{W}/runtime_libstdcxx", "w").write(libstd or "libstdc++.so.6")
    glibcxx = sorted(set(re.findall(r"GLIBCXX_3\.4\.\d+", sh(["strings", "-a", libstd]).stdout)) if libstd else [],
                     key=lambda v: int(v.rsplit(".", 1)[1]))
    say(f"\n== runtime libstdc++: {libstd} (newest {glibcxx[-1] if glibcxx else '?'})")
    import torch
    say(f"== torch {torch.__version__} cxx11_abi={torch._C._GLIBCXX_USE_CXX11_ABI} "
        f"cuda={torch.version.cuda} gpu={torch.cuda.is_available()} lib={os.path.dirname(torch.__file__)}/lib")

    def exports(p):
        out = sh(["nm", "-D", "--defined-only", p]).stdout
        return {l.split()[-1].split("@")[0] for l in out.splitlines() if len(l.split()) >= 3}
    std_names = exports(libstd) if libstd else set()
    key = re.compile(r"St6locale|St8ios_base|St9basic_ios|num_put|numpunct|St5ctype|codecvt|_M_insert|"
                     r"basic_ostringstream|basic_stringbuf|ios_base_library_init|^_ZT[VTI]")
    others = [p for p in libs if p != libstd]
    with cf.ThreadPoolExecutor(16) as ex:
        exp = dict(zip(others, ex.map(exports, others)))
    say(f"\n== loaded libraries exporting libstdc++ names ({len(others)} loaded; libstdc++ exports {len(std_names)}):")
    for p in others:
        ov = sorted(exp[p] & std_names)
        if not ov:
            continue
        needs = "NEEDS libstdc++" if "libstdc++" in needed(p) else "does NOT need libstdc++"
        crit = [n for n in ov if key.search(n)]
        say(f"  {len(ov):5} {os.path.basename(p)} ({needs}); stream/locale/vtable-related: {len(crit)}")
        for d in demangle(crit[:12]):
            log(f"          {d[:200]}")
    a_so = f"{W}/build/A/ostrexp_A.so"
    say("\n== baseline extension NEEDED:", needed(a_so))
    if results.get("build:B"):
        say("== FIX1 extension NEEDED:    ", needed(f"{W}/build/B/ostrexp_B.so"))
    und = [l.split()[-1] for l in sh(["nm", "-D", "--undefined-only", a_so]).stdout.splitlines()]
    say("   baseline's std:: imports recorded without a symbol version (bound to whoever comes first):")
    for raw, d in zip(und, demangle([u.split("@")[0] for u in und])):
        if "std::" in d or "ios_base" in d:
            (say if "@" not in raw else log)(f"     {d[:120]}  [{raw.split('@')[1] if '@' in raw else 'UNVERSIONED'}]")

    say("\n== probes (each in its own process)")
    def one(pr):
        name, build, func, mode, _ = pr
        if build and not results.get(f"build:{build}"):
            return name, "NOT BUILT", ""
        if func == "plain":
            r = sh(f"c++ -O0 {W}/plain.cpp -o {W}/plain && {W}/plain")
            return name, verdict(r.returncode, r.stdout), lastline(r.stdout + r.stderr)
        env = dict(os.environ)
        if mode == "lcc":
            env.update(LC_ALL="C", LANG="C")
        rc, out, _ = run_child(["probe", build or "-", func, mode], env)
        log(f"--- probe {name} rc={rc}\n{out[-3000:]}")
        if func == "torch":
            v = "PASS" if rc == 0 and "index 5" in out else verdict(rc, out)
        elif func == "facet_probe":
            v = "CONSISTENT" if rc == 0 else ("MISMATCH" if rc == 3 else verdict(rc, out))
        else:
            v = verdict(rc, out)
        return name, v, lastline(out, 700 if func == "facet_probe" else 160)
    with cf.ThreadPoolExecutor(10) as ex:
        for name, v, detail in ex.map(one, PROBES):
            results[name] = (v, detail)
            if "facets" in name:
                say(f"  {name} [{v}]: {detail}")

    say("\n== LD_DEBUG=scopes,bindings of the baseline probe")
    os.makedirs(f"{W}/ldd", exist_ok=True)
    env = dict(os.environ, LD_DEBUG="scopes,bindings", LD_DEBUG_OUTPUT=f"{W}/ldd/A")
    rc, out, _ = run_child(["probe", "A", "ostr_probe", ""], env)
    say(f"  (the probe under LD_DEBUG: {verdict(rc, out)})")
    bind = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: \w+ symbol `([^']+)'(?: \[([^\]]+)\])?")
    rows, scopes, cur = [], {}, None
    for fn in os.listdir(f"{W}/ldd"):
        for line in open(f"{W}/ldd/{fn}", errors="replace"):
            m = bind.search(line)
            if m:
                rows.append(m.groups()); continue
            m = re.search(r"object=(\S+) \[\d+\]", line)
            if m:
                cur = m.group(1); continue
            m = re.search(r"scope (\d+): (.*)", line)
            if m and cur and os.path.basename(cur) in ("ostrexp_A.so", "libc10.so", "libtorch.so", "libstdc++.so.6"):
                scopes.setdefault(os.path.basename(cur), []).append(
                    f"scope {m.group(1)}: " + " ".join(os.path.basename(x) for x in m.group(2).split()))
    for obj, ss in scopes.items():
        for s in ss[:2]:
            (say if obj == "ostrexp_A.so" else log)(f"  {obj} {s[:420]}")
    b = os.path.basename
    boring = ("libstdc++.so.6", "libc.so.6", "libgcc_s.so.1", "ostrexp_A.so", "libc10.so")
    ext_rows = [r for r in rows if r[0].endswith("ostrexp_A.so")]
    say("  the extension's bindings of std names that do not go to libstdc++ (full list in the log):")
    for r, d in zip(ext_rows, demangle([r[2] for r in ext_rows])):
        line = f"     {d[:95]:95} -> {b(r[1])} [{r[3] or 'unversioned'}]"
        log(line)
        if ("std::" in d or "__cxa" in d) and (b(r[1]) not in boring or (b(r[1]) == "libc10.so" and "std::" in d)):
            say(line)
    inner = re.compile(r"_ZNSt8ios_baseC|_ZNSt9basic_iosIcSt11char_traitsIcEE4init|_ZNSt6localeC|_ZNSt6locale7classic|"
                       r"_ZTTNSt7__cxx1119basic_ostringstream|_ZTVNSt7__cxx1119basic_ostringstream|_ZTVNSt7__cxx1115basic_stringbuf|"
                       r"_ZNSo9_M_insert|2idE$")
    seen = set()
    say("  stream/locale internals bound anywhere else than libstdc++ (by anyone):")
    for r in rows:
        if inner.search(r[2]) and (b(r[0]), r[2]) not in seen:
            seen.add((b(r[0]), r[2]))
            line = f"     {b(r[0])}: {demangle([r[2]])[0][:80]} -> {b(r[1])} [{r[3] or 'unversioned'}]"
            (say if not b(r[1]).startswith("libstdc++") else log)(line)
    foreign = [r for r in rows if r[2] in std_names and not b(r[1]).startswith("libstdc++")]
    agg = collections.defaultdict(lambda: [0, set(), set()])
    for r in foreign:
        a = agg[b(r[1])]; a[0] += 1; a[1].add(b(r[0])); a[2].add(r[2])
    say(f"  libstdc++ names bound to another library: {len(foreign)} bindings")
    for tgt, (n, binders, syms) in sorted(agg.items(), key=lambda kv: -kv[1][0])[:8]:
        say(f"     {n:6} -> {tgt} from {len(binders)} libs ({', '.join(sorted(binders)[:3])}); e.g. "
            + "; ".join(d[:50] for d in demangle(sorted(syms)[:2])))
    crit = sorted({(b(r[0]), b(r[1]), r[2]) for r in foreign if key.search(r[2]) and b(r[0]) != b(r[1])})
    say(f"  ... stream/locale-related, across libraries: {len(crit)}")
    for (x, y, s), d in zip(crit[:20], demangle([c[2] for c in crit[:20]])):
        say(f"     {x} -> {y}: {d[:100]}")

    if sh("command -v gdb").returncode == 0:
        say("\n== gdb backtrace of the baseline probe")
        g = sh(["timeout", "150", "gdb", "-q", "-batch", "-iex", "set debuginfod enabled off",
                "-iex", "set auto-solib-add off", "-ex", "set pagination off", "-ex", "run",
                "-ex", "sharedlibrary libstdc", "-ex", "sharedlibrary ostrexp", "-ex", "sharedlibrary libc10",
                "-ex", "sharedlibrary libtorch.so", "-ex", "bt 14", "-ex", "info symbol $pc", "-ex", "x/3i $pc",
                "--args", PY, f"{W}/exp.py", "probe", "A", "ostr_probe", ""])
        log(g.stdout[-6000:] + g.stderr[-3000:])
        keep = [l for l in (g.stdout + g.stderr).splitlines()
                if re.match(r"(#\d+|Program|Thread .* received|=>|\s+0x|.* in section |\[Inferior)", l)]
        say("\n".join(l[:220] for l in keep[-24:]) or "  (no output kept; see the log)")
    else:
        say("\n== gdb not installed; no backtrace")

    say(f"\n== RESULTS ({time.time() - t0:.0f}s; full log: {LOG.name})")
    say(f"  {'probe':14} {'result':12} what it tests")
    for name, build, func, mode, what in PROBES:
        v, detail = results.get(name, ("?", ""))
        say(f"  {name:14} {v:12} {what}")
        if detail and v != "PASS" and "facets" not in name:
            say(f"  {'':27} -> {detail}")

if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "main"
    if cmd == "build":
        cmd_build(sys.argv[2])
    elif cmd == "probe":
        cmd_probe(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")
    elif cmd == "maps":
        cmd_maps()
    else:
        main()
EOF

"$PY" "$W/exp.py" main 2>&1
echo "== done; files under $W"
