# What `cmake --install` puts where, in three components (the Debian packages of
# cmake/packaging.cmake): runtime (libcorvid.so.*), dev (headers, libcorvid.a, the libcorvid.so
# link, the CMake package, corvid.pc) and tools (corvid-schema, the `corvid` command).
# A build makes the shared library (BUILD_SHARED_LIBS=ON) or the static one, or both
# (BUILD_SHARED_LIBS=ON with CORVID_ALSO_STATIC=ON, as the Debian packages are built).
include(CMakePackageConfigHelpers)
if(BUILD_SHARED_LIBS)
  set(corvid_kind shared)
else()
  set(corvid_kind static)
endif()
set_target_properties(corvid PROPERTIES EXPORT_NAME corvid_${corvid_kind})
set(corvid_libraries corvid)
if(TARGET corvid_static)
  list(APPEND corvid_libraries corvid_static)
endif()
set(corvid_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/corvid)

install(DIRECTORY include/corvid DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(TARGETS ${corvid_libraries} EXPORT corvid-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(EXPORT corvid-targets NAMESPACE corvid:: FILE corvid-targets.cmake
        DESTINATION ${corvid_cmake_dir} COMPONENT dev)
configure_package_config_file(cmake/corvid-config.cmake.in
        ${CMAKE_CURRENT_BINARY_DIR}/corvid-config.cmake INSTALL_DESTINATION ${corvid_cmake_dir})
# Before 1.0 a minor release may break the ABI: find_package(corvid 0.1) takes 0.1.x only.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/corvid-config-version.cmake
        COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corvid-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/corvid-config-version.cmake
        DESTINATION ${corvid_cmake_dir} COMPONENT dev)

# pkg-config. corvid.pc links libcorvid.so where it is installed (`-lcorvid`: the linker takes
# the .so over the .a in one directory), else libcorvid.a, for which `--static` adds the private
# libraries; corvid-static.pc always links libcorvid.a. A .pc file cannot do both with one
# name: `--static` only appends Libs.private to Libs, so with both libraries installed
# `-lcorvid` resolves to the .so. The files find their prefix from their own place
# (${pcfiledir}), so a prefix can be moved.
file(RELATIVE_PATH corvid_pc_to_prefix "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig"
     "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" corvid_pc_to_prefix "${corvid_pc_to_prefix}")
set(corvid_pc_requires "libssl libcrypto libcares libzstd")
if(CORVID_HAS_IBVERBS)
  string(APPEND corvid_pc_requires " libibverbs")
endif()
# libcurl by name, not through libcurl.pc: its Libs.private lists every optional protocol
# library curl was built with, whose -dev packages a program linking libcurl.so never needs.
set(corvid_pc_libs "-lcurl -pthread")
get_target_property(corvid_defs corvid INTERFACE_COMPILE_DEFINITIONS)
set(corvid_pc_cflags "-pthread")
foreach(def IN LISTS corvid_defs)
  string(APPEND corvid_pc_cflags " -D${def}")
endforeach()
configure_file(cmake/corvid.pc.in ${CMAKE_CURRENT_BINARY_DIR}/corvid.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corvid.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
if(NOT BUILD_SHARED_LIBS OR TARGET corvid_static)
  configure_file(cmake/corvid-static.pc.in ${CMAKE_CURRENT_BINARY_DIR}/corvid-static.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corvid-static.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endif()

# The `corvid` command (python/corvid/cli.py) for the tools component: the pure-Python client
# package where Debian keeps python3 modules, and a launcher that finds it from its own place.
# Its _version.py reads VERSION from the source tree; the installed one holds the constant,
# as the wheel's does.
install(DIRECTORY python/corvid DESTINATION lib/python3/dist-packages COMPONENT tools
        PATTERN "__pycache__" EXCLUDE PATTERN "_version.py" EXCLUDE)
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/python/_version.py
     CONTENT "\"\"\"Written by CMake (cmake/install.cmake) from VERSION.\"\"\"\n\n__version__ = \"@PROJECT_VERSION@\"\n"
     @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/python/_version.py
        DESTINATION lib/python3/dist-packages/corvid COMPONENT tools)
install(PROGRAMS tools/corvid-command/corvid DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
