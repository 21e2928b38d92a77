# neighborlyctl: the operator CLI. Included by CMakeLists.txt when main.cc exists.
add_library(neighborlyctl_lib STATIC
  ${CMAKE_CURRENT_LIST_DIR}/api_client.cc
  ${CMAKE_CURRENT_LIST_DIR}/cli.cc
  ${CMAKE_CURRENT_LIST_DIR}/render.cc
  ${CMAKE_CURRENT_LIST_DIR}/yaml_render.cc)
target_include_directories(neighborlyctl_lib PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(neighborlyctl_lib
  PUBLIC neighborly_common absl::status absl::statusor absl::strings absl::time
  PRIVATE nlohmann_json::nlohmann_json PkgConfig::HTTPLIB Threads::Threads neighborly_warnings)

add_executable(neighborlyctl ${CMAKE_CURRENT_LIST_DIR}/main.cc)
target_link_libraries(neighborlyctl PRIVATE neighborlyctl_lib neighborly_warnings)

neighborly_add_test(neighborlyctl_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/render_test.cc ${CMAKE_CURRENT_LIST_DIR}/cli_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/yaml_render_test.cc ${CMAKE_CURRENT_LIST_DIR}/isolation_render_test.cc
  LIBS neighborlyctl_lib nlohmann_json::nlohmann_json PkgConfig::HTTPLIB Threads::Threads yaml-cpp)
