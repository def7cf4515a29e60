# Per-generator CPack settings (CPACK_PROJECT_CONFIG_FILE, read by cpack for
# each generator). The .deb holds the program only (component `main`, one
# package): dpkg-shlibdeps names the Debian runtime packages of its libraries
# in Depends. The .tar.gz carries the libraries beside it (component
# `bundled`, see CMakeLists.txt).
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_DEB_COMPONENT_INSTALL ON)
  set(CPACK_COMPONENTS_ALL main)
  set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
endif()
