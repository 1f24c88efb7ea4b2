#!/usr/bin/env bash
# Whether a change to a CUDA source leaves its machine code as it was: compiles FILE as committed
# at REV and as it is in the work tree, each with its own kernels/ and base/ headers (sm_90a, as
# the build does), and compares every kernel's code section byte for byte. A refactor that keeps
# them identical needs no GPU A/B; one that does not, does. Run from the repository root after a
# build in build/ (for its generated headers); needs binutils' readelf.
#   scripts/same_kernel_code.sh kernels/cuda/decode_attention.cu [REV]   (REV default HEAD)
set -euo pipefail
file=$1 rev=${2:-HEAD}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The file and the headers it may include (kernels/, base/), as at REV and as in the work tree.
mkdir "$tmp/before" "$tmp/after"
git archive "$rev" kernels base | tar -x -C "$tmp/before"
tar -c kernels base | tar -x -C "$tmp/after"
for side in before after; do
  "$nvcc" -I"$tmp/$side/$(dirname "$file")" -I"$tmp/$side/base/include" -I"$tmp/$side" -Ibuild \
    -std=c++20 -gencode=arch=compute_90a,code=sm_90a -O2 -cubin -o "$tmp/$side.cubin" \
    "$tmp/$side/$file"
done
python3 - "$tmp/before.cubin" "$tmp/after.cubin" <<'EOF'
import re, subprocess, sys

def kernel_code(path):
    table = subprocess.run(["readelf", "-S", "-W", path], check=True, capture_output=True,
                           text=True).stdout
    data = open(path, "rb").read()
    code = {}
    for line in table.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\.text\.\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)",
                     line)
        if m:
            offset, size = int(m.group(2), 16), int(m.group(3), 16)
            # The anonymous namespace's mangled name carries a hash of the file's path.
            name = re.sub(r"_GLOBAL__N__\w+?_cu_[0-9a-f]{8}", "", m.group(1)[len(".text."):])
            code[name] = data[offset:offset + size]
    return code

before, after = kernel_code(sys.argv[1]), kernel_code(sys.argv[2])
changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
if changed and sorted(before.values()) == sorted(after.values()):
    # A type moved to another namespace renames the kernels that take it, not their code.
    print(f"{len(before)} kernels identical under other names ({len(changed) // 2} renamed)")
    sys.exit(0)
for name in changed:
    print("differs:", name)
identical = len(before.keys() | after.keys()) - len(changed)
print(f"{identical} kernels identical, {len(changed)} differ")
sys.exit(1 if changed else 0)
EOF
