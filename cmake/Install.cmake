# `cmake --install` lays out include/recur/{core,autodiff,ops,distributed,recur.hpp}, the library
# and a package config, so that other projects can `find_package(recur)`. Internal
# headers (`*_detail.hpp`, included only by recur's own .cpp files) are not installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
foreach(layer core autodiff ops)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/recur/${layer}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*_detail.hpp" EXCLUDE)
endforeach()
install(FILES ${RECUR_INCLUDE_DIR}/recur/recur.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/recur)
if(RECUR_WITH_DISTRIBUTED)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/distributed/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/recur/distributed
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*_detail.hpp" EXCLUDE)
endif()
set(RECUR_INSTALLED_TARGETS recur)
if(RECUR_WITH_DISTRIBUTED)
  list(APPEND RECUR_INSTALLED_TARGETS recur_distributed)
endif()
if(RECUR_ONNX_FOUND)
  list(APPEND RECUR_INSTALLED_TARGETS recur_onnx)
endif()
install(TARGETS ${RECUR_INSTALLED_TARGETS} EXPORT recurTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT recurTargets NAMESPACE recur:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/recur)
configure_package_config_file(cmake/recurConfig.cmake.in ${PROJECT_BINARY_DIR}/recurConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/recur)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/recurConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/recurConfig.cmake ${PROJECT_BINARY_DIR}/recurConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/recurZip.cmake ${PROJECT_SOURCE_DIR}/cmake/recurXsmm.cmake
              ${PROJECT_SOURCE_DIR}/cmake/recurOnednn.cmake ${PROJECT_SOURCE_DIR}/cmake/recurOpenblasOpenmp.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/recur)

# pkg-config (recur.pc): the core library for a Makefile or any build without CMake. recur is a
# static library, so Libs lists what it links besides (libxsmm and oneDNN when built with
# them, then the BLAS, libzip, threads; OpenBLAS's OpenMP build by its directory, also as the
# run path, as CMake's programs get it). The prefix is found from the .pc file's own place: the install moves.
file(RELATIVE_PATH RECUR_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
set(RECUR_PC_LIBS "")
if(RECUR_WITH_XSMM)
  set(RECUR_PC_LIBS "-lxsmm")
endif()
if(RECUR_WITH_DNNL)
  string(APPEND RECUR_PC_LIBS " -ldnnl")
endif()
foreach(lib IN LISTS BLAS_LIBRARIES)  # the BLAS found at build time, by name (-lopenblas)
  get_filename_component(dir "${lib}" DIRECTORY)
  if(dir MATCHES "/openblas-openmp$")
    string(APPEND RECUR_PC_LIBS " -L${dir} -Wl,-rpath,${dir}")
  endif()
  get_filename_component(name "${lib}" NAME_WE)
  string(REGEX REPLACE "^lib" "" name "${name}")
  string(APPEND RECUR_PC_LIBS " -l${name}")
endforeach()
configure_file(cmake/recur.pc.in ${PROJECT_BINARY_DIR}/recur.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/recur.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
