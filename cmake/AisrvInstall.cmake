# Installation in the GNU layout: the programs, two shared libraries for applications, public headers, the CMake
# package (find_package(aisrv CONFIG): aisrv::client, aisrv::server, aisrv::local), pkg-config files, the C99 MCU
# client's sources, the systemd units, the udev rules, the configuration file, man pages, shell completion and docs.
# Debian packages are built from these rules (cmake/AisrvPackage.cmake).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# --- shared libraries ------------------------------------------------------------------------------------------------
# libaisrv-client: the protocol and the client library (and the C99 MCU client the SPI transport uses), pictures into
# input tensors (engine/image) and outputs decoded into classes, boxes, masks and keypoints (engine/results).
# Everything an application needs to talk to a server and read its answers; no engine, store or driver code.
# A shared library is made of the objects of the layer libraries (all of them, as an archive would only give what the
# library version file uses); linking the same static libraries privately brings their outside dependencies.
set(AISRV_CLIENT_PARTS aisrv_client aisrv_protocol aisrv_protocol_c aisrv_mcu aisrv_image aisrv_results)
add_library(aisrv_client_shared SHARED host/client/src/library_version.cpp)
foreach(part ${AISRV_CLIENT_PARTS})
  target_sources(aisrv_client_shared PRIVATE $<TARGET_OBJECTS:${part}>)
endforeach()
target_link_libraries(aisrv_client_shared PUBLIC fmt::fmt PRIVATE ${AISRV_CLIENT_PARTS})
target_include_directories(aisrv_client_shared PUBLIC
  "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/protocol/include;${PROJECT_SOURCE_DIR}/host/client/include;${PROJECT_SOURCE_DIR}/host/mcu/include;${PROJECT_SOURCE_DIR}/engine/image/include;${PROJECT_SOURCE_DIR}/engine/results/include;${PROJECT_BINARY_DIR}/generated>"
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
set_target_properties(aisrv_client_shared PROPERTIES OUTPUT_NAME aisrv-client EXPORT_NAME client
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})

# libaisrv-server: the interpreter with its engines, model store and the in-process and socket transports, for an
# application that embeds the server (the local channel). It uses the protocol from libaisrv-client.
set(AISRV_SERVER_PARTS aisrv_interpreter aisrv_port aisrv_sensors aisrv_phy_local aisrv_phy_socket aisrv_engine_api aisrv_engines aisrv_flash)
add_library(aisrv_server_shared SHARED aisrv/src/library_version.cpp)
foreach(part ${AISRV_SERVER_PARTS})
  target_sources(aisrv_server_shared PRIVATE $<TARGET_OBJECTS:${part}>)
endforeach()
target_link_libraries(aisrv_server_shared PUBLIC aisrv_client_shared PRIVATE ${AISRV_SERVER_PARTS})
target_include_directories(aisrv_server_shared PUBLIC
  "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/aisrv/include;${PROJECT_SOURCE_DIR}/aisrv/sensors/include;${PROJECT_SOURCE_DIR}/engine/include;${PROJECT_SOURCE_DIR}/flash/include;${PROJECT_SOURCE_DIR}/phy/local/include;${PROJECT_SOURCE_DIR}/phy/socket/include>"
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
set_target_properties(aisrv_server_shared PROPERTIES OUTPUT_NAME aisrv-server EXPORT_NAME server
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})

