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
