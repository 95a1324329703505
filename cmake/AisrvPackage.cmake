# Debian packages with CPack (tools/package builds them from a Release tree with prefix /usr; docs/install.md):
#   aisrvd            the daemon, its systemd units, user, udev rules, configuration file, man page, completion
#   aisrv-tools       the `aisrv` command-line tool, its man page and completion
#   libaisrv-client0  libaisrv-client.so.0: the protocol and the client (sockets, USB, SPI)
#   libaisrv-server0  libaisrv-server.so.0: interpreter, engines, model store, in-process channel, socket server
#   libaisrv-dev      headers, the CMake package, pkg-config files, the C99 MCU client's sources, the documentation
#   python3-aisrv     the Python client (host/python)
# Dependencies on Debian libraries come from dpkg-shlibdeps; lintian runs in tools/package.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME aisrv)
set(CPACK_PACKAGE_VENDOR "aisrv")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "aisrv maintainers <aisrv@users.noreply.github.com>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${CPACK_PACKAGE_CONTACT})
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/aisrv/aisrv")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libaisrv-server links libaisrv-client, which another package of this build provides (an exact dependency on it is
# declared): dpkg-shlibdeps finds it in the build tree.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL daemon tools client_library server_library development python)
set(CPACK_STRIP_FILES ON)
set(AISRV_DEB_DIR ${PROJECT_SOURCE_DIR}/aisrv/daemon/dist/deb)

# Descriptions: the summary line (the package's own synopsis), then lines of at most 79 characters (lintian), without
# the leading space of the control file (CPack adds it: it strips the last line and re-indents every line). No
# CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it in front of every component's text, giving all six packages
# one synopsis (tests/package/package_test.py checks they differ).
set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME aisrvd)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION net)
set(CPACK_COMPONENT_DAEMON_DESCRIPTION "aisrv AI server daemon
Serves the aisrv protocol (the XMOS AI-server command set with extensions) on
Unix and TCP sockets, USB (FunctionFS) and SPI to inference engines: a Hailo-8
accelerator through HailoRT and a CPU engine for TFLite INT8 models. Many
clients share it safely: sessions, roles, limits. Ships systemd units (socket
activation), a configuration file and udev rules.")
set(CPACK_DEBIAN_DAEMON_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.54~)")
set(CPACK_DEBIAN_DAEMON_PACKAGE_SUGGESTS "aisrv-tools")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA
    "${AISRV_DEB_DIR}/postinst;${AISRV_DEB_DIR}/prerm;${AISRV_DEB_DIR}/postrm;${AISRV_DEB_DIR}/conffiles")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME aisrv-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "aisrv command-line tool
Talks to an aisrv server over Unix or TCP sockets, USB or SPI: loads models,
runs inferences on raw tensors or pictures, benchmarks, monitors engines,
manages the model store; inspects HEF files and Hailo-8 devices offline.")

# One shared library per package, named after its SONAME; ldconfig runs through a trigger.
set(CPACK_DEBIAN_CLIENT_LIBRARY_PACKAGE_NAME libaisrv-client0)
set(CPACK_DEBIAN_CLIENT_LIBRARY_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_CLIENT_LIBRARY_DESCRIPTION "aisrv client library
libaisrv-client: the aisrv protocol and the client for Unix and TCP sockets,
USB (libusb) and SPI, for applications that talk to an aisrv server.")
set(CPACK_DEBIAN_CLIENT_LIBRARY_PACKAGE_CONTROL_EXTRA
    "${AISRV_DEB_DIR}/lib/triggers;${AISRV_DEB_DIR}/lib/postinst;${AISRV_DEB_DIR}/lib/postrm")
set(CPACK_DEBIAN_SERVER_LIBRARY_PACKAGE_NAME libaisrv-server0)
set(CPACK_DEBIAN_SERVER_LIBRARY_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_SERVER_LIBRARY_DEPENDS client_library)
set(CPACK_COMPONENT_SERVER_LIBRARY_DESCRIPTION "aisrv server library
libaisrv-server: the aisrv interpreter with its engines (CPU TFLite INT8,
Hailo-8), the model store and the in-process channel, for applications that
embed the server.")
set(CPACK_DEBIAN_SERVER_LIBRARY_PACKAGE_CONTROL_EXTRA
    "${AISRV_DEB_DIR}/lib/triggers;${AISRV_DEB_DIR}/lib/postinst;${AISRV_DEB_DIR}/lib/postrm")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libaisrv-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS client_library server_library)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "libfmt-dev")
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION "aisrv development files
Headers, the CMake package (find_package(aisrv CONFIG): aisrv::client,
aisrv::server, aisrv::local), pkg-config files (aisrv, aisrv-client,
aisrv-server), the portable C99 SPI client for microcontrollers as sources,
and the documentation (protocol, transports, engines, store format).")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-aisrv)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.9), python3-numpy")
set(CPACK_DEBIAN_PYTHON_PACKAGE_RECOMMENDS "python3-usb")
# Byte-compiled at install (py3compile) and cleaned before removal (py3clean), as dh-python's snippets do.
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA "${AISRV_DEB_DIR}/python/postinst;${AISRV_DEB_DIR}/python/prerm")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "aisrv client for Python
A pure-Python client of the aisrv protocol over Unix and TCP sockets and USB
(pyusb): NumPy arrays in and out, the model-store commands, errors as
exceptions carrying the server's reason.")

# Debian policy: every package carries /usr/share/doc/PACKAGE/copyright and changelog.Debian.gz.
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/dist/changelog.Debian.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/dist
  COMMAND sh -c "gzip -9n < \"$0\" > \"$1\"" ${AISRV_DEB_DIR}/changelog ${PROJECT_BINARY_DIR}/dist/changelog.Debian.gz
  DEPENDS ${AISRV_DEB_DIR}/changelog VERBATIM)
add_custom_target(aisrv_deb_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/dist/changelog.Debian.gz)
foreach(pair daemon:aisrvd tools:aisrv-tools client_library:libaisrv-client0 server_library:libaisrv-server0
             development:libaisrv-dev python:python3-aisrv)
  string(REPLACE ":" ";" parts ${pair})
  list(GET parts 0 component)
  list(GET parts 1 package)
  install(FILES ${AISRV_DEB_DIR}/copyright ${PROJECT_BINARY_DIR}/dist/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package} COMPONENT ${component})
endforeach()

include(CPack)
