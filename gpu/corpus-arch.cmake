# Optional, for gpu/apps.sh with CORPUS_ARCH=<list> (e.g. 90): the samples' CMakeLists set
# CMAKE_CUDA_ARCHITECTURES to nine architectures (75 ... 120) as a normal variable after
# project(), which hides a -DCMAKE_CUDA_ARCHITECTURES=90 given on the command line. Included
# through CMAKE_PROJECT_INCLUDE (right after the sample's project()), this defers a call to
# the end of the sample's CMakeLists that sets every target's CUDA_ARCHITECTURES to
# IVCUDA_CUDA_ARCHITECTURES. Nothing else of the build changes; the sample's custom fatbin
# commands (simpleDrvRuntime, vectorAddMMAP) keep their nine architectures.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ivcuda_set_cuda_architectures)

function(_ivcuda_set_cuda_architectures)
    get_property(targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
        get_target_property(type ${target} TYPE)
        if(NOT type STREQUAL "UTILITY")
            set_property(TARGET ${target} PROPERTY CUDA_ARCHITECTURES ${IVCUDA_CUDA_ARCHITECTURES})
        endif()
    endforeach()
    message(STATUS "ivcuda: CUDA_ARCHITECTURES=${IVCUDA_CUDA_ARCHITECTURES} for ${targets}")
endfunction()
