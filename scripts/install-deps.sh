#!/usr/bin/env bash
# Installs the Debian 12 packages onnxkit needs to build and test, and only
# those that are missing, so a second run costs one dpkg query.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  libonnx-dev libprotobuf-dev protobuf-compiler
  libcli11-dev nlohmann-json3-dev libfmt-dev libzip-dev libre2-dev
  libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev  # ImageDecoder
  libdnnl-dev libgtest-dev libonnx-testdata
  python3 python3-numpy python3-onnx python3-torch python3-torchvision
  chromium python3-pil  # draw's HTML page is tested in headless Chromium
  python3-dev python3-venv pybind11-dev  # the Python package's module, and its test venv
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
