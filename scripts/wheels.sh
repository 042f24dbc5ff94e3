#!/usr/bin/env bash
# wheels (docs/RELEASE.md): from the sdist, build the wheel of every CPython 3.10+ found on
# this machine (one per CPython ABI: the gopy extension uses CPython's full C API), repair
# each with auditwheel into dist/, and try each in a fresh environment of its Python
# without Go or a C compiler on PATH: the CLI and a MadPipe plan from Python (torch-free
# calls, so no torch is downloaded per Python; `make wheel-check` runs the full check).
#
# Usage: scripts/wheels.sh SDIST   (PYTHONS="python3.10 /opt/py/bin/python3.13" to choose)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sdist=$(realpath "${1:?usage: wheels.sh SDIST}")
house=${WHEELHOUSE:-$root/build/wheelhouse}

# Every interpreter that answers, one per minor version: on PATH, then pyenv's.
find_pythons() {
	local v cand
	for v in 3.10 3.11 3.12 3.13 3.14; do
		for cand in "$(command -v "python$v" || true)" "$HOME"/.pyenv/versions/"$v".*/bin/"python$v"; do
			if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import venv, ensurepip' 2>/dev/null; then
				echo "$cand"
				break
			fi
		done
	done
}
pythons=${PYTHONS:-$(find_pythons)}
mkdir -p "$root/dist" "$house"
[ -n "$(ls "$house"/highsbox-*.whl 2>/dev/null)" ] || "${PYTHON:-python3}" -m pip download -q --only-binary :all: --no-deps -d "$house" highsbox
built=()
for py in $pythons; do
	tag=$("$py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
	work=$(mktemp -d "${TMPDIR:-/tmp}/chainplan-wheels.XXXXXX")
	echo "wheels: $tag with $py"
	# Build isolation: setuptools, wheel and pybindgen come from the package index.
	"$py" -m pip wheel -q --no-deps -w "$work/raw" "$sdist"
	auditwheel repair -w "$root/dist" "$work"/raw/*.whl
	whl=$(ls -t "$root"/dist/chainplan-*-"$tag"-"$tag"-*manylinux*.whl | head -1)
	"$py" -m venv "$work/venv"
	"$work/venv/bin/python" -m pip install -q --no-deps --no-index --find-links "$house" "$whl" highsbox
	cp "$root/examples/vgg16.json" "$work/"
	# A user's environment: only the venv's programs on PATH (no shell, Go or C compiler).
	clean=(env -i HOME="$work" PATH="$work/venv/bin" LANG=C.UTF-8)
	(cd "$work" &&
		"${clean[@]}" "$work/venv/bin/chainplan" --version &&
		"${clean[@]}" "$work/venv/bin/chainplan" pipeline --chain vgg16.json --gpus 2 --memory 24GB \
			--bandwidth 12GB/s --require-solver --format text >"$work/pipeline.txt" &&
		sed -n 1p "$work/pipeline.txt" &&
		"${clean[@]}" "$work/venv/bin/python" -c "from chainplan.pipeline.requests import pipeline_plan as p
pp = p('vgg16.json', gpus=2, memory='24GB', bandwidth='12GB/s', require_solver=True)
assert pp.chosen == 'madpipe', pp.chosen
print('pipeline_plan: madpipe, period %.6g' % pp.period)")
	built+=("$(basename "$whl") $(du -k "$whl" | cut -f1) KiB")
	rm -rf "$work"
done
printf 'wheels: %s\n' "${built[@]}"
