# Cross-compiling aisrv for aarch64 (Raspberry Pi 5 class) on a Debian PC: Debian's cross compiler
# (g++-aarch64-linux-gnu) with the :arm64 -dev packages installed beside the native ones (multiarch, installed by
# `tools/install-deps --arch arm64`). Programs built for the target run through qemu-user (ctest, custom commands).
#   cmake -S . -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian multiarch: the target's libraries live in /usr/lib/aarch64-linux-gnu, headers in /usr/include (shared) and
# /usr/include/aarch64-linux-gnu; no sysroot.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Build-time tools (protoc, flatc, go-md2man) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# The target's programs run under qemu-user with the multiarch arm64 loader and libraries (-L /: /lib/ld-linux-aarch64.so.1
# and /lib/aarch64-linux-gnu, from libc6:arm64). Not /usr/aarch64-linux-gnu: that is the cross toolchain's libc, a
# different build whose loader, mixed with the multiarch libc the programs find, hangs in pthread_create. AISRV_QEMU_CPU
# picks the emulated CPU (e.g. cortex-a53: no dot-product instructions; max: all of them).
set(AISRV_QEMU_CPU "max" CACHE STRING "CPU qemu-aarch64 emulates for tests (cortex-a53, cortex-a76, max, ...)")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -cpu ${AISRV_QEMU_CPU} -L /)
