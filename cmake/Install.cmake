# `cmake --install` lays out include/recur/{core,autodiff,ops,distributed,recur.hpp}, the library
# and a package config, so that other projects can `find_package(recur)`. Internal
# headers (`*_detail.hpp`, included only by recur's own .cpp files) are not installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
foreach(layer core autodiff ops)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/recur/${layer}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*_detail.hpp" EXCLUDE)
endforeach()
install(FILES ${RECUR_INCLUDE_DIR}/recur/recur.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/recur)
if(RECUR_WITH_DISTRIBUTED)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/distributed/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/recur/distributed
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
configure_package_config_file(cmake/recurConfig.cmake.in ${CMAKE_BINARY_DIR}/recurConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/recur)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/recurConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/recurConfig.cmake ${CMAKE_BINARY_DIR}/recurConfigVersion.cmake
              ${CMAKE_SOURCE_DIR}/cmake/recurZip.cmake ${CMAKE_SOURCE_DIR}/cmake/recurXsmm.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/recur)
