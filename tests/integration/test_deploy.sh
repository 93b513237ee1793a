#!/usr/bin/env bash
# Checks the deploy recipes of deploy/ against the daemons that were built:
# - systemd: `systemd-analyze verify` on the units (ExecStart pointed at the
#   build folder), their exposure score, the options they pass, the example
#   /etc/default/gemmtune;
# - containers: a small Containerfile checker (no engine here: the images are
#   not built): FROM lines with pinned, non-latest tags, stages, USER in the
#   runtime stage, HEALTHCHECK on /healthz for the coordinator, COPY sources
#   that exist, the builder installs scripts/setup's packages, the runtime
#   packages own the libraries the binaries need; the worker entrypoint
#   wrapper, run for real: SIGTERM reaches the per-device worker;
# - Kubernetes: every YAML parses, required fields, the kustomization lists
#   every manifest, ports/probes/selectors agree, every option in container
#   args exists in the --help of the binary it is given to;
# - Slurm: bash -n, DRYRUN=1 output with a fake SLURM environment, and a run
#   with a stand-in srun: SIGTERM to the batch script reaches the workers.
# Needs systemd-analyze (Debian: systemd) and python3 with yaml (Debian:
# python3-yaml); installs them when missing, skips (77) when it cannot.
source "$(dirname "$0")/lib.sh"
SRC=${GT_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
D=$SRC/deploy

# ---- tools ----
install_pkgs() {
  command -v apt-get >/dev/null || return 1
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo -n true 2>/dev/null || return 1
    sudo="sudo -n"
  fi
  echo "test_deploy: installing $*"
  { $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"; } >"$T/apt.log" 2>&1
}
command -v systemd-analyze >/dev/null || install_pkgs systemd || true
command -v systemd-analyze >/dev/null || { echo "skipped: systemd-analyze missing (Debian package systemd)"; exit 77; }
PY=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  install_pkgs python3-yaml || true
  /usr/bin/python3 -c 'import yaml' 2>/dev/null && PY=/usr/bin/python3
fi
[ -n "$PY" ] || { echo "skipped: python3 with yaml missing (Debian package python3-yaml)"; exit 77; }

"$GT_BIN"/gemmtuned --help >"$T/help-gemmtuned.txt"
"$GT_BIN"/gemmtune-worker --help >"$T/help-gemmtune-worker.txt"
# has_opt BINARY OPTION: the option is in the binary's --help.
has_opt() { grep -qE -- "(^|[[:space:]])$2([[:space:]]|=|,|\$)" "$T/help-$1.txt"; }
# opts_ok BINARY OPT...: every option is in the binary's --help (names the missing ones).
opts_ok() {
  local b=$1 o bad=""; shift
  for o in "$@"; do has_opt "$b" "$o" || bad="$bad $o"; done
  [ -z "$bad" ] || { echo "  $b has no option:$bad"; return 1; }
}

# ==== systemd ====
U=$T/units
mkdir -p "$U"
cp "$D"/systemd/*.service "$U"/
cp "$U/gemmtune-worker@.service" "$U/gemmtune-worker@0.service"
sed -i "s#/usr/local/bin/#$GT_BIN/#g" "$U"/*.service
for u in gemmtuned.service gemmtune-worker@.service gemmtune-worker@0.service; do
  rc=0
  (cd "$U" && systemd-analyze verify "./$u") >"$T/verify-$u.txt" 2>&1 || rc=$?
  # verify exits 0 on unknown keys and bad values: any word about a unit is a failure.
  check "systemd-analyze verify $u (rc=$rc, no warnings)" \
    eval "[ $rc = 0 ] && ! grep -q 'gemmtune' '$T/verify-$u.txt'"
  [ "$rc" = 0 ] || cat "$T/verify-$u.txt"
done
# systemd-analyze security --offline: the exposure score (0 safe .. 10 exposed);
# --threshold is in tenths.
exposure() { # UNIT MAX_TENTHS: prints the score; fails over the threshold
  local rc=0
  (cd "$U" && systemd-analyze security --offline=yes --threshold="$2" "./$1") >"$T/sec-$1.txt" 2>&1 || rc=$?
  sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T/sec-$1.txt"
  return "$rc"
}
rc=0; score=$(exposure gemmtuned.service 20) || rc=$?
check "gemmtuned.service exposure $score <= 2.0" [ "$rc" = 0 ]
rc=0; score=$(exposure gemmtune-worker@0.service 40) || rc=$?
check "gemmtune-worker@0.service exposure $score <= 4.0 (a CUDA worker needs /dev/nvidia*)" [ "$rc" = 0 ]
for f in gemmtuned.service 'gemmtune-worker@.service'; do
  uf="$D/systemd/$f"
  check "$f: ExecStart in /usr/local/bin" grep -qE '^ExecStart=/usr/local/bin/gemm' "$uf"
  check "$f: EnvironmentFile=-/etc/default/gemmtune" grep -qx 'EnvironmentFile=-/etc/default/gemmtune' "$uf"
  check "$f: stops with SIGTERM, TimeoutStopSec set" \
    eval "grep -qx 'KillSignal=SIGTERM' '$uf' && grep -qE '^TimeoutStopSec=[0-9]+' '$uf'"
  check "$f: unprivileged (DynamicUser, NoNewPrivileges)" \
    eval "grep -qx 'DynamicUser=yes' '$uf' && grep -qx 'NoNewPrivileges=yes' '$uf'"
done
wf="$D/systemd/gemmtune-worker@.service"
check "worker unit: --device %i" grep -qE '^ExecStart=.*--device %i( |$)' "$wf"
check "worker unit: GPU devices stay reachable (no PrivateDevices=yes, no DevicePolicy=closed/strict)" \
  eval "! grep -qE '^(PrivateDevices=(yes|true)|DevicePolicy=(closed|strict))' '$wf'"
check "worker unit: SIGTERM to the worker only (KillMode=mixed)" grep -qx 'KillMode=mixed' "$wf"
mapfile -t o < <(sed -n 's/^ExecStart=[^ ]*gemmtuned //p' "$D/systemd/gemmtuned.service" | grep -oE -- '--[a-z-]+')
check "gemmtuned.service options exist (${o[*]})" opts_ok gemmtuned "${o[@]}"
mapfile -t o < <(sed -n 's/^ExecStart=[^ ]*gemmtune-worker //p' "$wf" | grep -oE -- '--[a-z-]+')
check "gemmtune-worker@.service options exist (${o[*]})" opts_ok gemmtune-worker "${o[@]}"
def=$D/systemd/gemmtune.default
check "gemmtune.default is plain VAR=value lines" \
  eval "! grep -vE '^(#.*|[[:space:]]*|[A-Z_][A-Z0-9_]*=[^\$\`]*)$' '$def'"
unused=""
for v in $(sed -n 's/^\([A-Z_][A-Z0-9_]*\)=.*/\1/p' "$def"); do
  # read by a unit, or by the daemons themselves (README: GEMMTUNE_TOKEN, GEMMTUNE_WORKER_URL)
  grep -q "$v" "$D"/systemd/*.service "$SRC"/server/main_gemmtuned.c "$SRC"/worker/main_worker.c || unused="$unused $v"
done
check "every variable of gemmtune.default is used${unused:+ (unused:$unused)}" [ -z "$unused" ]
bad=""
for o in $(grep -oE -- '--[a-z][a-z-]+' "$def" | sort -u); do
  has_opt gemmtuned "$o" || has_opt gemmtune-worker "$o" || bad="$bad $o"
done
check "every option gemmtune.default names exists in gemmtuned or gemmtune-worker --help${bad:+ (missing:$bad)}" [ -z "$bad" ]

# ==== containers ====
cat >"$T/containerfile_check.py" <<'PY'
"""Static Containerfile checker (no engine here). Prints one line per problem."""
import json, os, re, sys

KNOWN = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
         "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL", "MAINTAINER"}

def parse(path):
    """(instruction, argument text, line number) with continuations joined, comments dropped."""
    out, buf, start = [], "", 0
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if buf and s.startswith("#"):
            continue  # a comment inside a continued instruction
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        m = re.match(r"(\S+)\s*(.*)", buf)
        out.append((m.group(1).upper(), m.group(2).strip(), start))
        buf = ""
    if buf:
        out.append(("<EOF>", buf, start))
    return out

def subst(s, args):
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: args.get(m.group(1), m.group(0)), s)

def check(path, ctx):
    errs = []
    ins = parse(path)
    global_args, stages, cur = {}, [], None
    for op, arg, n in ins:
        where = f"{os.path.basename(path)}:{n}"
        if op not in KNOWN:
            errs.append(f"{where}: unknown instruction {op}")
            continue
        if op == "ARG" and cur is None:
            k, _, v = arg.partition("=")
            global_args[k.strip()] = v.strip()
            continue
        if cur is None and op != "FROM":
            errs.append(f"{where}: {op} before the first FROM")
            continue
        if op == "FROM":
            toks = [t for t in arg.split() if not t.startswith("--platform")]
            image = subst(toks[0], global_args)
            name = toks[2] if len(toks) >= 3 and toks[1].upper() == "AS" else None
            if "$" in image:
                errs.append(f"{where}: FROM {toks[0]}: unresolved variable")
            ref = image.split("@")[0]
            last = ref.rsplit("/", 1)[-1]
            tag = last.split(":", 1)[1] if ":" in last else None
            if "@sha256:" not in image and not tag:
                errs.append(f"{where}: FROM {image}: no tag (implicit latest)")
            if tag == "latest":
                errs.append(f"{where}: FROM {image}: latest tag")
            cur = {"image": image, "name": name, "line": n, "ops": [], "copied_from": False}
            stages.append(cur)
            continue
        cur["ops"].append((op, arg, n))
    names = [s["name"] for s in stages if s["name"]]
    if len(names) != len(set(names)):
        errs.append(f"{path}: duplicate stage names")
    for i, s in enumerate(stages):
        for op, arg, n in s["ops"]:
            m = re.search(r"--from=(\S+)", arg) if op == "COPY" else None
            if m:
                src = m.group(1)
                earlier = [t for t in stages[:i] if t["name"] == src] or \
                          ([stages[int(src)]] if src.isdigit() and int(src) < i else [])
                if not earlier:
                    errs.append(f"{os.path.basename(path)}:{n}: COPY --from={src}: no earlier stage of that name")
                else:
                    earlier[0]["copied_from"] = True
            elif op in ("COPY", "ADD"):
                parts = [p for p in arg.split() if not p.startswith("--")]
                for p in parts[:-1]:
                    if not os.path.exists(os.path.join(ctx, p)):
                        errs.append(f"{os.path.basename(path)}:{n}: {op} {p}: not in the build context")
            if op in ("CMD", "ENTRYPOINT", "HEALTHCHECK") and arg.lstrip().startswith("["):
                try:
                    json.loads(arg)
                except ValueError as e:
                    errs.append(f"{os.path.basename(path)}:{n}: {op}: bad JSON array: {e}")
    runtime = [s for s in stages if not s["copied_from"]]
    if not stages:
        errs.append(f"{path}: no FROM")
    for s in runtime:
        users = [a for o, a, _ in s["ops"] if o == "USER"]
        if not users:
            errs.append(f"{os.path.basename(path)}:{s['line']}: runtime stage {s['image']} sets no USER")
        elif users[-1].split(":")[0] in ("0", "root"):
            errs.append(f"{os.path.basename(path)}:{s['line']}: runtime stage runs as root")
    return errs, stages, global_args

def words(stage, op):
    return [a for o, a, _ in stage["ops"] if o == op]

def apt_pkgs(stage):
    pk = []
    for run in words(stage, "RUN"):
        for m in re.finditer(r"apt-get install((?:\s+[^\s&;|]+)+)", run):
            pk += [w for w in m.group(1).split() if not w.startswith("-")]
    return pk

def json_words(s):
    return json.loads(s) if s.startswith("[") else s.split()

if __name__ == "__main__":
    mode, path, ctx = sys.argv[1], sys.argv[2], sys.argv[3]
    errs, stages, gargs = check(path, ctx)
    if mode == "parse":
        print("\n".join(errs))
    elif mode == "froms":
        print("\n".join(s["image"] for s in stages))
    elif mode == "stages":
        print(len(stages), sum(1 for s in stages if not s["copied_from"]))
    elif mode in ("build-pkgs", "runtime-pkgs"):
        st = stages[0] if mode == "build-pkgs" else stages[-1]
        print("\n".join(apt_pkgs(st)))
    else:  # a final-stage instruction (its last one): USER, HEALTHCHECK, EXPOSE, VOLUME, ENTRYPOINT, CMD
        v = words(stages[-1], mode.upper())
        if mode in ("entrypoint", "cmd") and v:
            print("\n".join(json_words(v[-1])))
        elif v:
            print(v[-1])
PY
cf() { "$PY" "$T/containerfile_check.py" "$@"; }
# inlist LIST WORD: WORD is a line of the file LIST
inlist() { grep -qxF -- "$2" "$1"; }
CC=$D/container/Containerfile.coordinator
CW=$D/container/Containerfile.worker-cuda
setup_pkgs=$(sed -n '/^pkgs=(/,/)/p' "$SRC/scripts/setup" | tr -d '()' | sed 's/pkgs=//')
for f in "$CC" "$CW"; do
  b=$(basename "$f")
  cf parse "$f" "$SRC" >"$T/cf.err"
  check "$b parses: FROM lines tagged (not latest), USER in the runtime stage, COPY sources exist" \
    eval "! grep -q . '$T/cf.err' || { sed 's/^/  /' '$T/cf.err'; false; }"
  check "$b is multi-stage (a builder and one runtime stage)" [ "$(cf stages "$f" "$SRC")" = "2 1" ]
  # Every top-level folder the CMake build reads must be copied in, or the
  # image fails at configure time (it once lacked gen/, lib/, cuda/, web/).
  miss=""
  # (a path an add_test names is read by ctest, not by the build)
  for d in $(cd "$SRC" && cat CMakeLists.txt */CMakeLists.txt | grep -v 'add_test(' |
             grep -ohE 'add_subdirectory\([a-z_]+|CMAKE_SOURCE_DIR\}/[a-z_]+|GLOB [A-Z_]+ CONFIGURE_DEPENDS [a-z_]+/' |
             sed -E 's/.*[(}]//; s/.* //; s|^/||; s|/.*||' | sort -u); do
    [ -d "$SRC/$d" ] || continue # a subfolder's own add_subdirectory (tests/fuzz)
    grep -qE "^COPY $d/ $d/\$" "$f" || miss="$miss $d"
  done
  check "$b copies every folder the build reads${miss:+ (missing:$miss)}" [ -z "$miss" ]
  user=$(cf user "$f" "$SRC")
  check "$b runtime stage runs as $user, not root" eval "[ -n '$user' ] && [ '${user%%:*}' != 0 ] && [ '${user%%:*}' != root ]"
  cf build-pkgs "$f" "$SRC" >"$T/build-pkgs"
  cf runtime-pkgs "$f" "$SRC" >"$T/runtime-pkgs"
  miss=""
  for p in $setup_pkgs; do
    case $p in build-essential|cmake|pkg-config|*-dev) ;; *) continue ;; esac  # the rest are test tools
    inlist "$T/build-pkgs" "$p" || miss="$miss $p"
  done
  check "$b builder installs the build packages of scripts/setup${miss:+ (missing:$miss)}" [ -z "$miss" ]
  check "$b runtime stage installs no -dev package" eval "! grep -q -- '-dev\$' '$T/runtime-pkgs'"
  cp "$T/runtime-pkgs" "$T/runtime-pkgs-$b"
