# Decision-core benchmarks: the model alone and ExtenderCore without HTTP
# (docs/performance.md has the numbers and commands).
if(TARGET neighborly_core)
  add_executable(model_bench ${CMAKE_CURRENT_LIST_DIR}/model_bench.cc)
  target_link_libraries(model_bench PRIVATE neighborly_core benchmark::benchmark
    absl::str_format neighborly_warnings)
endif()
if(TARGET neighborly_ingest)
  add_executable(ingest_bench ${CMAKE_CURRENT_LIST_DIR}/ingest_bench.cc)
  target_link_libraries(ingest_bench PRIVATE neighborly_ingest neighborly_core
    benchmark::benchmark absl::str_format neighborly_malloc neighborly_warnings)
endif()
