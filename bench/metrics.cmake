# /metrics rendering through the one Prometheus writer, per-node series on and
# off (docs/performance.md, "/metrics").
if(TARGET neighborly_api)
  add_executable(metrics_bench ${CMAKE_CURRENT_LIST_DIR}/metrics_bench.cc)
  target_link_libraries(metrics_bench PRIVATE neighborly_api benchmark::benchmark
    absl::strings neighborly_warnings)
endif()
