# Every dependency comes from Debian 12 packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(absl REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(spdlog REQUIRED)
find_package(simdjson REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(GTest REQUIRED)
if(NEIGHBORLY_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

find_library(PFM_LIBRARY pfm REQUIRED)
find_path(PFM_INCLUDE_DIR perfmon/pfmlib.h REQUIRED)
add_library(neighborly::pfm UNKNOWN IMPORTED)
set_target_properties(neighborly::pfm PROPERTIES IMPORTED_LOCATION ${PFM_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${PFM_INCLUDE_DIR})

find_library(PQOS_LIBRARY pqos PATHS /usr/lib REQUIRED)
find_path(PQOS_INCLUDE_DIR pqos.h REQUIRED)
add_library(neighborly::pqos UNKNOWN IMPORTED)
set_target_properties(neighborly::pqos PROPERTIES IMPORTED_LOCATION ${PQOS_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${PQOS_INCLUDE_DIR})

find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)

# jemalloc for neighborly-extender: ingest parses and frees thousands of 50-pod
# reports per second on gRPC's threads while the HTTP workers allocate too;
# glibc malloc spent a third of ingest's CPU in malloc_consolidate and chunk
# unlinking there (docs/performance.md, "Load and soak"). Off under
# sanitizers, which bring their own allocator.
if(NEIGHBORLY_SANITIZE OR CMAKE_CXX_FLAGS MATCHES "fsanitize")
  set(_neighborly_jemalloc_default OFF)
else()
  set(_neighborly_jemalloc_default ON)
endif()
option(NEIGHBORLY_JEMALLOC "Link neighborly-extender with jemalloc" ${_neighborly_jemalloc_default})
add_library(neighborly_malloc INTERFACE)
if(NEIGHBORLY_JEMALLOC)
  find_library(JEMALLOC_LIBRARY jemalloc REQUIRED)
  target_link_libraries(neighborly_malloc INTERFACE ${JEMALLOC_LIBRARY})
endif()
