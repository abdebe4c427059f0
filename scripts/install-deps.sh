#!/usr/bin/env bash
# Installs NeuroShard's build and test dependencies from Debian's packages.
# Run as root (or through sudo) on Debian 12 with the LLVM 22 packages
# available.
set -euo pipefail

packages=(
  cmake ninja-build g++ git
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libtorch-dev libgtest-dev
  python3-torch python3-numpy python3-pytest python3-matplotlib
  clang-format
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
    grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  echo "All NeuroShard dependencies are installed."
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
fi
echo "Installing: ${missing[*]}"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
