# HTTP extender benchmarks (docs/performance.md has the numbers and commands).
# Linked with the allocator the extender binary uses (neighborly_malloc).
if(TARGET neighborly_http AND TARGET neighborly_core)
  add_executable(http_codec_bench ${CMAKE_CURRENT_LIST_DIR}/http_codec_bench.cc)
  target_link_libraries(http_codec_bench PRIVATE neighborly_http neighborly_core
    simdjson::simdjson benchmark::benchmark absl::str_format neighborly_malloc neighborly_warnings)
  add_executable(http_roundtrip_bench ${CMAKE_CURRENT_LIST_DIR}/http_roundtrip_bench.cc)
  target_link_libraries(http_roundtrip_bench PRIVATE neighborly_http neighborly_core
    benchmark::benchmark absl::str_format neighborly_malloc neighborly_warnings)
  add_executable(slow_clients_bench ${CMAKE_CURRENT_LIST_DIR}/slow_clients_bench.cc)
  target_link_libraries(slow_clients_bench PRIVATE neighborly_http neighborly_core
    neighborly_test_pki OpenSSL::SSL absl::str_format neighborly_malloc neighborly_warnings)
endif()
