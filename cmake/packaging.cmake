# The Debian package: `cpack -G DEB` in the build directory makes
# mayura_VERSION_ARCH.deb holding what `cmake --install` puts under /usr:
# mayurad, mayura-run, the libraries, their headers and CMake package, the
# systemd units, /etc/mayura/mayurad.json (a conffile), and the README and
# docs/ in /usr/share/doc/mayura. Its maintainer
# scripts (tools/dist/debian) make the group mayura and, where systemd runs,
# enable mayurad.socket.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mayura)
set(CPACK_PACKAGE_VENDOR mayura)
set(CPACK_PACKAGE_CONTACT "mayura maintainers <mayura@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Linux sandboxes straight from kernel primitives, and the mayurad service")
set(CPACK_PACKAGE_DESCRIPTION
  "mayura gives an agent an isolated Linux machine built from namespaces, cgroups, seccomp and nftables, with no container runtime underneath. This package holds mayura-run (a command in a sandbox), mayurad (the engine kept warm behind HTTP on /run/mayura/mayurad.sock, socket-activated by systemd) and the C++ library with its headers and CMake package.")
# The package's paths are /usr's (and /etc's), whatever prefix the build was
# configured with: cpack installs with the prefix /usr into DESTDIR (its
# staging folder), so that tools/dist/install.cmake sees the prefix the
# package installs to (ExecStart=/usr/bin/mayurad, /etc/mayura).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The libraries the binaries link, found by dpkg-shlibdeps (dpkg-dev), and
# groupadd for postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
# A sandbox's desktop runs the host's Xvfb (without it, a create asking
# for a desktop fails, saying so).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "xvfb")
# What a C++ host building against the library needs (mayuraConfig.cmake's
# find_dependency calls).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
  "g++, cmake, pkg-config, libboost1.81-dev, nlohmann-json3-dev, libarchive-dev, libssl-dev, libseccomp-dev, libcap-dev, libnl-3-dev, libnl-route-3-dev, libnftables-dev, libext2fs-dev")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/tools/dist/debian/postinst
  ${PROJECT_SOURCE_DIR}/tools/dist/debian/prerm
  ${PROJECT_SOURCE_DIR}/tools/dist/debian/postrm
  ${PROJECT_SOURCE_DIR}/tools/dist/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
