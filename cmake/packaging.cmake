# Debian packages through CPack (`cpack -G DEB` in a build configured with
# CMAKE_INSTALL_PREFIX=/usr), one per install component of cmake/install.cmake:
#   libcorvid<SOVERSION>  the shared library (named after its SONAME, as Debian's policy asks)
#   libcorvid-dev         headers, libcorvid.a, the libcorvid.so link, CMake package, corvid.pc
#   corvid-tools          corvid-schema and the `corvid` command
# scripts/check-install packages a build with BUILD_SHARED_LIBS=ON and CORVID_ALSO_STATIC=ON,
# so libcorvid-dev carries both libraries.
set(corvid_soversion ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME corvid)
set(CPACK_PACKAGE_VENDOR "corvid developers")
set(CORVID_PACKAGE_MAINTAINER "corvid developers <corvid@lists.corvid-rpc.org>"
    CACHE STRING "The Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT ${CORVID_PACKAGE_MAINTAINER})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "C++20 coroutine RPC over TCP, TLS, Unix sockets and RDMA")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libcorvid${corvid_soversion})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # DEBIAN/shlibs: what dpkg-shlibdeps of users reads
# ldconfig through dpkg's trigger, as Debian's policy asks (CPack's default postinst and postrm
# call ldconfig themselves; giving our own scripts turns those off).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/triggers
    ${PROJECT_SOURCE_DIR}/cmake/debian/postinst ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "C++20 coroutine RPC library (shared library)\n corvid calls functions across processes and hosts with C++20 coroutines:\n pipelining, coalescing of small messages, connection pools, balancing,\n deadlines, streams and memory limits, over TCP, TLS, Unix sockets and RDMA.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libcorvid-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
string(JOIN ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
       "libcorvid${corvid_soversion} (= ${PROJECT_VERSION}-1)"
       "libasio-dev" "libboost1.81-dev | libboost-dev (>= 1.81)" "libssl-dev (>= 3)"
       "libcurl4-openssl-dev | libcurl-dev" "libc-ares-dev" "libzstd-dev" "libibverbs-dev" "pkg-config")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "C++20 coroutine RPC library (development files)\n Headers, the static library, the CMake package (find_package(corvid)) and\n the pkg-config files (corvid, corvid-static) of corvid.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME corvid-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3 (>= 3.11)")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
    "command-line tools for corvid RPC servers\n corvid lists, describes and calls the methods of a running server (from\n its reflection or a schema file); corvid-schema tells a compatible schema\n change from a breaking one.")

# Every package carries /usr/share/doc/<package>/copyright and changelog.Debian.gz.
string(TIMESTAMP corvid_changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # SOURCE_DATE_EPOCH wins
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.Debian CONTENT
"corvid (${PROJECT_VERSION}-1) unstable; urgency=medium

  * Built with CPack from the corvid source tree (cmake/packaging.cmake).

 -- ${CORVID_PACKAGE_MAINTAINER}  ${corvid_changelog_date}
")
execute_process(COMMAND gzip -9 -n -c ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.Debian
                OUTPUT_FILE ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.Debian.gz
                COMMAND_ERROR_IS_FATAL ANY)
foreach(component runtime dev tools)
  string(TOUPPER ${component} upper)
  set(doc ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/copyright
                ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.Debian.gz
          DESTINATION ${doc} COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()
include(CPack)