done
cf froms "$CC" "$SRC" >"$T/froms-cc"
check "coordinator: every stage is Debian 12" eval "! grep -qvE '^debian:(12|bookworm)' '$T/froms-cc'"
RC=$T/runtime-pkgs-Containerfile.coordinator
RW=$T/runtime-pkgs-Containerfile.worker-cuda
miss=""
for p in libmicrohttpd12 libnng1 libcjson1 libsqlite3-0 curl; do inlist "$RC" "$p" || miss="$miss $p"; done
check "coordinator: runtime packages libmicrohttpd12 libnng1 libcjson1 libsqlite3-0 curl${miss:+ (missing:$miss)}" [ -z "$miss" ]
check "coordinator: HEALTHCHECK curls /healthz" eval "cf healthcheck '$CC' '$SRC' >'$T/hc' && grep -q 'curl.*127.0.0.1:8470/healthz' '$T/hc'"
check "coordinator: EXPOSE 8470 8471" [ "$(cf expose "$CC" "$SRC")" = "8470 8471" ]
check "coordinator: VOLUME /var/lib/gemmtune" [ "$(cf volume "$CC" "$SRC")" = '["/var/lib/gemmtune"]' ]
cf cmd "$CC" "$SRC" >"$T/cmd-cc"
mapfile -t o < <(grep -E '^--' "$T/cmd-cc")
check "coordinator: CMD options exist in gemmtuned --help (${o[*]})" opts_ok gemmtuned "${o[@]}"
check "coordinator: CMD listens on the exposed ports" eval "inlist '$T/cmd-cc' 0.0.0.0:8470 && inlist '$T/cmd-cc' tcp://0.0.0.0:8471"
# The libraries the built binaries need (NEEDED) belong to the runtime packages
# (this is Debian 12, so the package names are checked for real).
need_pkgs() { # BINARY...: the Debian packages that own their NEEDED libraries
  local b lib path
  for b in "$@"; do
    for lib in $(objdump -p "$b" | awk '/NEEDED/ {print $2}'); do
      path=$(ldd "$b" | awk -v l="$lib" '$1 == l {print $3}')
      [ -n "$path" ] || continue
      dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -n 1 | cut -d: -f1 || true
    done
  done | sort -u
}
if command -v objdump >/dev/null && command -v dpkg >/dev/null; then
  need_pkgs "$GT_BIN/gemmtuned" "$GT_BIN/gemmtune" >"$T/need-cc"
  check "the libraries of gemmtuned map to Debian packages ($(tr '\n' ' ' <"$T/need-cc"))" \
    eval "inlist '$T/need-cc' libmicrohttpd12 && inlist '$T/need-cc' libsqlite3-0"
  miss=""
  for p in $(cat "$T/need-cc"); do
    [ "$p" = libc6 ] && continue
    inlist "$RC" "$p" || miss="$miss $p"
  done
  check "coordinator: runtime packages own every library gemmtuned and gemmtune link${miss:+ (missing:$miss)}" [ -z "$miss" ]
  miss=""
  for p in $(need_pkgs "$GT_BIN/gemmtune-worker"); do
    case $p in libc6|libgcc-s1) continue ;; esac
    # the CUDA libraries come with the nvidia/cuda runtime image (the image checks them with ldconfig)
    dpkg -L "$p" 2>/dev/null | grep -qE 'lib(cudart|cublas|nvrtc)' && continue
    inlist "$RW" "$p" || miss="$miss $p"
  done
  check "worker image: runtime packages cover the non-CUDA libraries of gemmtune-worker${miss:+ (missing:$miss)}" [ -z "$miss" ]
