# tools/lib/ccache.sh — sourced by the scripts that configure a build tree (tools/check, tools/fuzz, tools/package,
# tools/bench.d/cpu-arm64) after they set $root to the checkout: compilations go through ccache when it is
# installed, hashed relative to the checkout so that every build tree and every clone share the cache.
# Sets `launcher`, the cmake arguments to pass when configuring (empty without ccache).
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1  # the build directory's absolute path stays out of the hash
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
