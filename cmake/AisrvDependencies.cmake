# Third-party dependencies: all from Debian packages installed by tools/install-deps.
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)            # Asio (header-only)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBUSB REQUIRED IMPORTED_TARGET libusb-1.0)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)  # sd_notify, socket activation, the journal
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)  # JPEG, BMP, PPM pictures (engine/image)
pkg_check_modules(PNG REQUIRED IMPORTED_TARGET libpng)
pkg_check_modules(STB REQUIRED IMPORTED_TARGET stb)  # BMP, PPM/PGM pictures
pkg_check_modules(GPIOD REQUIRED IMPORTED_TARGET libgpiod)  # output GPIO lines (GPIO character device)
# aisrv/sensors/src/gpio_lines.cpp is written against the libgpiod 1.x API (Debian bookworm: 1.6, Raspberry Pi OS bookworm);
# libgpiod 2.x (Debian trixie, Ubuntu 24.04) replaced that API (line requests, settings) and is not supported yet.
if(GPIOD_VERSION VERSION_LESS 1.4 OR NOT GPIOD_VERSION VERSION_LESS 2.0)
  message(FATAL_ERROR "libgpiod ${GPIOD_VERSION} found, but aisrv's output GPIO (aisrv/sensors/src/gpio_lines.cpp) needs the "
                      "libgpiod 1.x API, 1.4 or newer (Debian bookworm's libgpiod-dev 1.6); libgpiod 2.x has another "
                      "API and is not supported yet. Install libgpiod 1.6 (e.g. from bookworm) or point "
                      "PKG_CONFIG_PATH at a 1.x build.")
endif()
pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo fontconfig)  # `aisrv infer --draw`: results drawn (PNG)
find_package(Protobuf REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenSSL REQUIRED)               # MD5 for HEF v0 integrity
find_package(FlatBuffers REQUIRED)          # TFLite model reader (engine/cpu)
find_program(FLATC flatc REQUIRED)
if(AISRV_TESTS)
  find_package(doctest REQUIRED)
endif()
if(AISRV_BENCH)
  find_package(benchmark REQUIRED)
endif()
