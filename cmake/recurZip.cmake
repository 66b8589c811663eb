# libzip (it reads and writes recur's .npz archives) as the imported target recur::zip.
# Included by recur's own build and, installed next to recurConfig.cmake, by the package
# config, so that a consumer finds libzip again on its own machine instead of inheriting the
# build machine's path. Found by hand, not with find_package(libzip): Debian's
# libzip-config.cmake also imports the zipcmp/zipmerge/ziptool programs and fails when those
# packages are not installed.
if(NOT TARGET recur::zip)
  find_path(RECUR_ZIP_INCLUDE_DIR zip.h REQUIRED)
  find_library(RECUR_ZIP_LIBRARY NAMES zip REQUIRED)
  add_library(recur::zip UNKNOWN IMPORTED)
  set_target_properties(recur::zip PROPERTIES IMPORTED_LOCATION "${RECUR_ZIP_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${RECUR_ZIP_INCLUDE_DIR}")
endif()
