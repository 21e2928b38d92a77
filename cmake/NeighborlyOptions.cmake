# Compiler flags for Neighborly's own targets. Third-party and generated code
# (protobuf/gRPC stubs) does not get -Werror.

add_library(neighborly_warnings INTERFACE)
target_compile_options(neighborly_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wno-unused-parameter)
if(NEIGHBORLY_WERROR)
  target_compile_options(neighborly_warnings INTERFACE -Werror)
endif()

if(NEIGHBORLY_SANITIZE)
  add_compile_options(-fsanitize=${NEIGHBORLY_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${NEIGHBORLY_SANITIZE})
endif()

add_compile_definitions(NEIGHBORLY_VERSION="${PROJECT_VERSION}")

# neighborly_add_test(NAME src... LIBS libs...): a GoogleTest binary registered with CTest.
function(neighborly_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} neighborly_warnings GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    NEIGHBORLY_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    NEIGHBORLY_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(ARG_PROPERTIES)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${ARG_PROPERTIES})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