fi
cf froms "$CW" "$SRC" >"$T/froms-cw"
check "worker: CUDA 13.0 devel builder on Ubuntu 24.04 ($(head -n 1 "$T/froms-cw"))" \
  eval "head -n 1 '$T/froms-cw' | grep -qE '^nvidia/cuda:13\.0\.[0-9]+-devel-ubuntu24\.04\$'"
check "worker: CUDA 13.0 runtime image on Ubuntu 24.04 ($(tail -n 1 "$T/froms-cw"))" \
  eval "tail -n 1 '$T/froms-cw' | grep -qE '^nvidia/cuda:13\.0\.[0-9]+-runtime-ubuntu24\.04\$'"
check "worker: the runtime stage checks for libcublasLt and libnvrtc" \
  eval "grep -q 'libcublasLt' '$CW' && grep -q 'libnvrtc' '$CW'"
cf entrypoint "$CW" "$SRC" >"$T/ep-cw"
check "worker: ENTRYPOINT runs gemmtune-worker --backend cuda --device all" \
  [ "$(tail -n 5 "$T/ep-cw" | tr '\n' ' ')" = "gemmtune-worker --backend cuda --device all " ]
mapfile -t o < <(grep -E '^--' "$T/ep-cw")
check "worker: ENTRYPOINT options exist in gemmtune-worker --help (${o[*]})" opts_ok gemmtune-worker "${o[@]}"
check "worker entrypoint wrapper: sh -n" sh -n "$D/container/gemmtune-worker-entrypoint.sh"

