# Fuzz targets (fuzz/, docs/fuzzing.md). Every target is one
# LLVMFuzzerTestOneInput; how it is linked depends on the compiler:
#
# - NEIGHBORLY_FUZZ_ENGINE=libfuzzer (the `fuzz` preset, clang): linked with
#   -fsanitize=fuzzer, so the binary is a libFuzzer fuzzer (`make fuzz`).
# - otherwise (gcc presets `default`, `asan`): linked with a small driver
#   (fuzz/standalone_main.cc) that runs each input file once, so the seeds and
#   the crash regressions replay as CTest tests (label `fuzz`, `make fuzz-smoke`)
#   in every build, sanitized ones included.
#
#   neighborly_add_fuzzer(cpu_list_fuzzer SOURCES targets/cpu_list_fuzzer.cc
#                         LIBS neighborly_common)
#
# The smoke test replays <build>/fuzz/seeds/<target>/ (written by
# fuzz/seed_corpus.py before the smoke tests run) and fuzz/regressions/<target>/.

set(NEIGHBORLY_FUZZ_ENGINE "standalone" CACHE STRING
    "How fuzz targets are linked: libfuzzer (clang) or standalone (replay driver)")
set_property(CACHE NEIGHBORLY_FUZZ_ENGINE PROPERTY STRINGS standalone libfuzzer)

if(NEIGHBORLY_FUZZ_ENGINE STREQUAL "libfuzzer" AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "NEIGHBORLY_FUZZ_ENGINE=libfuzzer needs clang (cmake --preset fuzz)")
endif()

if(NOT TARGET neighborly_fuzzers)
  add_custom_target(neighborly_fuzzers)
endif()
if(NOT NEIGHBORLY_FUZZ_ENGINE STREQUAL "libfuzzer" AND NOT TARGET neighborly_fuzz_standalone)
  # Compiled once; the linker takes main() from the archive.
  add_library(neighborly_fuzz_standalone STATIC ${PROJECT_SOURCE_DIR}/fuzz/standalone_main.cc)
  target_link_libraries(neighborly_fuzz_standalone PRIVATE neighborly_warnings)
endif()

function(neighborly_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  if(NEIGHBORLY_FUZZ_ENGINE STREQUAL "libfuzzer")
    add_executable(${name} ${ARG_SOURCES})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(${name} ${ARG_SOURCES})
    target_link_libraries(${name} PRIVATE neighborly_fuzz_standalone)
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} neighborly_warnings)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  add_dependencies(neighborly_fuzzers ${name})

  # Replays seeds and regressions once each (-runs=0: libFuzzer runs the given
  # corpus and stops; the standalone driver ignores dash options).
  # A target's regressions folder exists once it has a crash (`make` reruns
  # the configure step, which picks a new one up).
  set(inputs ${NEIGHBORLY_FUZZ_SEED_DIR}/${name})
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/fuzz/regressions/${name})
    list(APPEND inputs ${PROJECT_SOURCE_DIR}/fuzz/regressions/${name})
  endif()
  add_test(NAME fuzz_smoke_${name} COMMAND ${name} -runs=0 ${inputs})
  set_tests_properties(fuzz_smoke_${name} PROPERTIES
    LABELS fuzz FIXTURES_REQUIRED neighborly_fuzz_seeds TIMEOUT 120)
endfunction()
