# Sourced by the *-commits.sh scripts, from the repository's root: a scratch directory
# ($work) that is removed on exit with every worktree made in it; `add_tree I COMMIT`, which
# checks COMMIT out (detached) in $work/tree.I; and `build_tree I COMMIT CARGO-ARGS...`, which
# also runs cargo there with the target directory target/commits (shared by the commits, so
# they share their built dependencies) and sets commits[I] to COMMIT's short hash.
work="$(mktemp -d)"
root="$PWD"
cleanup() {
  for tree in "$work"/tree.*; do
    if [[ -e "$tree" ]]; then git -C "$root" worktree remove --force "$tree" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
add_tree() { git worktree add -q --detach "$work/tree.$1" "$2"; }
build_tree() {
  local i=$1 commit=$2
  shift 2
  add_tree "$i" "$commit"
  (cd "$work/tree.$i" && CARGO_TARGET_DIR="$root/target/commits" cargo "$@")
  commits[i]="$(git -C "$work/tree.$i" rev-parse --short HEAD)"
}
