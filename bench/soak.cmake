# Load and soak generator: simulated nodes streaming over gRPC plus a
# scheduler-like HTTP client against the real extender (docs/performance.md,
# "Load and soak").
if(TARGET neighborly_proto)
  add_executable(soak_load ${CMAKE_CURRENT_LIST_DIR}/soak_load.cc)
  target_link_libraries(soak_load PRIVATE neighborly_proto neighborly_common neighborly_malloc PkgConfig::HTTPLIB absl::strings
    absl::str_format absl::time neighborly_warnings)
  target_include_directories(soak_load PRIVATE ${PROJECT_SOURCE_DIR})
endif()
