# Sourced by the *-commits.sh scripts, from the repository's root: a scratch directory
# ($work) that is removed on exit with every worktree made in it, and `add_tree I COMMIT`,
# which checks COMMIT out (detached) in $work/tree.I.
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