install(TARGETS aisrv_client_shared EXPORT aisrvTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client_library NAMELINK_COMPONENT development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS aisrv_server_shared EXPORT aisrvTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT server_library NAMELINK_COMPONENT development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# --- programs ---------------------------------------------------------------------------------------------------------
install(TARGETS aisrvd RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT daemon)
install(TARGETS aisrv RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

# --- headers ------------------------------------------------------------------------------------------------------------
install(DIRECTORY protocol/include/ host/client/include/ host/mcu/include/ engine/image/include/
                  engine/results/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/generated/aisrv/build_info.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aisrv
        COMPONENT development)
install(DIRECTORY aisrv/include/ aisrv/sensors/include/ engine/include/ flash/include/ phy/local/include/ phy/socket/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
        PATTERN image.hpp EXCLUDE)  # flash/image.hpp: the image builder of `aisrv flash-image`, not in the libraries

# The C99 microcontroller client: sources to build into firmware, with the protocol files it needs.
set(AISRV_MCU_SHARE ${CMAKE_INSTALL_DATADIR}/aisrv/mcu)
install(FILES host/mcu/src/aisrv_mcu.c protocol/src/spi_link.c protocol/src/crc32.c DESTINATION ${AISRV_MCU_SHARE}/src
        COMPONENT development)
install(FILES host/mcu/include/aisrv/mcu/aisrv_mcu.h DESTINATION ${AISRV_MCU_SHARE}/include/aisrv/mcu
        COMPONENT development)
install(FILES protocol/include/aisrv/protocol/spi_link.h protocol/include/aisrv/protocol/crc32.h
              protocol/include/aisrv/protocol/commands.h protocol/include/aisrv/protocol/status.h
              protocol/include/aisrv/protocol/limits.h protocol/include/aisrv/protocol/header.h
        DESTINATION ${AISRV_MCU_SHARE}/include/aisrv/protocol COMPONENT development)

# --- CMake package and pkg-config ------------------------------------------------------------------------------------
set(AISRV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/aisrv)
install(EXPORT aisrvTargets NAMESPACE aisrv:: DESTINATION ${AISRV_CMAKE_DIR} COMPONENT development)
configure_package_config_file(cmake/aisrvConfig.cmake.in ${PROJECT_BINARY_DIR}/aisrvConfig.cmake
                              INSTALL_DESTINATION ${AISRV_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/aisrvConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/aisrvConfig.cmake ${PROJECT_BINARY_DIR}/aisrvConfigVersion.cmake
        DESTINATION ${AISRV_CMAKE_DIR} COMPONENT development)
# aisrv-client serves C (the protocol tables, the MCU client's headers) as well as C++, so its Cflags hold no language
# standard; aisrv (the C++ client) and aisrv-server add -std=c++20, which the C++ headers need.
foreach(pc aisrv aisrv-client aisrv-server)
  configure_file(cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT development)
endforeach()

# --- the Python client (host/python): pure Python, into Debian's dist-packages ---------------------------------------
set(AISRV_PYTHON_DIR lib/python3/dist-packages CACHE STRING "Python package directory, relative to the prefix")
install(DIRECTORY host/python/aisrv DESTINATION ${AISRV_PYTHON_DIR} COMPONENT python
        PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)

# --- the service: systemd units, its user, udev rules, the configuration file -------------------------------------------
set(AISRV_DIST ${PROJECT_SOURCE_DIR}/aisrv/daemon/dist)
set(AISRV_SYSTEMD_DIR lib/systemd/system CACHE STRING "systemd unit directory, relative to the prefix")
set(AISRV_UDEV_DIR lib/udev/rules.d CACHE STRING "udev rules directory, relative to the prefix")
configure_file(${AISRV_DIST}/aisrvd.service.in ${PROJECT_BINARY_DIR}/dist/aisrvd.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dist/aisrvd.service ${AISRV_DIST}/aisrvd.socket DESTINATION ${AISRV_SYSTEMD_DIR}
        COMPONENT daemon)
install(FILES ${AISRV_DIST}/aisrv.sysusers DESTINATION lib/sysusers.d RENAME aisrv.conf COMPONENT daemon)
install(FILES ${AISRV_DIST}/70-aisrv.rules DESTINATION ${AISRV_UDEV_DIR} COMPONENT daemon)
# The configuration file: in the configured sysconfdir (/etc/aisrv for a /usr install: where the unit and the daemon's
# default look, AISRV_SYSCONFDIR) when installing into the configured prefix or /usr (the packages); installed into
# another prefix (`cmake --install build --prefix DIR`), in DIR/etc/aisrv, so that the prefix holds every file.
if(IS_ABSOLUTE "${CMAKE_INSTALL_SYSCONFDIR}")
  string(REGEX REPLACE "^/+" "" AISRV_SYSCONF_RELATIVE "${CMAKE_INSTALL_SYSCONFDIR}")
else()
  set(AISRV_SYSCONF_RELATIVE "${CMAKE_INSTALL_SYSCONFDIR}")
endif()
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"${CMAKE_INSTALL_PREFIX}\")
    set(aisrv_conf_dir \"${CMAKE_INSTALL_FULL_SYSCONFDIR}/aisrv\")
  elseif(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(aisrv_conf_dir \"/etc/aisrv\")
  else()
    set(aisrv_conf_dir \"\${CMAKE_INSTALL_PREFIX}/${AISRV_SYSCONF_RELATIVE}/aisrv\")
  endif()
  file(INSTALL DESTINATION \"\${aisrv_conf_dir}\" TYPE FILE FILES \"${AISRV_DIST}/aisrvd.conf\")
" COMPONENT daemon)

# --- documentation, man pages (made from docs/cli.md) and bash completion (from the programs' own parsers) ------------
# The documentation goes with the development package (/usr/share/doc/libaisrv-dev).
set(AISRV_DOC_DIR ${CMAKE_INSTALL_DATADIR}/doc/libaisrv-dev)
install(FILES README.md DESTINATION ${AISRV_DOC_DIR} COMPONENT development)
install(DIRECTORY docs/ DESTINATION ${AISRV_DOC_DIR} COMPONENT development FILES_MATCHING PATTERN "*.md")
find_program(AISRV_GO_MD2MAN go-md2man)
find_package(Python3 COMPONENTS Interpreter)
if(AISRV_GO_MD2MAN AND Python3_Interpreter_FOUND)
  set(pages)
  foreach(page aisrv:1:tools aisrvd:8:daemon)
    string(REPLACE ":" ";" parts ${page})
    list(GET parts 0 program)
    list(GET parts 1 section)
    list(GET parts 2 component)
    set(page ${PROJECT_BINARY_DIR}/man/${program}.${section})
    set(out ${page}.gz)  # compressed, as Debian policy wants man pages
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/make-man ${PROJECT_SOURCE_DIR}/docs/cli.md ${program}
              ${section} ${PROJECT_VERSION} ${page} ${CMAKE_INSTALL_FULL_DATADIR}/doc/libaisrv-dev
      COMMAND sh -c "gzip -9n < \"$0\" > \"$1\"" ${page} ${out}
      DEPENDS ${PROJECT_SOURCE_DIR}/docs/cli.md ${PROJECT_SOURCE_DIR}/tools/make-man
      COMMENT "man page ${program}(${section}) from docs/cli.md" VERBATIM)
    list(APPEND pages ${out})
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
  endforeach()
  add_custom_target(aisrv_man_pages ALL DEPENDS ${pages})
else()
  message(WARNING "go-md2man or python3 missing: no man pages (tools/install-deps installs them)")
endif()
set(completions)
# A cross build runs the programs through its emulator, a list ("qemu-aarch64-static;-cpu;max;-L;/"): one shell line.
string(REPLACE ";" " " completion_runner "${CMAKE_CROSSCOMPILING_EMULATOR}")
foreach(program aisrv aisrvd)
  set(out ${PROJECT_BINARY_DIR}/completion/${program})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/completion
    COMMAND sh -c "${completion_runner} \"$0\" --bash-completion > \"$1\"" $<TARGET_FILE:${program}> ${out}
    DEPENDS ${program}
    COMMENT "bash completion of ${program}" VERBATIM)
  list(APPEND completions ${out})
endforeach()
add_custom_target(aisrv_completions ALL DEPENDS ${completions})
install(FILES ${PROJECT_BINARY_DIR}/completion/aisrv DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        COMPONENT tools)
install(FILES ${PROJECT_BINARY_DIR}/completion/aisrvd DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        COMPONENT daemon)
