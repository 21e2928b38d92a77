# Peak memory of the real extender for the largest legitimate request: 5,000
# full Nodes (docs/performance.md, "Memory bound").
if(TARGET neighborly_proto AND TARGET neighborly_core)
  add_executable(memory_bound ${CMAKE_CURRENT_LIST_DIR}/memory_bound.cc)
  target_link_libraries(memory_bound PRIVATE neighborly_proto neighborly_core
    neighborly_test_support PkgConfig::HTTPLIB absl::strings absl::str_format neighborly_warnings)
  target_include_directories(memory_bound PRIVATE ${PROJECT_SOURCE_DIR})
  add_dependencies(memory_bound neighborly-extender)
  target_compile_definitions(memory_bound PRIVATE
    NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")
endif()
