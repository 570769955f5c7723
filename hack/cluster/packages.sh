#!/usr/bin/env bash
# Installs the Debian packages the test bed needs (one list: .ci/packages,
# used by CI and by make cluster/demo/e2e/test), or stops at once with one
# line naming what is missing and the command that installs it.
#
#   hack/cluster/packages.sh [LIST]     default LIST: .ci/packages
set -euo pipefail
list=${1:-$(dirname "$0")/../../.ci/packages}
mapfile -t want < <(grep -vE '^\s*(#|$)' "$list")
missing=()
for p in "${want[@]}"; do
	if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
		missing+=("$p")
	fi
done
(( ${#missing[@]} == 0 )) && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if (( EUID != 0 )) || ! command -v apt-get >/dev/null; then
	echo "packages: missing Debian packages: ${missing[*]}; install them as root with: apt-get update && $cmd" >&2
	exit 1
fi
t0=$(date +%s)
echo "packages: installing ${missing[*]} (apt-get; listed in $list)"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=300 update -qq
if ! apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/tmp/lh-packages.log 2>&1; then
	tail -20 /tmp/lh-packages.log >&2
	echo "packages: apt-get install failed (log /tmp/lh-packages.log); run: apt-get update && $cmd" >&2
	exit 1
fi
echo "packages: installed ${#missing[@]} packages in $(( $(date +%s) - t0 ))s"
