#!/bin/sh
# Puts `drydock` (the CLI of this checkout) on the PATH without sudo: a small wrapper script in a
# bin directory, ~/.local/bin unless --prefix says otherwise. The wrapper runs this checkout's
# dist/cli/main.js with node, so it needs no executable bit on the built file (tsc does not set
# one, and a clean rebuild drops the one `npm link` set) and survives every rebuild.
#
#   scripts/install-cli.sh                  # ~/.local/bin/drydock
#   scripts/install-cli.sh --prefix DIR     # DIR/drydock
#   scripts/install-cli.sh --link           # a symlink instead of a wrapper (as npm link makes)
#   scripts/install-cli.sh --uninstall      # remove what an earlier run put there
#
# Run `npm ci` first (it builds dist/). Prints what it did, and whether DIR is on the PATH.
set -eu

usage() {
  echo "usage: $0 [--prefix DIR] [--link] [--uninstall]" >&2
  exit 2
}

prefix="${HOME:-}/.local/bin"
mode=wrapper
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "install-cli: --prefix needs a directory" >&2; usage; }
      prefix="$2"
      shift 2
      ;;
    --prefix=*)
      prefix="${1#--prefix=}"
      [ -n "$prefix" ] || { echo "install-cli: --prefix needs a directory" >&2; usage; }
      shift
      ;;
    --link) mode=link; shift ;;
    --uninstall) mode=uninstall; shift ;;
    -h|--help)
      sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) echo "install-cli: unknown argument '$1'" >&2; usage ;;
  esac
done

root="$(cd "$(dirname "$0")/.." && pwd -P)"
main="$root/dist/cli/main.js"
target="$prefix/drydock"

if [ "$mode" = uninstall ]; then
  if [ -L "$target" ] || { [ -f "$target" ] && grep -q 'installed by scripts/install-cli.sh' "$target"; }; then
    rm -f "$target"
    echo "removed $target"
  else
    echo "install-cli: $target is not one this script installed; left alone" >&2
    exit 1
  fi
  exit 0
fi

if [ ! -f "$main" ]; then
  echo "install-cli: $main is missing; run 'npm ci' (or 'npm run build') in $root first" >&2
  exit 1
fi
node_bin="$(command -v node || true)"
if [ -z "$node_bin" ]; then
  echo "install-cli: node is not on the PATH; install Node.js 20.5 or newer" >&2
  exit 1
fi
if [ -e "$target" ] && ! { [ -L "$target" ] || grep -q 'installed by scripts/install-cli.sh' "$target" 2>/dev/null; }; then
  echo "install-cli: $target exists and is not one this script installed; remove it or use --prefix" >&2
  exit 1
fi

mkdir -p "$prefix"
tmp="$target.tmp.$$"
if [ "$mode" = link ]; then
  # A symlink runs the file itself, through its #!/usr/bin/env node line: it needs the bit.
  chmod +x "$main"
  ln -s "$main" "$tmp"
  mv -f "$tmp" "$target"
  echo "linked $target -> $main"
else
  # Written aside and renamed, so a drydock running now never sees half a file.
  cat > "$tmp" <<EOF
#!/bin/sh
# drydock: installed by scripts/install-cli.sh from $root
exec node "$main" "\$@"
EOF
  chmod 755 "$tmp"
  mv -f "$tmp" "$target"
  echo "wrote $target: runs node $main"
fi

case ":${PATH:-}:" in
  *":$prefix:"*) echo "$prefix is on your PATH: try 'drydock --help'" ;;
  *) echo "$prefix is not on your PATH; add it, e.g.: echo 'export PATH=\"$prefix:\$PATH\"' >> ~/.bashrc" ;;
esac
