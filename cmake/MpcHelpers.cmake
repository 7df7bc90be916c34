# Shared build settings for every mpc target: warnings, -Werror in CI,
# sanitizers, and the include root (includes carry their layer prefix:
# #include "ir/Graph.h").
function(mpc_apply_settings target)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wswitch -Wimplicit-fallthrough>)
  if(MPC_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  if(MPC_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${MPC_SANITIZE} -fno-omit-frame-pointer>)
    target_link_options(${target} PRIVATE -fsanitize=${MPC_SANITIZE})
  endif()
  if(MPC_BUILD_FUZZERS)
    # Coverage feedback for libFuzzer from every library, not just the targets.
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  endif()
  if(MPC_EXPENSIVE_CHECKS)
    target_compile_definitions(${target} PRIVATE MPC_EXPENSIVE_CHECKS=1)
  endif()
endfunction()

# mpc_add_library(name SOURCES... [DEPS targets...])
function(mpc_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  mpc_apply_settings(${name})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# Links the allocator chosen by MPC_ALLOCATOR (the root CMakeLists.txt) into
# a program: jemalloc and its settings (support/JemallocConf.cpp), or
# nothing for the system malloc. Linked into the executable, jemalloc's
# malloc and free take the place of glibc's for the whole process, modules
# loaded later (the CUDA backend) included.
function(mpc_use_allocator target)
  if(MPC_JEMALLOC)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/support/JemallocConf.cpp)
    target_link_libraries(${target} PRIVATE ${MPC_JEMALLOC})
  endif()
endfunction()
