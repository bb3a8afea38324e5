#!/bin/sh
# What the test suite needs from the system beyond pip, installed from Debian's packages when missing:
# a C++ compiler (the cpp backend's builds) and Chromium (the web page's tests, marker `ui`, drive a real headless
# browser; none is ever downloaded at test time). Run as root or with sudo; on another system install the same two
# by hand (a C++17 compiler named c++, and chromium on PATH) and skip this script.
set -eu
missing=""
command -v c++ >/dev/null 2>&1 || missing="$missing g++"
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing="$missing chromium"
[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/system_packages.sh: missing$missing and no apt-get here: install them with your package manager" >&2
    exit 1
fi
run=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "tests/system_packages.sh: installing$missing needs root (or sudo)" >&2; exit 1; }
    run="sudo"
fi
echo "tests/system_packages.sh: installing$missing (apt-get)" >&2
$run apt-get update -qq
# shellcheck disable=SC2086  # one word per package
$run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
