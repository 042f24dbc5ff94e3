#!/usr/bin/env bash
# wheel-check (docs/RELEASE.md): install a built wheel into a fresh virtual environment with
# Go and the C compiler off PATH, from a folder outside the repository, with no virtual
# environment active, and use it as a user would (scripts/wheel_user.py).
#
# torch is not downloaded again: the fresh environment reads torch and its dependencies
# from the project's environment (scripts/torch_site.py). chainplan's other dependencies are
# installed by pip from wheels downloaded once into build/wheelhouse (a warm cache).
#
# Usage: scripts/wheel_check.sh WHEEL    (PY: the project's interpreter, .venv/bin/python)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PY:-$root/.venv/bin/python}
wheel=$(realpath "${1:?usage: wheel_check.sh WHEEL}")
house=${WHEELHOUSE:-$root/build/wheelhouse}
work=$(mktemp -d "${TMPDIR:-/tmp}/chainplan-wheel-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "wheel-check: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $work"

# The fresh environment, from the interpreter the project's environment was made from.
base=$("$py" -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$work/venv"
# Python < 3.12 seeds a venv with an old setuptools, which would hide the one torch needs.
"$work/venv/bin/python" -m pip uninstall -q -y setuptools 2>/dev/null || true
"$py" "$root/scripts/torch_site.py" "$work/torch-site"
purelib=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$work/torch-site" > "$purelib/_project_torch.pth"

# chainplan's dependencies but torch, as the wheel's metadata lists them.
mapfile -t reqs < <("$py" - "$wheel" <<'PY'
import sys, zipfile
from packaging.requirements import Requirement
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
for line in z.read(meta).decode().splitlines():
    if line.startswith("Requires-Dist:"):
        r = Requirement(line.split(":", 1)[1].strip())
        if r.marker is None and r.name != "torch":
            print(r)
PY
)
mkdir -p "$house"
if ! "$py" -m pip download -q --only-binary :all: --no-index --find-links "$house" -d "$house" "${reqs[@]}" 2>/dev/null; then
	echo "wheel-check: downloading ${reqs[*]} into $house (once)"
	"$py" -m pip download -q --only-binary :all: -d "$house" "${reqs[@]}"
fi

# From here on: a user's shell without Go or a C compiler, in a folder of their own.
mkdir -p "$work/home" "$work/user"
cp "$root/examples/vgg16.json" "$root/scripts/wheel_user.py" "$work/user/"
cd "$work/user"
clean=(env -i "HOME=$work/home" "PATH=$work/venv/bin" "LANG=C.UTF-8" "TMPDIR=${TMPDIR:-/tmp}"
	"CHAINPLAN_DB=$work/home/chainplan.db" "OMP_NUM_THREADS=1")
start=$(date +%s.%N)
"${clean[@]}" "$work/venv/bin/python" -m pip install -q --disable-pip-version-check \
	--no-index --find-links "$house" --only-binary :all: "$wheel"
end=$(date +%s.%N)
printf 'wheel-check: pip install of the wheel and %s took %.1f s (wheels cached, torch reused)\n' \
	"${reqs[*]}" "$("$py" -c "print($end - $start)")"
printf 'wheel-check: installed size %s (chainplan), %s (highsbox), %s (pyarrow)\n' \
	"$(du -sh "$purelib/chainplan" | cut -f1)" "$(du -sh "$purelib/highsbox" | cut -f1)" \
	"$(du -sh "$purelib/pyarrow" | cut -f1)"
"${clean[@]}" "$work/venv/bin/python" wheel_user.py vgg16.json