# The wrapper for real (CPU backend, one device): SIGTERM to it reaches the
# per-device worker that `--device all` started, which says goodbye.
start_coordinator
sh "$D/container/gemmtune-worker-entrypoint.sh" "$GT_BIN/gemmtune-worker" --server "$WURL" --backend cpu \
  --device all 2>>"$T/entrypoint.log" &
EP=$!
PIDS+=("$EP")
reg=0
for _ in $(seq 100); do
  curl -sf "$HTTP/v1/workers" -o "$T/w.json" || true
  [ "$(jsonq "$T/w.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.workers')) e WHERE json_extract(e.value, '$.state') IN ('idle','busy');" 2>/dev/null)" = 1 ] && { reg=1; break; }
  sleep 0.1
done
check "entrypoint: the worker registered" [ "$reg" = 1 ]
wpid=$(jsonq "$T/w.json" "SELECT json_extract(x, '$.workers[0].pid') FROM j;")
kill -TERM "$EP"
ok=0
for _ in $(seq 100); do kill -0 "$EP" 2>/dev/null || { ok=1; break; }; sleep 0.1; done
rc=0
wait "$EP" || rc=$?
check "entrypoint: exits within 10 s of SIGTERM, status 0 (got $rc)" eval "[ $ok = 1 ] && [ $rc = 0 ]"
check "entrypoint: the per-device worker is gone, not orphaned" eval "[ -n '$wpid' ] && ! kill -0 '$wpid' 2>/dev/null"
curl -sf "$HTTP/v1/workers" -o "$T/w.json" || true
check "entrypoint: the coordinator saw the worker leave (state gone)" \
  [ "$(json "$T/w.json" '$.workers[0].state')" = gone ]

# ==== Kubernetes ====
cat >"$T/k8s_check.py" <<'PY'
"""Parses deploy/k8s/*.yaml; prints one line per problem; writes the options
each container passes to each daemon (binary<TAB>option) to argv[2]."""
import glob, os, sys
import yaml

K = sys.argv[1]
problems, opts = [], []
def bad(f, msg): problems.append(f"{os.path.basename(f)}: {msg}")

docs = {}
for f in sorted(glob.glob(os.path.join(K, "*.yaml")) + glob.glob(os.path.join(K, "*.yml"))):
    try:
        ds = [d for d in yaml.safe_load_all(open(f, encoding="utf-8")) if d is not None]
    except yaml.YAMLError as e:
        bad(f, f"YAML does not parse: {e}")
        continue
    if not ds:
        bad(f, "no document")
    docs[os.path.basename(f)] = ds

objs = []
kust = None
for name, ds in docs.items():
    for d in ds:
        if not isinstance(d, dict):
            bad(name, "a document is not a mapping"); continue
        for k in ("apiVersion", "kind"):
            if not d.get(k):
                bad(name, f"no {k}")
        if d.get("kind") == "Kustomization":
            kust = (name, d); continue
        if not (d.get("metadata") or {}).get("name"):
            bad(name, f"{d.get('kind')}: no metadata.name")
        if d.get("kind") not in ("Namespace", "ConfigMap", "Secret") and not isinstance(d.get("spec"), dict):
            bad(name, f"{d.get('kind')}: no spec")
        objs.append((name, d))

if not kust:
    problems.append("no kustomization.yaml")
else:
    res = kust[1].get("resources") or []
    for r in res:
        if not os.path.exists(os.path.join(K, r)):
            bad(kust[0], f"resource {r} does not exist")
    for name in docs:
        if name != kust[0] and name not in res:
            bad(kust[0], f"{name} is not listed in resources")
    for im in kust[1].get("images") or []:
        if not isinstance(im, dict):
            bad(kust[0], f"images: {im!r} is not a mapping"); continue
        if im.get("newTag") in (None, "", "latest"):
            bad(kust[0], f"image {im.get('name')}: no pinned newTag")

def by_kind(kind): return [(n, d) for n, d in objs if d.get("kind") == kind]
def pod(d): return ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
def labels(d): return (((d.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}

for n, d in objs:
    if d.get("kind") not in ("Deployment", "DaemonSet", "StatefulSet"):
        continue
    sel = ((d["spec"].get("selector") or {}).get("matchLabels")) or {}
    if not sel or any(labels(d).get(k) != v for k, v in sel.items()):
        bad(n, f"{d['kind']} selector does not match the pod labels")
    p = pod(d)
    sc = p.get("securityContext") or {}
    if not sc.get("runAsNonRoot"):
        bad(n, "pod securityContext.runAsNonRoot is not true")
    for c in p.get("containers") or []:
        img = c.get("image", "")
        tag = img.rsplit("/", 1)[-1].split(":", 1)[1] if ":" in img.rsplit("/", 1)[-1] else None
        if not tag or tag == "latest":
            bad(n, f"container {c.get('name')}: image {img} has no pinned tag")
        words = list(c.get("command") or []) + list(c.get("args") or [])
        binary = next((os.path.basename(w) for w in words
                       if os.path.basename(w) in ("gemmtuned", "gemmtune-worker")), None)
        if not binary:
            bad(n, f"container {c.get('name')}: no gemmtuned/gemmtune-worker in command/args")
            continue
        for w in words:
            if isinstance(w, str) and w.startswith("--"):
                opts.append(f"{binary}\t{w.split('=')[0]}\t{n}")
        for e in c.get("env") or []:
            if e.get("name") == "GEMMTUNE_TOKEN":
                ref = ((e.get("valueFrom") or {}).get("secretKeyRef")) or {}
                if not (ref.get("name") and ref.get("key")):
                    bad(n, "GEMMTUNE_TOKEN does not come from a secretKeyRef")
        if not any(e.get("name") == "GEMMTUNE_TOKEN" for e in c.get("env") or []):
            bad(n, f"container {c.get('name')}: no GEMMTUNE_TOKEN")
        # every volumeMount has a volume; every PVC volume has a claim
        vols = {v["name"]: v for v in p.get("volumes") or []}
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in vols:
                bad(n, f"volumeMount {m.get('name')} has no volume")
        for v in vols.values():
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and not any(dd["metadata"]["name"] == claim for _, dd in by_kind("PersistentVolumeClaim")):
                bad(n, f"volume {v['name']}: PersistentVolumeClaim {claim} is not defined")

def argval(c, opt):
    a = list(c.get("args") or [])
    return a[a.index(opt) + 1] if opt in a and a.index(opt) + 1 < len(a) else None

# the coordinator
deps = [(n, d) for n, d in by_kind("Deployment") if "coordinator" in d["metadata"]["name"]]
if len(deps) != 1:
    problems.append("expected one coordinator Deployment")
else:
    n, d = deps[0]
    s = d["spec"]
    if s.get("replicas") != 1:
        bad(n, "coordinator replicas is not 1")
    if (s.get("strategy") or {}).get("type") != "Recreate":
        bad(n, "coordinator strategy is not Recreate (SQLite: one writer)")
    c = pod(d)["containers"][0]
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
    if ports != {"http": 8470, "workers": 8471}:
        bad(n, f"coordinator ports are {ports}, want http 8470 and workers 8471")
    if not (argval(c, "--http") or "").endswith(":8470"):
        bad(n, "--http does not listen on 8470")
    if not (argval(c, "--listen") or "").endswith(":8471"):
        bad(n, "--listen does not listen on 8471")
    db = argval(c, "--db") or ""
    if not any(db.startswith(m["mountPath"].rstrip("/") + "/") and
               "persistentVolumeClaim" in next(v for v in pod(d)["volumes"] if v["name"] == m["name"])
               for m in c.get("volumeMounts") or []):
        bad(n, f"--db {db} is not on the PersistentVolumeClaim")
    # readiness follows the store's ability to write, liveness the process
    for probe, want in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        h = (c.get(probe) or {}).get("httpGet") or {}
        if h.get("path") != want or (h.get("port") not in ("http", 8470)):
            bad(n, f"{probe} is not httpGet {want} on the http port")
    svcs = by_kind("Service")
    if not svcs:
        problems.append("no Service")
    for sn, sv in svcs:
        sp = {p.get("name"): (p.get("port"), p.get("targetPort")) for p in sv["spec"].get("ports") or []}
        if sp.get("http", (None,))[0] != 8470 or sp.get("workers", (None,))[0] != 8471:
            bad(sn, f"Service ports are {sp}, want http 8470 and workers 8471")
        for pname, (_, tp) in sp.items():
            if tp not in ports and tp not in ports.values():
                bad(sn, f"targetPort {tp} is no container port")
        if any(labels(d).get(k) != v for k, v in (sv["spec"].get("selector") or {}).items()):
            bad(sn, "Service selector does not select the coordinator pods")

# the workers
dss = by_kind("DaemonSet")
if len(dss) != 1:
    problems.append("expected one worker DaemonSet")
else:
    n, d = dss[0]
    p = pod(d)
    c = p["containers"][0]
    gpu = ((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
    if not isinstance(gpu, int) or gpu < 1:
        bad(n, "limits nvidia.com/gpu is not a positive count")
    if not p.get("nodeSelector"):
        bad(n, "no nodeSelector for GPU nodes")
    if not any(t.get("key") == "nvidia.com/gpu" for t in p.get("tolerations") or []):
        bad(n, "no toleration for the nvidia.com/gpu taint")
    if argval(c, "--device") != "all" or argval(c, "--backend") != "cuda":
        bad(n, "worker does not run --backend cuda --device all")
    url = argval(c, "--server") or ""
    svc = [sv["metadata"]["name"] for _, sv in by_kind("Service")]
    if not (url.startswith("tcp://") and url.split("//")[1].split(".")[0].split(":")[0] in svc and url.endswith(":8471")):
        bad(n, f"--server {url} is not the coordinator Service on 8471")

open(sys.argv[2], "w").write("\n".join(opts) + ("\n" if opts else ""))
print("\n".join(problems))
PY
rc=0
"$PY" "$T/k8s_check.py" "$D/k8s" "$T/k8s-opts.tsv" >"$T/k8s.err" 2>&1 || rc=$?
touch "$T/k8s-opts.tsv"
check "k8s: every manifest parses and is consistent (fields, kustomization, ports, probes, PVC, secret, GPUs)" \
  eval "[ $rc = 0 ] && ! grep -q . '$T/k8s.err' || { sed 's/^/  /' '$T/k8s.err'; false; }"
check "k8s: $(ls "$D"/k8s/*.yaml | wc -l) YAML files, containers pass options" [ -s "$T/k8s-opts.tsv" ]
bad=""
while IFS=$'\t' read -r b o f; do has_opt "$b" "$o" || bad="$bad $f:$b:$o"; done <"$T/k8s-opts.tsv"
check "k8s: every option in container args is in the daemon's --help ($(cut -f2 "$T/k8s-opts.tsv" | sort -u | tr '\n' ' '))${bad:+ missing:$bad}" [ -z "$bad" ]
if command -v yamllint >/dev/null; then
  check "k8s: yamllint (relaxed)" yamllint -d relaxed -f parsable "$D"/k8s/
fi

# ==== Slurm ====
SB=$D/slurm/gemmtune-workers.sbatch
check "slurm: bash -n" bash -n "$SB"
check "slurm: #SBATCH --signal=B:TERM@120" grep -qx '#SBATCH --signal=B:TERM@120' "$SB"
fake_slurm=(env -i PATH="$PATH" SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=2 SLURM_GPUS_ON_NODE=4 SLURM_CPUS_ON_NODE=32
            GEMMTUNE_WORKER_URL=tcp://coord.example:8471 GEMMTUNE_TOKEN=s3cret DRYRUN=1)
rc=0
"${fake_slurm[@]}" bash "$SB" >"$T/dry.txt" 2>"$T/dry.err" || rc=$?
check "slurm: DRYRUN=1 exits 0" [ "$rc" = 0 ]
check "slurm: one srun step, 4 tasks per node on 2 nodes, all the node's GPUs, CPUs shared out" \
  grep -q '^srun --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 --gpu-bind=none --cpus-per-task=8 --kill-on-bad-exit=0 ' "$T/dry.txt"
check "slurm: one worker per GPU: 8 workers, --device 0..3 on each node" \
  eval "[ \$(grep -c '^node [01] task [0-3]: gemmtune-worker --server tcp://coord.example:8471 --backend cuda --device [0-3]\$' '$T/dry.txt') = 8 ] &&
        grep -qx 'node 1 task 3: gemmtune-worker --server tcp://coord.example:8471 --backend cuda --device 3' '$T/dry.txt'"
check "slurm: the token is never printed (it travels in the environment)" eval "! grep -q s3cret '$T/dry.txt' '$T/dry.err'"
mapfile -t o < <(sed -n 's/^node 0 task 0: gemmtune-worker //p' "$T/dry.txt" | grep -oE -- '--[a-z-]+')
check "slurm: worker options exist in gemmtune-worker --help (${o[*]})" opts_ok gemmtune-worker "${o[@]}"
env -i PATH="$PATH" SLURM_JOB_ID=1 CUDA_VISIBLE_DEVICES=3,5 GEMMTUNE_WORKER_URL=tcp://c:8471 DRYRUN=1 \
  bash "$SB" >"$T/dry2.txt" 2>&1 || true
check "slurm: GPU count from CUDA_VISIBLE_DEVICES when SLURM_GPUS_ON_NODE is unset" \
  eval "grep -q -- '--ntasks-per-node=2 ' '$T/dry2.txt' && [ \$(grep -c '^node 0 task' '$T/dry2.txt') = 2 ]"
check "slurm: no coordinator URL is an error" \
  eval "! env -i PATH=\"\$PATH\" SLURM_JOB_ID=1 SLURM_GPUS_ON_NODE=2 DRYRUN=1 bash '$SB' >/dev/null 2>&1"
check "slurm: no GPUs is an error" \
  eval "! env -i PATH=\"\$PATH\" SLURM_JOB_ID=1 GEMMTUNE_WORKER_URL=tcp://c:8471 DRYRUN=1 bash '$SB' >/dev/null 2>&1"

# For real, with a stand-in srun (one node) that runs the tasks here and, like
# srun, passes SIGTERM on to them: SIGTERM to the batch script (what
# --signal=B:TERM@120 sends) must reach the worker, which hands back and leaves.
mkdir -p "$T/fakebin"
cat >"$T/fakebin/srun" <<'SH'
#!/usr/bin/env bash
n=1
while [ $# -gt 0 ] && [ "$1" != bash ]; do
  case $1 in --ntasks-per-node=*) n=${1#*=} ;; esac
  shift
done
pids=()
for ((i = 0; i < n; i++)); do SLURM_LOCALID=$i "$@" & pids+=($!); done
trap 'kill -TERM "${pids[@]}" 2>/dev/null' TERM
rc=0
for p in "${pids[@]}"; do
  while :; do wait "$p" && break; r=$?; kill -0 "$p" 2>/dev/null || { rc=$r; break; }; done
done
exit "$rc"
SH
chmod +x "$T/fakebin/srun"
env PATH="$T/fakebin:$PATH" SLURM_JOB_ID=77 SLURM_JOB_NUM_NODES=1 GPUS_PER_NODE=1 GEMMTUNE_BACKEND=cpu \
  GEMMTUNE_BIN="$GT_BIN/gemmtune-worker" GEMMTUNE_WORKER_URL="$WURL" bash "$SB" >"$T/sbatch.log" 2>&1 &
SBP=$!
PIDS+=("$SBP")
reg=0
for _ in $(seq 100); do
  curl -sf "$HTTP/v1/workers" -o "$T/w.json" || true
  [ "$(jsonq "$T/w.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.workers')) e WHERE json_extract(e.value, '$.state') IN ('idle','busy');" 2>/dev/null)" = 1 ] && { reg=1; break; }
  sleep 0.1
done
check "slurm: the batch script started a worker that registered" [ "$reg" = 1 ]
wpid=$(jsonq "$T/w.json" "SELECT json_extract(e.value, '$.pid') FROM j, json_each(json_extract(j.x, '$.workers')) e WHERE json_extract(e.value, '$.state') IN ('idle','busy');")
kill -TERM "$SBP"
ok=0
for _ in $(seq 100); do kill -0 "$SBP" 2>/dev/null || { ok=1; break; }; sleep 0.1; done
rc=0
wait "$SBP" || rc=$?
check "slurm: SIGTERM to the batch script ends it within 10 s, status 0 (got $rc)" eval "[ $ok = 1 ] && [ $rc = 0 ]"
check "slurm: the worker process is gone" eval "[ -n '$wpid' ] && ! kill -0 '$wpid' 2>/dev/null"
curl -sf "$HTTP/v1/workers" -o "$T/w.json" || true
check "slurm: the coordinator saw the worker say goodbye (state gone)" \
  [ "$(jsonq "$T/w.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.workers')) e WHERE json_extract(e.value, '$.pid') = $wpid AND json_extract(e.value, '$.state') = 'gone';")" = 1 ]
check "slurm: the batch script logged the stop" grep -q 'SIGTERM: stopping the workers' "$T/sbatch.log"

# ==== docs ====
DOC=$SRC/docs/deploy.md
check "docs/deploy.md exists" [ -f "$DOC" ]
miss=""
for p in $(grep -oE 'deploy/(systemd|container|k8s|slurm)[A-Za-z0-9_./@-]*' "$DOC" 2>/dev/null | sed 's/[.,:)]*$//' | sort -u); do
  [ -e "$SRC/$p" ] || miss="$miss $p"
done
check "docs/deploy.md names only files that exist${miss:+ (missing:$miss)}" [ -z "$miss" ]
check "docs/deploy.md says the images were not built here" grep -qi 'not built' "$DOC"

finish
