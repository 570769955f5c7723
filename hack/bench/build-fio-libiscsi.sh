#!/usr/bin/env bash
# Builds fio with the libiscsi engine from Debian's own fio source (Debian's
# fio package is built without it), into $1 (a directory outside the work
# tree, e.g. ~/.cache/longhorn-testbed/fio-libiscsi-3.33). Uses a private apt
# state: nothing in /etc/apt changes. Needs libiscsi-dev libaio-dev
# zlib1g-dev pkg-config (installed when missing). See
# ../shared/reference/test-bed-recipes.md section 4.
set -euo pipefail
out=${1:?usage: build-fio-libiscsi.sh OUTDIR}
if [[ -x $out/fio ]] && "$out/fio" --enghelp 2>/dev/null | grep -qw libiscsi; then
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p apt/lists/partial apt/archives/partial
uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
uri=${uri:-http://deb.debian.org/debian}
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
echo "deb-src $uri $suite main" > apt/sources.list
O=(-o Dir::Etc::sourcelist="$PWD/apt/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::lists="$PWD/apt/lists" -o Dir::Cache::archives="$PWD/apt/archives")
missing=()
for p in libiscsi-dev libaio-dev zlib1g-dev pkg-config; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
apt-get "${O[@]}" update -qq
apt-get "${O[@]}" source --download-only fio >/dev/null
tar xzf fio_*.orig.tar.gz
cd fio-*/
./configure --enable-libiscsi --disable-native >/dev/null
make -j"$(nproc)" fio >/dev/null
./fio --enghelp | grep -qw libiscsi
mkdir -p "$out"
install -m 0755 fio "$out/fio"
echo "fio with libiscsi: $out/fio"
