#!/usr/bin/env bash
# Installs NeuroShard's build and test dependencies (scripts/debian-packages.txt)
# from Debian's packages. Run as root or with sudo on Debian 12 with the
# LLVM 22 packages available.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
fi
mapfile -t packages < scripts/debian-packages.txt
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${packages[@]}"
