# Makes <DIR>/<SONAME> a symlink to liblodtensor.so, touching nothing when it already is one.
#
#   cmake -DDIR=<cargo target dir>/release -DSONAME=liblodtensor.so.<major> -P soname_link.cmake
#
# Run after every cargo build. `cmake -E create_symlink` would delete and re-create the link
# each time, and a test program starting at that instant (ctest -j, where install_consumer
# re-runs this build) would fail to load the library.
if(IS_SYMLINK "${DIR}/${SONAME}")
  file(READ_SYMLINK "${DIR}/${SONAME}" current)
  if(current STREQUAL "liblodtensor.so")
    return()
  endif()
endif()
file(REMOVE "${DIR}/${SONAME}")
file(CREATE_LINK "liblodtensor.so" "${DIR}/${SONAME}" SYMBOLIC)
