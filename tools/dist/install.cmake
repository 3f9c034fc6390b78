# Installs the systemd units and the default config; run at install time
# (install(SCRIPT)), when the prefix is known: `cmake --install --prefix P`
# gives P, the Debian package /usr. The caller sets MAYURA_DIST (this
# folder), MAYURA_BINDIR, MAYURA_UNITDIR (under the prefix unless absolute)
# and MAYURA_STAGING (a folder of the build for the unit as configured).

# The service names mayurad where this install puts it.
if(IS_ABSOLUTE "${MAYURA_BINDIR}")
  set(MAYURAD_PATH "${MAYURA_BINDIR}/mayurad")
else()
  set(MAYURAD_PATH "${CMAKE_INSTALL_PREFIX}/${MAYURA_BINDIR}/mayurad")
endif()
# One staging file per destination, so that two installs at once (a package
# and a prefix) never take each other's unit.
string(MD5 where "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
configure_file("${MAYURA_DIST}/mayurad.service.in" "${MAYURA_STAGING}/${where}/mayurad.service" @ONLY)

if(IS_ABSOLUTE "${MAYURA_UNITDIR}")
  set(units "${MAYURA_UNITDIR}")
else()
  set(units "${CMAKE_INSTALL_PREFIX}/${MAYURA_UNITDIR}")
endif()
file(INSTALL DESTINATION "${units}" TYPE FILE
  FILES "${MAYURA_STAGING}/${where}/mayurad.service" "${MAYURA_DIST}/mayurad.socket")

# mayurad reads /etc/mayura/mayurad.json: there for a /usr prefix (the
# package, where it is a conffile), under any other prefix in PREFIX/etc, as
# GNUInstallDirs places a sysconfdir, so that installing into a prefix never
# writes the host's /etc.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/")
  set(etc /etc)
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/etc")
endif()
file(INSTALL DESTINATION "${etc}/mayura" TYPE FILE FILES "${MAYURA_DIST}/mayurad.json")
